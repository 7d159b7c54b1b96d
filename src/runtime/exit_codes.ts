/**
 * The process exit codes of a served worker and of `splitlease wait`, and
 * how a worker outcome or a wait maps to one. One table for both, so that
 * a job that stalled or failed to plan exits with the same code from a
 * worker and from `wait` (3 and 4). The CLI's other commands keep their own
 * small table (`src/cli/args.ts`: 0 done, 1 error, 2 usage, 3 not applied,
 * 4 lost a race).
 *
 * | code | worker | `splitlease wait` |
 * |---|---|---|
 * | 0 | drained (the job complete, a drain, SIGTERM) | every split completed |
 * | 1 | failed | an error: no such job, bad credentials, a bad record |
 * | 2 | — | a bad command line |
 * | 3 | the job stalled (quarantined splits left) | the job stalled |
 * | 4 | planning failed | planning failed |
 * | 5 | — | complete except cancelled splits (skipped for good) |
 * | 6 | — | the job was deleted while it waited |
 * | 7 | — | the store stayed unreachable past `--unreachable` |
 * | 8 | — | `--timeout` passed first |
 *
 * @module
 */
import { SplitleaseError } from "../errors.ts";
import type { JobResult } from "../fleet/job_result.ts";
import type { WaitResult } from "../fleet/wait.ts";
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
 * Exit code of `splitlease wait` for a job that completed except for
 * cancelled splits: nothing is left to run, but part of the plan was
 * skipped for good (a script that checks for 0 notices).
 *
 * @example
 * ```ts
 * import { EXIT_COMPLETE_WITH_SKIPS } from "@splitlease/splitlease/host";
 * console.log(EXIT_COMPLETE_WITH_SKIPS); // 5
 * ```
 */
export const EXIT_COMPLETE_WITH_SKIPS = 5;

/**
 * Exit code of `splitlease wait` when the job was deleted while it waited.
 *
 * @example
 * ```ts
 * import { EXIT_DELETED } from "@splitlease/splitlease/host";
 * console.log(EXIT_DELETED); // 6
 * ```
 */
export const EXIT_DELETED = 6;

/**
 * Exit code of `splitlease wait` when the store failed every read for
 * longer than its limit (`--unreachable`, default 60 s).
 *
 * @example
 * ```ts
 * import { EXIT_UNREACHABLE } from "@splitlease/splitlease/host";
 * console.log(EXIT_UNREACHABLE); // 7
 * ```
 */
export const EXIT_UNREACHABLE = 7;

/**
 * Exit code of `splitlease wait` when its `--timeout` passed before the job
 * had an outcome (the job runs on).
 *
 * @example
 * ```ts
 * import { EXIT_TIMEOUT } from "@splitlease/splitlease/host";
 * console.log(EXIT_TIMEOUT); // 8
 * ```
 */
export const EXIT_TIMEOUT = 8;

/**
 * The exit code a job's standing gives `splitlease wait`, or `null` while
 * it has no outcome: complete 0 (5 with cancelled splits), stalled 3,
 * planning failed 4.
 *
 * @example
 * ```ts
 * import { exitCodeForResult } from "@splitlease/splitlease/host";
 * import { jobResultOf } from "@splitlease/splitlease/admin";
 * const code = exitCodeForResult(jobResultOf(undefined)); // null: no outcome yet
 * ```
 */
export function exitCodeForResult(r: JobResult): number | null {
  switch (r.state) {
    case "complete":
      return r.skipped.cancelled > 0 ? EXIT_COMPLETE_WITH_SKIPS : EXIT_DRAINED;
    case "stalled":
      return EXIT_STALLED;
    case "planFailed":
      return EXIT_PLAN_FAILED;
    default:
      return null;
  }
}

/**
 * The exit code of a wait (see the table in this module's doc): its
 * outcome's, or deleted 6, unreachable 7, timeout 8.
 *
 * @example
 * ```ts
 * import { exitCodeForWait } from "@splitlease/splitlease/host";
 * import { waitForOutcome } from "@splitlease/splitlease/admin";
 * import { MemoryStore } from "@splitlease/splitlease";
 * const code = exitCodeForWait(await waitForOutcome(new MemoryStore(), { timeoutMs: 10 })); // 8
 * ```
 */
export function exitCodeForWait(w: WaitResult): number {
  switch (w.kind) {
    case "outcome":
      return exitCodeForResult(w.result) ?? EXIT_ERROR;
    case "deleted":
      return EXIT_DELETED;
    case "unreachable":
      return EXIT_UNREACHABLE;
    case "timeout":
      return EXIT_TIMEOUT;
  }
}

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
