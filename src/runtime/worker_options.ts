/**
 * A worker's options after defaults, checked once when it starts: an unknown
 * key or an out-of-range value fails `startWorker` instead of a lane later.
 *
 * @module
 */
import * as z from "zod";
import type { Clock, Coordinator } from "../coordinator/types.ts";
import { systemClock } from "../coordinator/clock.ts";
import { TUNABLE_DEFAULTS } from "../coordinator/config.ts";
import { SplitleaseError } from "../errors.ts";
import { jsonLogger, type Logger } from "../util/logger.ts";
import { choiceOption, durationOption, type Equal, givenOption, parseOptions } from "../util/option_schema.ts";
import type { SplitSource } from "./source.ts";
import type { WorkerOptions } from "./worker_types.ts";

/**
 * The checks of what a host hands its worker unchanged (the fields of
 * `WorkerBaseOptions`, and serve's `afterStall`): `startWorker`, serve and
 * slices take each field with this check, adding their own default or none.
 */
export const LANE_OPTIONS = z.strictObject({
  source: givenOption<SplitSource<unknown>>(),
  stalledIsFatal: givenOption<boolean>(),
  afterStall: choiceOption(["exit", "wait"]),
  abortGraceMs: durationOption(),
  commitIntervalMs: durationOption(),
  logger: givenOption<Logger>(),
  clock: givenOption<Clock>(),
}).shape;

/** Every option `startWorker` takes, its check and its default: anything else is a typo. */
export const WORKER_SCHEMA = z.strictObject({
  coordinator: givenOption<Coordinator>(),
  source: LANE_OPTIONS.source,
  afterStall: LANE_OPTIONS.afterStall.default("exit"),
  maxInFlight: z.custom<number>((v) => Number.isInteger(v) && (v as number) >= 0, {
    error: (iss) => `maxInFlight must be an integer >= 0 (got ${String(iss.input)}); 0 makes a standby`,
  }).optional(),
  stalledIsFatal: LANE_OPTIONS.stalledIsFatal.default(true),
  abortGraceMs: LANE_OPTIONS.abortGraceMs.default(5000),
  commitIntervalMs: LANE_OPTIONS.commitIntervalMs.default(0),
  statusIntervalMs: durationOption().default(1000),
  logger: LANE_OPTIONS.logger.optional(),
  clock: LANE_OPTIONS.clock.optional(),
});
const _workerOptionsAreTheSchema: Equal<keyof WorkerOptions<unknown>, keyof z.input<typeof WORKER_SCHEMA>> = true;

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
  // A null option means its default, as it always has.
  const given = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== null));
  const o = parseOptions(WORKER_SCHEMA, given, "startWorker");
  return {
    log: o.logger ?? jsonLogger(),
    clock: o.clock ?? systemClock,
    maxInFlight: lanesOf(o.maxInFlight, o.coordinator.maxInFlight),
    stalledIsFatal: o.stalledIsFatal,
    afterStall: o.afterStall,
    abortGraceMs: o.abortGraceMs,
    commitIntervalMs: o.commitIntervalMs,
    statusIntervalMs: o.statusIntervalMs,
  };
}

/**
 * The worker's lanes: the coordinator's `maxInFlight` (what its member
 * record announces and the leader deals to), or the worker's own when the
 * coordinator does not say. Both given and different is a configuration
 * error: 8 lanes running while the leader deals 16 splits leaves 8 of them
 * waiting behind busy lanes, silently.
 */
function lanesOf(given: number | undefined, announced: number | undefined): number {
  if (given !== undefined && announced !== undefined && given !== announced) {
    throw new SplitleaseError(
      "INVALID_CONFIG",
      `startWorker: maxInFlight ${given} differs from the coordinator's maxInFlight ${announced} ` +
        "(the lanes it joined with, which the leader deals to): give it once, to the join",
    );
  }
  return given ?? announced ?? TUNABLE_DEFAULTS.maxInFlight;
}
