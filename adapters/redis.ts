/**
 * The Redis backend of splitlease: coordinate through the Redis you already
 * run (a BullMQ shop's, for one). {@linkcode RedisStore} implements the
 * store with one server-side script per write (compare-and-swap on the
 * key's revision, the job's next revision, the value and a change-log
 * entry, atomically) and watches that read the change log by revision, so
 * they resume across disconnects and never depend on keyspace
 * notifications. At connect it reads the server's persistence and
 * replication and refuses a server under which an acknowledged write can
 * be lost on a restart unless the weaker mode is accepted by name
 * (`durability`); on a primary with replicas each write waits for them
 * (`WAIT`).
 *
 * The driver is node-redis (`@redis/client`): no dependencies of its own,
 * the same code on Node, Bun and Deno, maintained by Redis, and a command
 * timeout that tells a command never sent (it cannot have run) from one
 * sent and unanswered (it may have); commands in flight on a lost
 * connection fail and are never sent again.
 *
 * @example
 * ```ts
 * import { RedisStore } from "@splitlease/splitlease/redis";
 * await using store = await RedisStore.connect({ url: "redis://127.0.0.1:6379", job: "backfill" });
 * console.log(store.durability, await store.list("split."));
 * ```
 *
 * @module
 */
import { jsonLogger } from "../src/util/logger.ts";
import { durationIssue } from "../src/util/timers.ts";
import { invalidRedis, type RedisStoreCoreOptions, resolveRedisOptions } from "../src/redis/options.ts";
import { RedisKvStore } from "../src/redis/redis_kv_store.ts";
import { openRedisJob } from "../src/redis/setup.ts";
import { checkUrl, nodeRedisClient, serverOf } from "./node_redis_client.ts";

export { RedisKvStore, type RedisStoreInit } from "../src/redis/redis_kv_store.ts";
export { RedisJobCatalogCore, type RedisJobCatalogInit } from "../src/redis/redis_catalog.ts";
export { RedisCallError, type RedisClient, type RedisFailure, type RedisReply } from "../src/redis/redis_client.ts";
export type { RedisDurability, RedisStoreCoreOptions, ResolvedRedisOptions } from "../src/redis/options.ts";
export type { DurabilityMode } from "../src/redis/durability.ts";
export type { CatalogEntry, JobCatalog, JobListing } from "../src/store/job_catalog.ts";
export type { Logger, LogLevel } from "../src/util/logger.ts";
export type { DeleteResult, KeyFilter, Store, StoreEntry, TransactionWork, Watch, WatchEvent, WriteResult } from "../src/store/store.ts";
export { nodeRedisClient, type NodeRedisClientOptions } from "./node_redis_client.ts";
export { RedisJobCatalog, type RedisJobCatalogOptions } from "./redis_job_catalog.ts";

/**
 * Options of {@linkcode RedisStore.connect}: the server's URL and the
 * store's options.
 *
 * @example
 * ```ts
 * import type { RedisStoreOptions } from "@splitlease/splitlease/redis";
 * const options: RedisStoreOptions = { url: "rediss://app:secret@cache.internal:6380", job: "backfill", durability: "everysec" };
 * ```
 */
export interface RedisStoreOptions extends RedisStoreCoreOptions {
  /** `redis://` or `rediss://` (TLS) URL: `redis[s]://[user:password@]host[:port][/db]`. */
  url: string;
  /** How long `connect` keeps trying to reach the server (default `opTimeoutMs`). */
  connectWaitMs?: number;
  /** The connection's name in `CLIENT LIST` (default `splitlease:<job>`). */
  clientName?: string;
  /** TLS options for `rediss://` (a CA of your own: `{ ca }`), passed to Node's `tls.connect`. */
  tls?: Record<string, unknown>;
}

const DRIVER_KEYS = ["url", "connectWaitMs", "clientName", "tls"];

/**
 * {@linkcode RedisKvStore} through node-redis: the store of a job on a Redis
 * server. See docs/OPERATIONS.md, "Redis as the store", for the key
 * layout, the durability modes and replicas.
 *
 * @example
 * ```ts
 * import { RedisStore } from "@splitlease/splitlease/redis";
 * import { MemoryStore } from "@splitlease/splitlease";
 * const url = Deno.env.get("REDIS_URL");
 * const store = url ? await RedisStore.connect({ url, job: "backfill" }) : new MemoryStore();
 * await store.close();
 * ```
 */
export class RedisStore extends RedisKvStore {
  /**
   * Connects, judges the server's persistence and replication against
   * `durability` and opens (or creates) the job. Throws `INVALID_CONFIG`
   * for bad options (an unknown key included), a server weaker than
   * `durability` (the message names its settings, what can be lost, and the
   * fix), a replica, or a missing job with `createJob: false`;
   * `UNSUPPORTED_SERVER` below Redis 5; `STORE_AUTH_FAILED` at once when the
   * server refuses the credentials; `StoreUnavailableError` when it cannot
   * be reached within `connectWaitMs`. Logs the durability mode.
   *
   * @example
   * ```ts
   * import { RedisStore } from "@splitlease/splitlease/redis";
   * const store = await RedisStore.connect({ url: "redis://127.0.0.1:6379", job: "j1", opTimeoutMs: 2000 });
   * console.log(store.durability);
   * await store.close();
   * ```
   */
  static async connect(options: RedisStoreOptions): Promise<RedisStore> {
    const opts = resolveRedisOptions(options, DRIVER_KEYS);
    const url = checkUrl(options.url);
    const wait = options.connectWaitMs ?? opts.opTimeoutMs;
    const issue = durationIssue("connectWaitMs", wait, 1);
    if (issue) throw invalidRedis(issue);
    const logger = options.logger ?? jsonLogger();
    const server = serverOf(url);
    const client = await nodeRedisClient({
      url,
      clientName: options.clientName ?? `splitlease:${opts.job}`,
      ...(options.tls ? { tls: options.tls } : {}),
      connectWaitMs: wait,
      logger,
    });
    try {
      const mode = await openRedisJob(client, opts, server, logger);
      return new RedisStore({ client, options: opts, server, mode, logger });
    } catch (e) {
      await client.close();
      throw e;
    }
  }
}
