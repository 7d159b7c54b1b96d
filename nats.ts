/**
 * The NATS JetStream KV backend of splitlease, reached over WebSocket
 * (`ws://`, `wss://`; every platform) or, with the TCP transport of
 * `@splitlease/splitlease/nats/tcp`, over the client port (`nats://`,
 * `tls://`; Node, Bun and Deno).
 *
 * @example
 * ```ts
 * import { NatsStore } from "@splitlease/splitlease/nats";
 * const store = await NatsStore.connect({ servers: ["ws://127.0.0.1:8080"], job: "backfill" });
 * await store.close();
 * ```
 *
 * @example
 * ```ts
 * import { NatsStore } from "@splitlease/splitlease/nats";
 * import { tcpTransport } from "@splitlease/splitlease/nats/tcp";
 * const store = await NatsStore.connect({ servers: "nats://127.0.0.1:4222", job: "backfill", transport: tcpTransport() });
 * await store.close();
 * ```
 *
 * @module
 */
export { NatsStore } from "./src/nats/nats_store.ts";
export { NatsJobCatalog, type NatsJobCatalogOptions } from "./src/nats/nats_jobs.ts";
export type { NatsStoreOptions, WebSocketFactory } from "./src/nats/options.ts";
export type { NatsTransport } from "./src/nats/transport.ts";
export type { Logger } from "./src/util/logger.ts";
export type {
  DeleteResult,
  KeyFilter,
  Store,
  StoreEntry,
  Watch,
  WatchEvent,
  WriteResult,
} from "./src/store/store.ts";
