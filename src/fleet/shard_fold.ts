/**
 * A sharded job's one outcome, standing and history from its shards' (pure;
 * docs/OPERATIONS.md, "Sharding a job"): each shard's leader decides its
 * shard's outcome in its own `plan` record, and an operator's surfaces —
 * `status`, `wait`, `jobs`, the fleet page — say one thing of the job by the
 * rule its members announce it by (`src/coordinator/shard_outcome.ts`):
 * complete once every shard is, stalled once every shard has an outcome and
 * one stalled, failed as soon as one shard's planning failed.
 *
 * @module
 */
import type { JobOutcome, JobRun } from "../records.ts";
import type { JobResult, JobResultState } from "./job_result.ts";

/**
 * The job's outcome from each shard's (`undefined`: that shard has none
 * yet): `undefined` until every shard has one, unless a shard's planning
 * failed (that shard never plans its part: the job cannot complete).
 * Completed, cancelled, quarantined and permanent are summed.
 *
 * @example
 * ```ts
 * import { foldOutcomes } from "@splitlease/splitlease/admin";
 * const o = foldOutcomes([{ kind: "allComplete", completed: 3 }, { kind: "stalled", completed: 2, quarantined: 1 }]);
 * console.log(o); // { kind: "stalled", completed: 5, quarantined: 1 }
 * ```
 */
export function foldOutcomes(outcomes: readonly (JobOutcome | null | undefined)[]): JobOutcome | undefined {
  const failed = outcomes.find((o) => o?.kind === "planFailed");
  if (failed) return failed;
  if (outcomes.length === 0 || outcomes.some((o) => !o)) return undefined;
  let completed = 0, cancelled = 0, quarantined = 0, permanent = 0, stalled = false;
  for (const o of outcomes as Exclude<JobOutcome, { kind: "planFailed" }>[]) {
    completed += o.completed;
    cancelled += o.cancelled ?? 0;
    if (o.kind === "stalled") {
      stalled = true;
      quarantined += o.quarantined;
      permanent += o.permanent ?? 0;
    }
  }
  const skipped = cancelled > 0 ? { cancelled } : {};
  if (!stalled) return { kind: "allComplete", completed, ...skipped };
  return { kind: "stalled", completed, quarantined, ...skipped, ...(permanent > 0 ? { permanent } : {}) };
}

/**
 * The shards a job's outcome names: the stalled ones of a stall, the one
 * whose planning failed; none for a complete job or one without an outcome.
 *
 * @example
 * ```ts
 * import { outcomeShards } from "@splitlease/splitlease/admin";
 * console.log(outcomeShards([{ kind: "allComplete", completed: 3 }, { kind: "stalled", completed: 2, quarantined: 1 }])); // [1]
 * ```
 */
export function outcomeShards(outcomes: readonly (JobOutcome | null | undefined)[]): number[] {
  const failed = outcomes.findIndex((o) => o?.kind === "planFailed");
  if (failed >= 0) return [failed];
  if (outcomes.some((o) => !o)) return [];
  return outcomes.flatMap((o, i) => (o!.kind === "stalled" ? [i] : []));
}

/** From the worst standing to the best: a job stands where its least advanced shard does. */
const BEHIND: JobResultState[] = ["paused", "new", "planning", "running"];

/**
 * A sharded job's {@linkcode JobResult} from each shard's: the folded
 * outcome once there is one; else paused while any shard is (a member
 * hands back its lanes in every shard once one is paused), else where the
 * least advanced shard stands (`new` only while no shard has a plan).
 *
 * @example
 * ```ts
 * import { foldResults, jobResultOf } from "@splitlease/splitlease/admin";
 * const r = foldResults([jobResultOf(undefined), jobResultOf({ v: 2, term: 1, finality: "final", generation: 1, planned: 4 })]);
 * console.log(r.state); // "planning": one shard has no plan yet
 * ```
 */
export function foldResults(results: readonly JobResult[]): JobResult {
  const outcome = foldOutcomes(results.map((r) => r.outcome));
  const skipped = {
    cancelled: outcome && outcome.kind !== "planFailed" ? outcome.cancelled ?? 0 : 0,
    quarantined: outcome?.kind === "stalled" ? outcome.quarantined : 0,
    permanent: outcome?.kind === "stalled" ? outcome.permanent ?? 0 : 0,
  };
  let state: JobResultState;
  if (outcome) state = outcome.kind === "allComplete" ? "complete" : outcome.kind;
  else if (results.every((r) => r.state === "new")) state = "new";
  else {
    // Shards with an outcome wait for the others: the job stands where the others do.
    const open = results.map((r) => r.state).filter((s) => BEHIND.includes(s));
    state = BEHIND.find((s) => open.includes(s)) ?? "running";
    if (state === "new") state = "planning";
  }
  const paused = state === "paused" ? results.find((r) => r.paused)?.paused ?? null : null;
  return { state, outcome: outcome ?? null, skipped, paused };
}

/**
 * A sharded job's earlier runs from each shard's plan-record history: the
 * runs shard 0 kept (a rerun reruns every shard), each with the outcomes,
 * counts and times of that run in every shard that kept it folded in.
 *
 * @example
 * ```ts
 * import { foldRuns } from "@splitlease/splitlease/admin";
 * const a = { run: 1, outcome: { kind: "allComplete" as const, completed: 2 }, planned: 2, finishedAt: 20, startedAt: 5 };
 * const b = { run: 1, outcome: { kind: "allComplete" as const, completed: 3 }, planned: 3, finishedAt: 30, startedAt: 4 };
 * console.log(foldRuns([[a], [b]])[0].planned); // 5
 * ```
 */
export function foldRuns(histories: readonly (readonly JobRun[])[]): JobRun[] {
  const [first = [], ...rest] = histories;
  return first.map((r) => {
    const same = [r, ...rest.flatMap((h) => h.filter((x) => x.run === r.run))];
    const sum = (k: "records" | "failures" | "retries") =>
      same.some((x) => x[k] !== undefined) ? { [k]: same.reduce((n, x) => n + (x[k] ?? 0), 0) } : {};
    const starts = same.flatMap((x) => (x.startedAt === undefined ? [] : [x.startedAt]));
    const finishedAt = Math.max(...same.map((x) => x.finishedAt));
    const run: JobRun = {
      run: r.run,
      outcome: foldOutcomes(same.map((x) => x.outcome)) ?? r.outcome,
      planned: same.reduce((n, x) => n + x.planned, 0),
      finishedAt,
      ...sum("records"),
      ...sum("failures"),
      ...sum("retries"),
    };
    if (starts.length) run.startedAt = Math.min(...starts);
    if (run.startedAt !== undefined && same.some((x) => x.tookMs !== undefined)) run.tookMs = Math.max(0, finishedAt - run.startedAt);
    return run;
  });
}
