/**
 * Where a job stands, read from its `plan` record alone (pure): planning,
 * running, or finished and how — what `splitlease wait` returns, what
 * `splitlease status --json` carries under `result`, and what an exit code
 * is chosen by (`src/runtime/exit_codes.ts`).
 *
 * @module
 */
import type { JobOutcome, JobPause, PlanRecord } from "../records.ts";

/**
 * Where a job stands: `new` (no plan record: no leader yet), `planning`
 * (nothing published yet), `running` (published, no outcome), `paused` (an
 * operator paused it: nothing new runs, no outcome is decided), `complete`
 * (every split completed or cancelled; `skipped.cancelled` says how many
 * were cancelled), `stalled` (only quarantined splits are left) or
 * `planFailed` (its planner failed for good).
 *
 * @example
 * ```ts
 * import type { JobResultState } from "@splitlease/splitlease/admin";
 * const finished = (s: JobResultState) => s === "complete" || s === "stalled" || s === "planFailed";
 * ```
 */
export type JobResultState = "new" | "planning" | "running" | "paused" | "complete" | "stalled" | "planFailed";

/**
 * A job's standing and, once it has one, its outcome record with what it
 * skipped.
 *
 * @example
 * ```ts
 * import type { JobResult } from "@splitlease/splitlease/admin";
 * const line = (r: JobResult) =>
 *   r.state === "complete" && r.skipped.cancelled > 0 ? `done except ${r.skipped.cancelled} cancelled` : r.state;
 * ```
 */
export interface JobResult {
  /** Where it stands. */
  state: JobResultState;
  /** The outcome the plan record carries, or `null` while there is none. */
  outcome: JobOutcome | null;
  /**
   * What the outcome left undone: cancelled splits (never run again), and
   * quarantined ones (parked until requeued), `permanent` of them by
   * failures their source called permanent. Zeros before an outcome.
   */
  skipped: { cancelled: number; quarantined: number; permanent: number };
  /** Who paused the job, when and why, while it is paused; else `null`. */
  paused: JobPause | null;
}

/**
 * The {@linkcode JobResult} of a `plan` record (`undefined`: none yet).
 *
 * @example
 * ```ts
 * import { jobResultOf } from "@splitlease/splitlease/admin";
 * const r = jobResultOf({ v: 2, term: 1, finality: "final", generation: 1, planned: 3,
 *   outcome: { kind: "allComplete", completed: 2, cancelled: 1 } });
 * console.log(r.state, r.skipped.cancelled); // complete 1
 * ```
 */
export function jobResultOf(plan: PlanRecord | undefined): JobResult {
  const o = plan?.outcome;
  const skipped = {
    cancelled: o && o.kind !== "planFailed" ? o.cancelled ?? 0 : 0,
    quarantined: o?.kind === "stalled" ? o.quarantined : 0,
    permanent: o?.kind === "stalled" ? o.permanent ?? 0 : 0,
  };
  let state: JobResultState;
  if (!plan) state = "new";
  else if (o) state = o.kind === "allComplete" ? "complete" : o.kind;
  else if (plan.paused) state = "paused";
  else state = plan.generation === 0 ? "planning" : "running";
  return { state, outcome: o ?? null, skipped, paused: !o && plan?.paused ? plan.paused : null };
}
