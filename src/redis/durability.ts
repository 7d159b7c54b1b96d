/**
 * What an acknowledged write survives on a Redis server, read from the
 * server at connect (`CONFIG GET appendonly`, `appendfsync`, `INFO
 * replication`), and the decision whether the store accepts it: pure, so
 * every combination is tested without a server.
 *
 * @module
 */
import { DURABILITY_LEVELS, type RedisDurability } from "./options.ts";

/**
 * A server's persistence and replication as the store read them.
 *
 * @example
 * ```ts
 * import type { ServerSettings } from "./durability.ts";
 * const s: ServerSettings = { version: "7.2.4", appendonly: "yes", appendfsync: "always", role: "master", replicas: 0 };
 * ```
 */
export interface ServerSettings {
  /** `redis_version` of `INFO server`. */
  version: string;
  /** `CONFIG GET appendonly` (`undefined` when `CONFIG` is not allowed). */
  appendonly: string | undefined;
  /** `CONFIG GET appendfsync` (`undefined` when `CONFIG` is not allowed). */
  appendfsync: string | undefined;
  /** `role` of `INFO replication` (`master`, `slave`). */
  role: string;
  /** `connected_slaves` of `INFO replication`. */
  replicas: number;
}

/**
 * The mode a store runs in: what the server guarantees, what the store
 * waits for, and one line saying so (logged at connect, shown in `/status`).
 *
 * @example
 * ```ts
 * import type { DurabilityMode } from "./durability.ts";
 * const m: DurabilityMode = { level: "always", waitReplicas: 0, text: "appendfsync always; no replicas" };
 * ```
 */
export interface DurabilityMode {
  /** What an acknowledged write survives on this server (see `RedisDurability`). */
  level: RedisDurability;
  /** Replicas each write waits for (`WAIT`) before it is reported landed. */
  waitReplicas: number;
  /** The mode in one line. */
  text: string;
}

/** The level a server's settings give. */
export function serverLevel(s: ServerSettings): RedisDurability {
  if (s.appendonly === "yes" && s.appendfsync === "always") return "always";
  if (s.appendonly === "yes" && s.appendfsync === "everysec") return "everysec";
  return "none";
}

const LOSS: Record<RedisDurability, string> = {
  always: "every acknowledged write is on disk before its answer",
  everysec: "a crash of its machine can lose about the last second of acknowledged writes",
  none: "a restart can lose every write since the last snapshot",
};

/** What the server's persistence settings are, in words. */
function settingsText(s: ServerSettings): string {
  if (s.appendonly === undefined) return "its persistence settings cannot be read (CONFIG is not allowed)";
  if (s.appendonly !== "yes") return "appendonly no";
  return `appendonly yes, appendfsync ${s.appendfsync}`;
}

/** The fix for a server weaker than `wanted`. */
function fix(s: ServerSettings, wanted: RedisDurability): string {
  const level = serverLevel(s);
  const weaker = DURABILITY_LEVELS.slice(DURABILITY_LEVELS.indexOf(wanted) + 1);
  const fsync = wanted === "always" ? "always" : "everysec";
  const server = s.appendonly === undefined
    ? `set appendonly yes and appendfsync ${fsync} in the server's configuration`
    : `CONFIG SET appendonly yes, CONFIG SET appendfsync ${fsync} (and CONFIG REWRITE, or the same in redis.conf)`;
  const accept = weaker.filter((w) => DURABILITY_LEVELS.indexOf(w) >= DURABILITY_LEVELS.indexOf(level)).map((w) => `durability: "${w}"`);
  return `${server}, or accept the risk by name with ${accept.join(" or ")}`;
}

/**
 * Decides whether a store that wants `wanted` (and, when given, `waitReplicas`
 * replicas per write) runs on a server with settings `s`: the mode, or why
 * not (the message names the settings, what can be lost and the fix).
 *
 * @example
 * ```ts
 * import { judgeDurability } from "./durability.ts";
 * const s = { version: "7.2.4", appendonly: "no", appendfsync: "everysec", role: "master", replicas: 0 };
 * console.log(judgeDurability(s, "always", undefined).ok); // false: appendonly no can lose acknowledged writes
 * console.log(judgeDurability(s, "none", undefined).ok); // true
 * ```
 */
export function judgeDurability(
  s: ServerSettings,
  wanted: RedisDurability,
  waitReplicas: number | undefined,
): { ok: true; mode: DurabilityMode } | { ok: false; message: string } {
  if (s.role !== "master") {
    return { ok: false, message: `the server is a replica (role ${s.role}): connect to its primary, which takes the writes` };
  }
  const level = serverLevel(s);
  if (DURABILITY_LEVELS.indexOf(level) > DURABILITY_LEVELS.indexOf(wanted)) {
    return {
      ok: false,
      message: `the server runs with ${settingsText(s)}: ${LOSS[level]}, and this store accepts only durability "${wanted}" ` +
        `(${LOSS[wanted]}); ${fix(s, wanted)}`,
    };
  }
  const wait = waitReplicas ?? (s.replicas > 0 ? 1 : 0);
  const replicas = s.replicas === 0
    ? "no replicas"
    : wait === 0
    ? `${s.replicas} replica${s.replicas === 1 ? "" : "s"}, writes not waited for (a failover can lose acknowledged writes)`
    : `${s.replicas} replica${s.replicas === 1 ? "" : "s"}, each write waits for ${wait} (WAIT)`;
  const accepted = level === wanted ? "" : ` (accepts "${wanted}")`;
  return { ok: true, mode: { level, waitReplicas: wait, text: `durability "${level}"${accepted}: ${settingsText(s)} (${LOSS[level]}); ${replicas}` } };
}

/** The value of `field` in an `INFO` section's text (`role:master` → `master`). */
export function infoField(info: string, field: string): string | undefined {
  const m = new RegExp(`^${field}:(.*)$`, "m").exec(info);
  return m ? m[1].trim() : undefined;
}
