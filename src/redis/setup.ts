/**
 * Opening a job on a Redis server: its persistence and replication read
 * and judged (`durability.ts`), the job's counter created (or found), the
 * job named in the catalog's set, the mode logged.
 *
 * @module
 */
import { SplitleaseError, StoreUnavailableError } from "../errors.ts";
import type { Logger } from "../util/logger.ts";
import { type DurabilityMode, infoField, judgeDurability, type ServerSettings } from "./durability.ts";
import { invalidRedis, jobKeys, jobsKey, type ResolvedRedisOptions } from "./options.ts";
import { RedisCallError, type RedisClient, type RedisReply } from "./redis_client.ts";

/** The oldest Redis the store runs on (streams, `ZRANGEBYSCORE` exclusive bounds, scripts by effects). */
export const MIN_REDIS_VERSION = "5.0.0";

function older(v: string, than: string): boolean {
  const a = v.split(".").map(Number);
  const b = than.split(".").map(Number);
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) < (b[i] ?? 0);
  return false;
}

/** `CONFIG GET name`'s value (a pair array on RESP2, a map on RESP3), `undefined` when the server does not allow it. */
async function configGet(client: RedisClient, name: string, ms: number): Promise<string | undefined> {
  try {
    const r = (await client.send(["CONFIG", "GET", name], ms)) as RedisReply | Record<string, string>;
    if (Array.isArray(r)) return r[1] === undefined || r[1] === null ? undefined : String(r[1]);
    if (r && typeof r === "object") return (r as Record<string, string>)[name];
    return undefined;
  } catch (e) {
    // Managed services rename or forbid CONFIG: the settings are unknown (accepted only as durability "none").
    if (e instanceof RedisCallError && (e.kind === "refused" || e.kind === "auth")) return undefined;
    throw e;
  }
}

/**
 * Reads what the store judges a server by (each command bounded by `ms`).
 *
 * @example
 * ```ts ignore
 * const s = await readServerSettings(client, 1000);
 * console.log(s.appendonly, s.appendfsync, s.role, s.replicas);
 * ```
 */
export async function readServerSettings(client: RedisClient, ms: number): Promise<ServerSettings> {
  const server = String(await client.send(["INFO", "server"], ms));
  const replication = String(await client.send(["INFO", "replication"], ms));
  return {
    version: infoField(server, "redis_version") ?? "0.0.0",
    appendonly: await configGet(client, "appendonly", ms),
    appendfsync: await configGet(client, "appendfsync", ms),
    role: infoField(replication, "role") ?? "unknown",
    replicas: Number(infoField(replication, "connected_slaves") ?? 0),
  };
}

/**
 * Judges the server and opens `o.job` on it: the mode the store runs in.
 * Throws `UNSUPPORTED_SERVER` below {@linkcode MIN_REDIS_VERSION},
 * `INVALID_CONFIG` for a server weaker than `o.durability`, a replica, or a
 * missing job with `createJob: false`, `STORE_AUTH_FAILED` for refused
 * credentials, and `StoreUnavailableError` when the server does not answer.
 *
 * @example
 * ```ts ignore
 * const mode = await openRedisJob(client, resolveRedisOptions({ job: "j1" }), "127.0.0.1:6379", logger);
 * console.log(mode.text);
 * ```
 */
export async function openRedisJob(client: RedisClient, o: ResolvedRedisOptions, server: string, logger: Logger): Promise<DurabilityMode> {
  const ms = o.opTimeoutMs;
  try {
    const s = await readServerSettings(client, ms);
    if (older(s.version, MIN_REDIS_VERSION)) {
      throw new SplitleaseError("UNSUPPORTED_SERVER", `RedisStore: Redis ${s.version} at ${server} is older than ${MIN_REDIS_VERSION}, the oldest the store runs on`);
    }
    const verdict = judgeDurability(s, o.durability, o.waitReplicas);
    if (!verdict.ok) throw invalidRedis(`Redis at ${server}: ${verdict.message}`);
    const k = jobKeys(o.keyPrefix, o.job);
    if (o.createJob) {
      await client.send(["SET", k.head, "0", "NX"], ms);
      await client.send(["SADD", jobsKey(o.keyPrefix), o.job], ms);
    } else if (Number(await client.send(["EXISTS", k.head], ms)) === 0) {
      throw invalidRedis(`there is no job ${o.job} under ${o.keyPrefix} on Redis at ${server} (and createJob is false): check the job name and keyPrefix`);
    }
    logger(verdict.mode.level === "always" && (verdict.mode.waitReplicas > 0 || s.replicas === 0) ? "info" : "warn", "Redis store connected", { job: o.job, server, durability: verdict.mode.text });
    return verdict.mode;
  } catch (e) {
    if (e instanceof SplitleaseError) throw e;
    if (e instanceof RedisCallError && e.kind === "auth") {
      throw new SplitleaseError("STORE_AUTH_FAILED", `RedisStore: Redis at ${server} refused the connection's credentials or commands (${e.message}): check the URL's user and password and the user's ACL`, { cause: e });
    }
    throw new StoreUnavailableError("connect", ms, { cause: e, detail: `${e instanceof Error ? e.message : String(e)}; Redis at ${server}` });
  }
}
