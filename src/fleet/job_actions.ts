/**
 * Operator actions on a whole job: pause, resume and rerun. Each is one
 * compare-and-swap of the `plan` record at the revision just read, retried
 * (after a fresh read) only while the action still applies, as the split
 * and member actions are (`actions.ts`, `casLoop`); a lost race or a job in
 * another state is a result value, never an exception.
 *
 * Why the plan record (docs/DESIGN.md, "Operator writes"): every member and
 * the leader already watch it, so a pause reaches the whole fleet in one
 * delivery with no new watch, key or consumer; it is durable, so it
 * survives a leader change and a restart of every process; and the
 * leader's own writes of it (a term bump, a publish, an outcome) are CAS
 * writes of the record as read, so none can drop the pause or decide an
 * outcome across it: an outcome confirmed before the pause loses its CAS.
 *
 * @module
 */
import {
  encodeRecord,
  JOB_RUN_HISTORY,
  type JobPause,
  type JobRun,
  type PlanRecord,
  PlanRecordSchema,
  safeDecodeRecord,
  SplitRecordSchema,
} from "../records.ts";
import { keys } from "../store/keys.ts";
import type { Store, StoreEntry } from "../store/store.ts";
import { casLoop, type Step, TRIES } from "./actions.ts";
import { buildFleetView } from "./fleet_view.ts";
import { readFleetSnapshot } from "./read_fleet.ts";

/**
 * What {@linkcode pauseJob} did.
 *
 * @example
 * ```ts
 * import type { PauseResult } from "@splitlease/splitlease/admin";
 * const ok = (r: PauseResult) => r.outcome === "paused" || r.outcome === "alreadyPaused";
 * ```
 */
export type PauseResult =
  | { outcome: "paused" | "alreadyPaused"; paused: JobPause; message: string }
  | { outcome: "finished" | "notFound" | "unreadable" | "conflict"; message: string };

/**
 * What {@linkcode resumeJob} did.
 *
 * @example
 * ```ts
 * import type { ResumeResult } from "@splitlease/splitlease/admin";
 * const ok = (r: ResumeResult) => r.outcome === "resumed" || r.outcome === "notPaused";
 * ```
 */
export type ResumeResult =
  | { outcome: "resumed"; pausedForMs: number; message: string }
  | { outcome: "notPaused" | "notFound" | "unreadable" | "conflict"; message: string };

/** The plan record read, or the answer when there is none to act on. */
function readPlan<R>(cur: StoreEntry | undefined, none: (o: "notFound" | "unreadable", m: string) => R): { plan: PlanRecord } | { done: R } {
  if (!cur) return { done: none("notFound", "The job has no plan record yet (no leader has run): start its workers first") };
  const r = safeDecodeRecord(cur.key, cur.value, PlanRecordSchema);
  if (!r.ok) return { done: none("unreadable", r.error.message) };
  return { plan: r.value };
}

/**
 * Pauses a job: the leader deals nothing new, every member hands back the
 * splits it runs (each lane revoked: its source commits its tail and
 * returns, forced after `drainDeadlineMs`; released to nobody, no attempt
 * charged) and claims nothing, and no outcome is decided, until
 * {@linkcode resumeJob}. `by` and `reason` are kept in the record (`reason`
 * cut to 500 characters). A finished job (one with an outcome) is not
 * paused.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { pauseJob } from "@splitlease/splitlease/admin";
 * const r = await pauseJob(new MemoryStore(), { by: "ops", reason: "database incident" });
 * console.log(r.outcome); // "notFound": no job in this store
 * ```
 */
export function pauseJob(store: Store, options: { by?: string; reason?: string } = {}): Promise<PauseResult> {
  const conflict = (): PauseResult => ({ outcome: "conflict", message: `The plan record kept changing while pausing (${TRIES} tries); retry` });
  return casLoop<PauseResult>(store, keys.plan, (cur): Step<PauseResult> => {
    const read = readPlan(cur, (outcome, message): PauseResult => ({ outcome, message }));
    if ("done" in read) return read;
    const plan = read.plan;
    if (plan.outcome) {
      return { done: { outcome: "finished", message: `The job is finished (${plan.outcome.kind}): there is nothing to pause` } };
    }
    if (plan.paused) {
      return { done: { outcome: "alreadyPaused", paused: plan.paused, message: `The job is already paused (since ${new Date(plan.paused.at).toISOString()})` } };
    }
    const paused: JobPause = { at: Date.now() };
    if (options.by) paused.by = options.by.slice(0, 200);
    if (options.reason) paused.reason = options.reason.slice(0, 500);
    return {
      write: encodeRecord({ ...plan, paused }),
      ok: () => ({
        outcome: "paused",
        paused,
        message: "Job paused: the leader deals nothing new and every member hands back what it runs; resume to continue",
      }),
    };
  }, conflict);
}

/**
 * Resumes a paused job: the leader deals again (the splits handed back
 * first, each from its last commit) and members claim again.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { resumeJob } from "@splitlease/splitlease/admin";
 * const r = await resumeJob(new MemoryStore());
 * console.log(r.outcome); // "notFound"
 * ```
 */
export function resumeJob(store: Store): Promise<ResumeResult> {
  const conflict = (): ResumeResult => ({ outcome: "conflict", message: `The plan record kept changing while resuming (${TRIES} tries); retry` });
  return casLoop<ResumeResult>(store, keys.plan, (cur): Step<ResumeResult> => {
    const read = readPlan(cur, (outcome, message): ResumeResult => ({ outcome, message }));
    if ("done" in read) return read;
    const { paused, ...plan } = read.plan;
    if (!paused) return { done: { outcome: "notPaused", message: "The job is not paused" } };
    const pausedForMs = Math.max(0, Date.now() - paused.at);
    return {
      write: encodeRecord(plan),
      ok: () => ({ outcome: "resumed", pausedForMs, message: `Job resumed after ${Math.round(pausedForMs / 1000)} s paused` }),
    };
  }, conflict);
}

/**
 * What {@linkcode rerunJob} did: `rerun` started run `run` (the previous
 * one is `previous`, as kept in the plan record's history); `running` (no
 * outcome yet: a job is rerun only once it finished), `planFailed` (restart
 * its workers instead: the next leader plans again), `notFound`,
 * `unreadable` or `conflict` did nothing.
 *
 * @example
 * ```ts
 * import type { RerunResult } from "@splitlease/splitlease/admin";
 * const started = (r: RerunResult) => r.outcome === "rerun" ? r.run : null;
 * ```
 */
export type RerunResult =
  | { outcome: "rerun"; run: number; previous: JobRun; epochBase: number; message: string }
  | { outcome: "running" | "planFailed" | "notFound" | "unreadable" | "conflict"; message: string };

/**
 * Runs a finished job again under its name: a new run (generation) of the
 * same job. Its outcome and what it did (records, failures, retries, how
 * long it took) go to the plan record's history, the plan is reset (no
 * outcome, nothing published: the next leader runs the planner again), and
 * every split record of the new run will start above the highest epoch the
 * old runs reached (`epochBase`), so fenced sinks refuse an old run's late
 * writes. The split records themselves are rewritten by the new run's
 * leader as it seeds them, each keeping what it did in the runs before
 * (`SplitRecord.runs`); records the new run does not plan are removed at
 * its first publish. Refused while the job runs (no outcome), and for a
 * failed plan (restart the workers: the next leader plans again).
 *
 * It writes only the plan record, by CAS at the revision read before the
 * split records were listed: a requeue or cancel that lands meanwhile
 * rewrites the plan record too, and the rerun reads again.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { rerunJob } from "@splitlease/splitlease/admin";
 * const r = await rerunJob(new MemoryStore());
 * console.log(r.outcome); // "notFound"
 * ```
 */
export async function rerunJob(store: Store): Promise<RerunResult> {
  for (let i = 0; i < TRIES; i++) {
    const cur = await store.get(keys.plan);
    const read = readPlan(cur, (outcome, message): RerunResult => ({ outcome, message }));
    if ("done" in read) return read.done;
    const plan = read.plan;
    const o = plan.outcome;
    if (!o) return { outcome: "running", message: "The job has no outcome yet (it runs, or is paused): rerun it once it finished" };
    if (o.kind === "planFailed") {
      return { outcome: "planFailed", message: "The job's planning failed: fix the planner and restart its workers (the next leader plans again)" };
    }
    // What the run did, from its split records; and the highest epoch any of them reached.
    const snapshot = await readFleetSnapshot(store);
    let epochBase = plan.epochBase ?? 0, runnable = false;
    for (const e of snapshot.splits) {
      const r = safeDecodeRecord(e.key, e.value, SplitRecordSchema);
      if (!r.ok) continue; // an unreadable record's epoch is unknown: its split is never written over, and blocks the outcome
      epochBase = Math.max(epochBase, r.value.epoch);
      for (const x of r.value.residuals ?? []) epochBase = Math.max(epochBase, x.epoch ?? 0);
      if (r.value.status === "runnable") runnable = true;
    }
    if (runnable) return { outcome: "running", message: "A split of the job is runnable again (requeued?): rerun it once it finished" };
    const summary = buildFleetView(snapshot, { limit: 1 }).summary;
    const run = plan.run ?? 1;
    const previous: JobRun = { run, outcome: o, planned: plan.planned, finishedAt: summary.lastCompletedAt ?? Date.now() };
    if (summary.startedAt !== null) previous.startedAt = summary.startedAt;
    if (summary.splitsWithRecords > 0) previous.records = summary.records;
    if (summary.failures > 0) previous.failures = summary.failures;
    if (summary.retries > 0) previous.retries = summary.retries;
    if (summary.tookMs !== null) previous.tookMs = summary.tookMs;
    // The new run plans its own pages from page 0 (the old ones are no plan's then, and are written over).
    const { outcome: _o, cursor: _c, publishedAt: _p, paused: _z, pages: _g, pageTerms: _t, ...kept } = plan;
    const next: PlanRecord = {
      ...kept,
      generation: 0,
      planned: 0,
      run: run + 1,
      epochBase,
      history: [...(plan.history ?? []), previous].slice(-JOB_RUN_HISTORY),
    };
    const w = await store.update(keys.plan, encodeRecord(next), cur!.revision);
    if (w.ok) {
      return {
        outcome: "rerun",
        run: run + 1,
        previous,
        epochBase,
        message: `Run ${run + 1} of the job started (run ${run}, ${o.kind}, is kept in its history): its leader plans again once a worker runs`,
      };
    }
  }
  return { outcome: "conflict", message: `The plan record kept changing while rerunning (${TRIES} tries); retry` };
}
