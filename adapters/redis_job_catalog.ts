/**
 * The jobs of a Redis server as the operator's commands see them
 * (`RedisJobCatalog`, over the driver-independent `RedisJobCatalogCore`):
 * one connection, no job opened. Apart from the store (redis.ts) because it
 * opens no job and needs none of the store's options.
 *
 * @module
 */
import { invalidRedis, resolveRedisOptions } from "../src/redis/options.ts";
import { RedisJobCatalogCore } from "../src/redis/redis_catalog.ts";
import { checkUrl, nodeRedisClient, serverOf } from "./node_redis_client.ts";


/**
 * Options of {@linkcode RedisJobCatalog.connect}.
 *
 * @example
 * ```ts
 * import type { RedisJobCatalogOptions } from "@splitlease/splitlease/redis";
 * const options: RedisJobCatalogOptions = { url: "redis://ops@cache.internal:6379", opTimeoutMs: 3000 };
 * ```
 */
export interface RedisJobCatalogOptions {
  /** `redis://` or `rediss://` URL. */
  url: string;
  /** The jobs' key prefix (default `splitlease:`). */
  keyPrefix?: string;
  /** Bound of each command, and of reaching the server (default 5000). */
  opTimeoutMs?: number;
  /** The connection's name (default `splitlease:catalog`). */
  clientName?: string;
  /** TLS options for `rediss://`. */
  tls?: Record<string, unknown>;
}

/**
 * The jobs of a Redis server under one key prefix (`JobCatalog`, as
 * `splitlease jobs` and `splitlease delete` use it): each job's records
 * and the memory its keys take, and the removal of a job's keys.
 *
 * @example
 * ```ts
 * import { RedisJobCatalog } from "@splitlease/splitlease/redis";
 * import { listJobs } from "@splitlease/splitlease/admin";
 * await using catalog = await RedisJobCatalog.connect({ url: "redis://127.0.0.1:6379" });
 * for (const j of await listJobs(catalog)) console.log(j.job, j.state);
 * ```
 */
export class RedisJobCatalog extends RedisJobCatalogCore {
  /**
   * Opens a connection (`STORE_AUTH_FAILED` when the server refuses the
   * credentials, `StoreUnavailableError` when it cannot be reached,
   * `INVALID_CONFIG` for bad options).
   *
   * @example
   * ```ts
   * import { RedisJobCatalog } from "@splitlease/splitlease/redis";
   * const catalog = await RedisJobCatalog.connect({ url: "redis://127.0.0.1:6379" });
   * console.log((await catalog.list()).map((j) => j.job));
   * await catalog.close();
   * ```
   */
  static async connect(options: RedisJobCatalogOptions): Promise<RedisJobCatalog> {
    const { url, keyPrefix, opTimeoutMs, clientName, tls, ...rest } = options;
    if (Object.keys(rest).length > 0) throw invalidRedis(`unknown option ${Object.keys(rest).join(", ")} of RedisJobCatalog.connect`);
    const o = resolveRedisOptions({ job: "catalog", ...(keyPrefix === undefined ? {} : { keyPrefix }), ...(opTimeoutMs === undefined ? {} : { opTimeoutMs }) });
    const u = checkUrl(url);
    const client = await nodeRedisClient({ url: u, clientName: clientName ?? "splitlease:catalog", ...(tls ? { tls } : {}), connectWaitMs: o.opTimeoutMs });
    return new RedisJobCatalog({ client, keyPrefix: o.keyPrefix, opTimeoutMs: o.opTimeoutMs, server: serverOf(u) });
  }
}