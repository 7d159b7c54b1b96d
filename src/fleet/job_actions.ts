/**
 * Operator actions on a whole job: pause and resume. Each is one
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
import { encodeRecord, type JobPause, type PlanRecord, PlanRecordSchema, safeDecodeRecord } from "../records.ts";
import { keys } from "../store/keys.ts";
import type { Store, StoreEntry } from "../store/store.ts";
import { casLoop, type Step, TRIES } from "./actions.ts";

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
