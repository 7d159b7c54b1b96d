/**
 * A worker's options after defaults, checked once when it starts: an unknown
 * key or an out-of-range value fails `startWorker` instead of a lane later.
 *
 * @module
 */
import type { Clock, Logger } from "../coordinator/types.ts";
import { SplitleaseError } from "../errors.ts";
import { systemClock } from "../coordinator/clock.ts";
import { TUNABLE_DEFAULTS } from "../coordinator/config.ts";
import { jsonLogger } from "./logger.ts";
import { keysOf, rejectUnknownKeys } from "../util/options.ts";
import { durationIssue } from "../util/timers.ts";
import type { WorkerOptions } from "./worker_types.ts";

/** Every option `startWorker` takes: anything else is a typo. */
const WORKER_KEYS = keysOf<WorkerOptions<unknown>>({
  coordinator: true,
  source: true,
  maxInFlight: true,
  logger: true,
  clock: true,
  stalledIsFatal: true,
  afterStall: true,
  abortGraceMs: true,
  commitIntervalMs: true,
  statusIntervalMs: true,
});

/** The settings of a worker: its options with the defaults filled in. */
export interface WorkerSettings {
  /** Structured logger. */
  log: Logger;
  /** Time source. */
  clock: Clock;
  /** Lanes running at once (0: a standby). */
  maxInFlight: number;
  /** Whether a stalled job ends `stalled` (else `drained` with a warning). */
  stalledIsFatal: boolean;
  /** Whether a stall ends the worker (`exit`) or leaves it in the job waiting for a repair (`wait`). */
  afterStall: "exit" | "wait";
  /** How long a lost lane may ignore its abort before it is abandoned. */
  abortGraceMs: number;
  /** Commit cadence per lane (0: every commit writes). */
  commitIntervalMs: number;
  /** Interval of the status check (0: only after events). */
  statusIntervalMs: number;
}

/**
 * Checks `startWorker`'s options and fills in the defaults.
 *
 * @throws {SplitleaseError} `INVALID_CONFIG` on an unknown key, a
 * `maxInFlight` that is not an integer >= 0, or an out-of-range duration.
 */
export function workerSettings<D>(options: WorkerOptions<D>): WorkerSettings {
  rejectUnknownKeys(options, WORKER_KEYS, "startWorker");
  const settings: WorkerSettings = {
    log: options.logger ?? jsonLogger(),
    clock: options.clock ?? systemClock,
    maxInFlight: options.maxInFlight ?? TUNABLE_DEFAULTS.maxInFlight,
    stalledIsFatal: options.stalledIsFatal ?? true,
    afterStall: options.afterStall ?? "exit",
    abortGraceMs: options.abortGraceMs ?? 5000,
    commitIntervalMs: options.commitIntervalMs ?? 0,
    statusIntervalMs: options.statusIntervalMs ?? 1000,
  };
  if (settings.afterStall !== "exit" && settings.afterStall !== "wait") {
    throw new SplitleaseError("INVALID_CONFIG", `startWorker: afterStall must be "exit" or "wait", got ${JSON.stringify(options.afterStall)}`);
  }
  if (!Number.isInteger(settings.maxInFlight) || settings.maxInFlight < 0) {
    throw new SplitleaseError("INVALID_CONFIG", `maxInFlight must be an integer >= 0 (got ${options.maxInFlight}); 0 makes a standby`);
  }
  for (
    const [k, v] of [["abortGraceMs", settings.abortGraceMs], ["commitIntervalMs", settings.commitIntervalMs], [
      "statusIntervalMs",
      settings.statusIntervalMs,
    ]] as const
  ) {
    const issue = durationIssue(k, v);
    if (issue) throw new SplitleaseError("INVALID_CONFIG", `startWorker: ${issue}`);
  }
  return settings;
}
