/**
 * How a store reaches NATS: the WebSocket transport (the default, Web APIs
 * only, on every platform) or one injected by an entry outside `src/` (the
 * TCP transport of `@splitlease/splitlease/nats/tcp`), and the one rule that
 * holds them apart within one process: one kind at a time.
 *
 * nats-core keeps ONE transport factory for the whole process
 * (`setTransportFactory`, set by every `wsconnect` and every TCP `connect`),
 * and a connection asks it for a new transport at every reconnect
 * (`ProtocolHandler.prepare`). So after a TCP connect, a WebSocket
 * connection that loses its server redials it over raw TCP (the WebSocket
 * port waits for an HTTP request, the client for `INFO`: every attempt times
 * out) and after a WebSocket connect a TCP connection redials a `ws://` URL
 * at its client port; neither ever reconnects, and its server list also
 * takes the other transport's URL form for gossiped cluster URLs. Hence one
 * kind of transport per process while a connection of the other kind is open.
 *
 * @module
 */
import { type ConnectionOptions, type NatsConnection, wsconnect } from "@nats-io/nats-core";
import { SplitleaseError } from "../errors.ts";
import { identifyHttpListener, type NatsListener } from "./listener.ts";

/**
 * A way to reach NATS for `NatsStore.connect` (its `transport` option).
 * splitlease provides two: WebSocket (the default, `ws://`/`wss://` URLs, on
 * every platform) and TCP (`nats://`/`tls://` URLs, Node, Bun and Deno):
 * `tcpTransport()` of `@splitlease/splitlease/nats/tcp`.
 *
 * @example
 * ```ts
 * import { NatsStore, type NatsTransport } from "@splitlease/splitlease/nats";
 * import { tcpTransport } from "@splitlease/splitlease/nats/tcp";
 * const transport: NatsTransport = tcpTransport();
 * const store = await NatsStore.connect({ servers: "nats://127.0.0.1:4222", job: "backfill", transport });
 * await store.close();
 * ```
 */
export interface NatsTransport {
  /** Its name in messages: "WebSocket", "TCP". */
  readonly name: string;
  /** The URL schemes it dials, without "://" (e.g. `["nats", "tls"]`). */
  readonly schemes: readonly string[];
}

/** What a transport does (internal: only splitlease's transports implement it). */
export interface TransportImpl extends NatsTransport {
  /** Opens a nats-core connection with these options. */
  connect(options: ConnectionOptions): Promise<NatsConnection>;
  /**
   * What listens at `url` when it is not this transport's kind of listener
   * (undefined when it may be right or nothing answered); asked when a
   * connection attempt fails or stalls.
   */
  identify(url: string, signal: AbortSignal): Promise<NatsListener | undefined>;
}

/** nats-core's WebSocket transport: the default, and the only one on edge platforms. */
export const webSocketTransport: TransportImpl = {
  name: "WebSocket",
  schemes: ["ws", "wss"],
  connect: (options) => wsconnect(options),
  identify: identifyHttpListener,
};

/** The transport this process's open connections use, and how many there are. */
let inUse: { name: string; servers: string; count: number } | undefined;

/**
 * Takes the process's transport for one connection (to `servers`, shown in
 * messages); returns its release, to call once that connection is closed or
 * failed to open. Throws `INVALID_CONFIG` while connections of the other
 * transport are open (see the module doc: they would break each other).
 *
 * @example
 * ```ts
 * import { claimTransport, webSocketTransport } from "./transport.ts";
 * const release = claimTransport(webSocketTransport, "ws://127.0.0.1:8080");
 * release();
 * ```
 */
export function claimTransport(transport: NatsTransport, servers: string): () => void {
  if (inUse && inUse.count > 0 && inUse.name !== transport.name) {
    throw new SplitleaseError(
      "INVALID_CONFIG",
      `NatsStore: this process already has a NATS connection over ${inUse.name} (${inUse.servers}), so it cannot ` +
        `open one over ${transport.name} (${servers}): nats-core keeps one transport for the whole process, and ` +
        `the new one would take over the open connection's reconnects (it would redial its servers in the wrong ` +
        `protocol and never reconnect). Use one kind of URL in one process: all ws:// and wss://, or all nats:// ` +
        "and tls:// (with the TCP transport); close the other stores first",
    );
  }
  if (!inUse || inUse.count === 0) inUse = { name: transport.name, servers, count: 0 };
  inUse.count++;
  let released = false;
  return () => {
    if (released || !inUse) return;
    released = true;
    inUse.count--;
  };
}
