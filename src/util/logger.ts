/**
 * The logger every part of splitlease takes ({@linkcode Logger}), and
 * structured JSON logging: one line per event of note.
 *
 * @module
 */
import { stackOf } from "./stack.ts";

/**
 * Log levels in increasing severity.
 *
 * @example
 * ```ts
 * import type { LogLevel } from "@splitlease/splitlease/host";
 * const level: LogLevel = "info";
 * ```
 */
export type LogLevel = "debug" | "info" | "warn" | "error";

/**
 * Minimal structured logger; `fields` are JSON-serializable.
 *
 * @example
 * ```ts
 * import type { Logger } from "@splitlease/splitlease/host";
 * const logger: Logger = (level, message, fields) => console.log(JSON.stringify({ level, message, ...fields }));
 * ```
 */
export type Logger = (
  level: LogLevel,
  message: string,
  fields?: Record<string, unknown>,
) => void;

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/**
 * Options of {@linkcode jsonLogger}.
 *
 * @example
 * ```ts
 * import { jsonLogger, type JsonLoggerOptions } from "@splitlease/splitlease/host";
 * const options: JsonLoggerOptions = { level: "warn", base: { instance: "pod-1" } };
 * const log = jsonLogger(options);
 * log("warn", "Heartbeat failed", { error: "timeout" });
 * ```
 */
export interface JsonLoggerOptions {
  /** Lowest level written (default `info`). */
  level?: LogLevel;
  /** Line sink (default: `console.log` for debug/info, `console.error` above). */
  write?: (line: string, level: LogLevel) => void;
  /** Fields added to every line (e.g. `{ instance: "pod-1" }`). */
  base?: Record<string, unknown>;
  /** Wall clock for the `time` field (default `Date.now`). */
  now?: () => number;
}

/**
 * Converts a value to something `JSON.stringify` renders usefully: errors
 * become `{ name, message, code?, stack?, cause? }` (the stack's first
 * frames, bounded: see `stackOf`), bigints strings.
 */
function plain(value: unknown, depth = 0): unknown {
  if (value instanceof Error) {
    const out: Record<string, unknown> = { name: value.name, message: value.message };
    const code = (value as { code?: unknown }).code;
    if (code !== undefined) out.code = code;
    const stack = stackOf(value);
    if (stack !== undefined) out.stack = stack;
    if (value.cause !== undefined && depth < 3) out.cause = plain(value.cause, depth + 1);
    return out;
  }
  if (typeof value === "bigint") return value.toString();
  if (Array.isArray(value) && depth < 5) return value.map((v) => plain(v, depth + 1));
  if (value && typeof value === "object" && depth < 5) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = plain(v, depth + 1);
    return out;
  }
  return value;
}

/**
 * Formats one structured log line as JSON: `time` (ISO 8601), `level`,
 * `msg`, then the base fields and the line's fields. Never throws (a field
 * that cannot be serialized is replaced by a note).
 *
 * @example
 * ```ts
 * import { formatLogLine } from "@splitlease/splitlease/host";
 * formatLogLine("info", "gained", { splitId: "a" }, {}, 0);
 * // {"time":"1970-01-01T00:00:00.000Z","level":"info","msg":"gained","splitId":"a"}
 * ```
 */
export function formatLogLine(
  level: LogLevel,
  message: string,
  fields: Record<string, unknown> | undefined,
  base: Record<string, unknown>,
  wallMs: number,
): string {
  const record = { time: new Date(wallMs).toISOString(), level, msg: message, ...base, ...(fields ?? {}) };
  try {
    return JSON.stringify(plain(record));
  } catch (e) {
    return JSON.stringify({
      time: record.time,
      level,
      msg: message,
      logError: `fields could not be serialized: ${(e as Error).message}`,
    });
  }
}

/**
 * A {@linkcode Logger} that writes one JSON object per line.
 *
 * @example
 * ```ts
 * import { jsonLogger } from "@splitlease/splitlease/host";
 * const log = jsonLogger({ level: "debug", base: { instance: "pod-1" } });
 * log("info", "joined", { job: "backfill" });
 * ```
 */
export function jsonLogger(options: JsonLoggerOptions = {}): Logger {
  const min = RANK[options.level ?? "info"];
  const base = options.base ?? {};
  const now = options.now ?? Date.now;
  const write = options.write ??
    ((line: string, level: LogLevel) => (RANK[level] >= RANK.warn ? console.error(line) : console.log(line)));
  return (level, message, fields) => {
    if (RANK[level] < min) return;
    write(formatLogLine(level, message, fields, base, now()), level);
  };
}

/**
 * A {@linkcode Logger} that discards everything.
 *
 * @example
 * ```ts
 * import { silentLogger } from "@splitlease/splitlease/host";
 * silentLogger("info", "nothing is written");
 * ```
 */
export const silentLogger: Logger = (): void => {};
