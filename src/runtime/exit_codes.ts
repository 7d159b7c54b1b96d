/**
 * The process exit codes of a served worker, and how a worker outcome maps
 * to one.
 *
 * @module
 */
import { SplitleaseError } from "../errors.ts";
import type { WorkerOutcome } from "./worker_types.ts";

/**
 * Exit code of a drained worker.
 *
 * @example
 * ```ts
 * import { EXIT_DRAINED } from "@splitlease/splitlease/host";
 * console.log(EXIT_DRAINED); // 0
 * ```
 */
export const EXIT_DRAINED = 0;
/**
 * Exit code of a failed worker.
 *
 * @example
 * ```ts
 * import { EXIT_ERROR } from "@splitlease/splitlease/host";
 * console.log(EXIT_ERROR); // 1
 * ```
 */
export const EXIT_ERROR = 1;
/**
 * Exit code of a stalled job (quarantined splits remain) when stalls are fatal.
 *
 * @example
 * ```ts
 * import { EXIT_STALLED } from "@splitlease/splitlease/host";
 * console.log(EXIT_STALLED); // 3
 * ```
 */
export const EXIT_STALLED = 3;

/**
 * Exit code of a job whose planner failed `planAttempts` times in a row
 * (error code `PLAN_FAILED`): fix the planner or its input and restart; the
 * next leader plans again.
 *
 * @example
 * ```ts
 * import { EXIT_PLAN_FAILED } from "@splitlease/splitlease/host";
 * console.log(EXIT_PLAN_FAILED); // 4
 * ```
 */
export const EXIT_PLAN_FAILED = 4;

/**
 * Maps a worker outcome to a process exit code: drained 0, stalled 3 (or 0
 * when stalls are not fatal: the worker then reports `drained`), error 1.
 *
 * @example
 * ```ts
 * import { exitCodeFor } from "@splitlease/splitlease/host";
 * import { type WorkerOutcome } from "@splitlease/splitlease";
 * declare const outcome: WorkerOutcome;
 * const code = exitCodeFor(outcome); // 0, 1 or 3
 * ```
 */
export function exitCodeFor(outcome: WorkerOutcome): number {
  switch (outcome.kind) {
    case "drained":
      return EXIT_DRAINED;
    case "stalled":
      return EXIT_STALLED;
    default:
      return outcome.error instanceof SplitleaseError && outcome.error.code === "PLAN_FAILED" ? EXIT_PLAN_FAILED : EXIT_ERROR;
  }
}
