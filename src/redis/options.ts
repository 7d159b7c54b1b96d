/**
 * Options of the Redis store that do not depend on the driver, and their
 * validation.
 *
 * @module
 */
import { SplitleaseError } from "../errors.ts";
import { isValidId } from "../store/keys.ts";
import { keysOf, rejectUnknownKeys } from "../util/options.ts";
import { durationIssue } from "../util/timers.ts";
import type { Logger } from "../util/logger.ts";

/**
 * The weakest persistence the store accepts from its server, by name (see
 * docs/DESIGN.md, "Redis: what a landed write survives"):
 * - `"always"` (the default): AOF on with `appendfsync always`: every
 *   acknowledged write is on disk before its answer, so neither a crash
 *   of the server (`kill -9`) nor of its machine loses one;
 * - `"everysec"`: AOF with `appendfsync everysec` is accepted: a crash of
 *   the machine (not of the process alone) can lose about the last second
 *   of acknowledged writes;
 * - `"none"`: anything is accepted, `appendonly no` (RDB snapshots or
 *   nothing) and a server whose settings cannot be read (`CONFIG` disabled,
 *   as on some managed services) included: a restart can lose every write
 *   since the last snapshot.
 *
 * @example
 * ```ts
 * import type { RedisDurability } from "@splitlease/splitlease/redis";
 * const weaker: RedisDurability = "everysec";
 * ```
 */
export type RedisDurability = "always" | "everysec" | "none";

/** The names of {@linkcode RedisDurability}, strongest first. */
export const DURABILITY_LEVELS: readonly RedisDurability[] = ["always", "everysec", "none"];

/**
 * How the Redis store behaves, whatever the driver. Every duration is in
 * milliseconds.
 *
 * @example
 * ```ts
 * import type { RedisStoreCoreOptions } from "@splitlease/splitlease/redis";
 * const options: RedisStoreCoreOptions = { job: "backfill", opTimeoutMs: 3000, durability: "always" };
 * ```
 */
export interface RedisStoreCoreOptions {
  /** Job name: 1-128 characters of `[A-Za-z0-9_-]`; every job has its own keys and revisions. */
  job: string;
  /**
   * Prefix of every key the store writes (default `splitlease:`): a job's
   * keys are `<prefix>{<job>}:kv`, `:rev`, `:head`, `:log`, `:sync`, and the
   * catalog's set of jobs is `<prefix>jobs`. Letters, digits and `_-:.`,
   * at most 64 characters.
   */
  keyPrefix?: string;
  /** Bound on every operation (default 5000). */
  opTimeoutMs?: number;
  /**
   * How often a watch reads the store when no wake-up came (default 1000):
   * the bound on the delay of a wake-up lost with its connection.
   */
  pollIntervalMs?: number;
  /**
   * About how many changes the job's change log keeps (default 10000; the
   * stream is trimmed approximately, never below this). A watch that falls
   * further behind catches up from the live keys (skipping superseded
   * changes, as the watch contract allows), never from a gap.
   */
  changeLogSize?: number;
  /** The weakest server persistence accepted (default `"always"`): {@linkcode RedisDurability}. */
  durability?: RedisDurability;
  /**
   * Replicas that must acknowledge a write (`WAIT`) before the store
   * reports it landed. Default: 1 when the primary has replicas, else 0.
   * 0 on a primary with replicas accepts that a failover loses the writes
   * its new primary had not received.
   */
  waitReplicas?: number;
  /**
   * Create the job when it is missing (default `true`). Tools that only read
   * or repair a job (the CLI) pass `false`: a mistyped job name then fails
   * with `INVALID_CONFIG` instead of creating an empty job.
   */
  createJob?: boolean;
  /** Where the durability mode and connection losses are logged (default: JSON lines). */
  logger?: Logger;
}

/**
 * {@linkcode RedisStoreCoreOptions} after defaults and validation.
 *
 * @example
 * ```ts
 * import type { ResolvedRedisOptions } from "@splitlease/splitlease/redis";
 * const describe = (o: ResolvedRedisOptions) => `${o.keyPrefix}{${o.job}} (${o.durability})`;
 * ```
 */
export interface ResolvedRedisOptions {
  /** The job name. */
  job: string;
  /** The key prefix. */
  keyPrefix: string;
  /** Bound on every operation. */
  opTimeoutMs: number;
  /** The fallback poll of watches. */
  pollIntervalMs: number;
  /** The change log's approximate size. */
  changeLogSize: number;
  /** The weakest persistence accepted. */
  durability: RedisDurability;
  /** Replicas a write waits for (`undefined`: decided from the server's replicas). */
  waitReplicas: number | undefined;
  /** Create a missing job. */
  createJob: boolean;
}

const CORE_KEYS = keysOf<RedisStoreCoreOptions>({
  job: true,
  keyPrefix: true,
  opTimeoutMs: true,
  pollIntervalMs: true,
  changeLogSize: true,
  durability: true,
  waitReplicas: true,
  createJob: true,
  logger: true,
});

/** The options every Redis store takes (the driver's entry adds its own). */
export const REDIS_CORE_KEYS: readonly string[] = CORE_KEYS;

const PREFIX = /^[A-Za-z0-9_:.-]{1,64}$/;

/**
 * An `INVALID_CONFIG` error for the Redis store.
 *
 * @example
 * ```ts
 * import { invalidRedis } from "./options.ts";
 * throw invalidRedis("opTimeoutMs must be positive");
 * ```
 */
export function invalidRedis(message: string): SplitleaseError {
  return new SplitleaseError("INVALID_CONFIG", `RedisStore: ${message}`);
}

/**
 * Validates `o` (unknown keys refused with the nearest known one) and
 * applies the defaults. `extra` names the driver entry's own options.
 *
 * @example
 * ```ts
 * import { resolveRedisOptions } from "./options.ts";
 * console.log(resolveRedisOptions({ job: "j1" }).durability); // "always"
 * ```
 */
export function resolveRedisOptions(o: RedisStoreCoreOptions, extra: readonly string[] = []): ResolvedRedisOptions {
  if (o === null || typeof o !== "object") throw invalidRedis("options must be an object");
  rejectUnknownKeys(o, [...CORE_KEYS, ...extra], "RedisStore.connect");
  if (!isValidId(o.job)) throw invalidRedis(`job must be 1-128 characters of letters, digits, '_' and '-', got ${JSON.stringify(o.job)}`);
  const keyPrefix = o.keyPrefix ?? "splitlease:";
  if (typeof keyPrefix !== "string" || !PREFIX.test(keyPrefix)) {
    throw invalidRedis(`keyPrefix must be 1-64 characters of letters, digits, '_', '-', ':' and '.', got ${JSON.stringify(keyPrefix)}`);
  }
  for (const [k, min] of [["opTimeoutMs", 1], ["pollIntervalMs", 1]] as const) {
    const issue = o[k] === undefined ? undefined : durationIssue(k, o[k], min);
    if (issue) throw invalidRedis(issue);
  }
  const changeLogSize = o.changeLogSize ?? 10_000;
  if (!Number.isInteger(changeLogSize) || changeLogSize < 100) throw invalidRedis(`changeLogSize must be an integer of at least 100, got ${changeLogSize}`);
  const durability = o.durability ?? "always";
  if (!DURABILITY_LEVELS.includes(durability)) {
    throw invalidRedis(`durability must be one of ${DURABILITY_LEVELS.map((d) => `"${d}"`).join(", ")}, got ${JSON.stringify(durability)}`);
  }
  if (o.waitReplicas !== undefined && (!Number.isInteger(o.waitReplicas) || o.waitReplicas < 0 || o.waitReplicas > 16)) {
    throw invalidRedis(`waitReplicas must be an integer from 0 to 16, got ${o.waitReplicas}`);
  }
  return {
    job: o.job,
    keyPrefix,
    opTimeoutMs: o.opTimeoutMs ?? 5000,
    pollIntervalMs: o.pollIntervalMs ?? 1000,
    changeLogSize,
    durability,
    waitReplicas: o.waitReplicas,
    createJob: o.createJob ?? true,
  };
}

/**
 * The keys of one job (one hash tag, so one cluster slot) and its wake-up
 * channels' prefix.
 *
 * @example
 * ```ts
 * import { jobKeys } from "./options.ts";
 * console.log(jobKeys("splitlease:", "backfill").head); // "splitlease:{backfill}:head"
 * ```
 */
export function jobKeys(prefix: string, job: string): { kv: string; rev: string; head: string; log: string; sync: string; wake: string; all: string[] } {
  const base = `${prefix}{${job}}:`;
  const k = { kv: base + "kv", rev: base + "rev", head: base + "head", log: base + "log", sync: base + "sync", wake: base + "w:" };
  return { ...k, all: [k.kv, k.rev, k.head, k.log, k.sync] };
}

/**
 * The catalog's set of job names under `prefix`.
 *
 * @example
 * ```ts
 * import { jobsKey } from "./options.ts";
 * console.log(jobsKey("splitlease:")); // "splitlease:jobs"
 * ```
 */
export function jobsKey(prefix: string): string {
  return prefix + "jobs";
}
