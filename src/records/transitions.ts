/**
 * Pure transitions of a split record (docs/DESIGN.md). Every write of a
 * split record is one of these, applied by compare-and-swap: the epoch moves
 * on every ownership change, so a stale owner's write can never land.
 *
 * @module
 */
import { SplitleaseError } from "../errors.ts";
import { boundStack } from "../util/stack.ts";
import type { Json } from "./layout.ts";
import {
  estimateProblem,
  FAILURE_HISTORY,
  FAILURE_MESSAGE_CHARS,
  FAILURE_STACK_CHARS,
  FAILURE_STACK_LINES,
  type Owner,
  type SplitFailure,
  type SplitProgress,
  type SplitRecord,
  SPLIT_RUN_HISTORY,
  type SplitRun,
  TENANCY_HISTORY,
  type TenancyEnd,
} from "./split.ts";

/**
 * The record's tenancy history after its open tenancy (if any) ended `end`
 * at `at` and, with `to`, a new one began at `epoch` (bounded, oldest
 * dropped first). Times are the writer's wall clock: informational only,
 * never used to decide anything.
 */
export function withTenancy(r: SplitRecord, at: number, end: TenancyEnd | null, to?: { owner: string; epoch: number }): SplitRecord {
  const list = [...(r.tenancies ?? [])];
  const last = list[list.length - 1];
  if (end && last && last.to === undefined) list[list.length - 1] = { ...last, to: at, end };
  if (to) list.push({ epoch: to.epoch, owner: to.owner, from: at });
  if (list.length === 0) return r;
  return { ...r, tenancies: list.slice(-TENANCY_HISTORY) };
}

/** The record of a freshly planned split: the descriptor inline, or `spec: true` when it lives in `spec.<id>`. */
export function seedRecord(weight: number, descriptor: Json | undefined): SplitRecord {
  const r: SplitRecord = { v: 2, epoch: 0, status: "runnable", owner: null, attempts: 0, weight, progress: null };
  if (descriptor === undefined) r.spec = true;
  else r.descriptor = descriptor;
  return r;
}

/**
 * The record of a split planned by a rerun of its job (run `run`): a fresh
 * seed — the planner's descriptor and weight, no owner, no progress, no
 * attempts — at an epoch at least `epochBase` (the highest epoch of the
 * runs before) and at least its own old one, so its first tenancy runs
 * above every tenancy of the runs before (fenced sinks keyed by split and
 * epoch refuse an old run's writes); `prev`, the split's record from an
 * earlier run (if it existed), joins its bounded history of runs.
 */
export function rerunRecord(prev: SplitRecord | undefined, weight: number, descriptor: Json | undefined, run: number, epochBase: number): SplitRecord {
  const r = seedRecord(weight, descriptor);
  r.epoch = Math.max(epochBase, prev?.epoch ?? 0);
  r.run = run;
  const runs = [...(prev?.runs ?? []), ...(prev ? [splitRunOf(prev)] : [])].slice(-SPLIT_RUN_HISTORY);
  if (runs.length) r.runs = runs;
  return r;
}

/** What a split record says its run did: how it ended, its epoch and attempts, records, completion time, last failure. */
export function splitRunOf(r: SplitRecord): SplitRun {
  const out: SplitRun = { run: r.run ?? 1, status: r.status, epoch: r.epoch, attempts: r.attempts };
  if (r.records !== undefined) out.records = r.records;
  const last = r.tenancies?.at(-1);
  if (r.status === "completed" && last?.end === "completed" && last.to !== undefined) out.completedAt = last.to;
  if (r.lastFailure !== undefined) out.lastFailure = r.lastFailure.slice(0, FAILURE_MESSAGE_CHARS);
  if (permanentlyFailed(r)) out.permanent = true;
  return out;
}

/**
 * Opens a new epoch for `to` (or for nobody): a claim (`to` is the writer),
 * a leader's grant, takeover or fence, or a release to a named successor.
 * `charge` (a takeover from a dead owner, a reclaim after a crash) consumes
 * an attempt; at `maxAttempts` the split is quarantined instead.
 */
export function openRecord(r: SplitRecord, to: Owner | null, charge: boolean, maxAttempts: number, at: number = Date.now()): SplitRecord {
  const attempts = r.attempts + (charge ? 1 : 0);
  const end: TenancyEnd | null = r.owner ? (charge ? "lost" : "moved") : null;
  if (attempts >= maxAttempts) return withTenancy({ ...r, epoch: r.epoch + 1, owner: null, attempts, status: "quarantined" }, at, end);
  const next: SplitRecord = { ...r, epoch: r.epoch + 1, owner: to ? { instance: to.instance, session: to.session } : null, attempts };
  return withTenancy(next, at, end, to ? { owner: to.instance, epoch: next.epoch } : undefined);
}

/** Whether `r` is held by `me` at `epoch`. */
export function heldBy(r: SplitRecord, me: Owner, epoch: number): boolean {
  return r.status === "runnable" && r.epoch === epoch && r.owner !== null &&
    r.owner.instance === me.instance && r.owner.session === me.session;
}

/** Whether `r` is owned by `o` (any epoch). */
export function ownedBy(r: SplitRecord, o: Owner): boolean {
  return r.owner !== null && r.owner.instance === o.instance && r.owner.session === o.session;
}

/**
 * Compares watermarks of the same type; throws on a type change.
 * Returns negative, zero or positive like a comparator.
 */
export function compareWatermarks(a: number | string, b: number | string): number {
  if (typeof a !== typeof b) {
    throw new SplitleaseError(
      "INVALID_ARGUMENT",
      `Watermark type changed from ${typeof a} (${JSON.stringify(a)}) to ${typeof b} (${JSON.stringify(b)})`,
    );
  }
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Commit: new progress on a held split; `final` marks it completed and frees
 * it. A watermark below the committed one is a caller error.
 */
export function commitRecord(
  splitId: string,
  r: SplitRecord,
  progress: SplitProgress,
  final: boolean,
  at: number = Date.now(),
  records = 0,
): SplitRecord {
  const prev = r.progress?.watermark;
  if (prev !== undefined && progress.watermark !== undefined && compareWatermarks(prev, progress.watermark) > 0) {
    throw new SplitleaseError(
      "INVALID_ARGUMENT",
      `Watermark of split "${splitId}" would regress from ${JSON.stringify(prev)} to ${
        JSON.stringify(progress.watermark)
      }`,
    );
  }
  const bad = progress.estimate === undefined ? null : estimateProblem(progress.estimate);
  if (bad !== null) {
    throw new SplitleaseError("INVALID_ARGUMENT", `Estimate of split "${splitId}": ${bad} (${JSON.stringify(progress.estimate)})`);
  }
  const merged: SplitProgress = {};
  const wm = progress.watermark ?? prev;
  if (wm !== undefined) merged.watermark = wm;
  const state = progress.state !== undefined ? progress.state : r.progress?.state;
  if (state !== undefined) merged.state = state;
  const estimate = progress.estimate ?? r.progress?.estimate;
  if (estimate !== undefined) merged.estimate = final ? { ...estimate, left: 0 } : estimate;
  if (!(Number.isInteger(records) && records >= 0)) {
    throw new SplitleaseError("INVALID_ARGUMENT", `Records of a commit of split "${splitId}" must be an integer >= 0, got ${records}`);
  }
  const counted = records > 0 ? { records: (r.records ?? 0) + records } : {};
  return final
    ? withTenancy({ ...r, ...counted, progress: merged, status: "completed", owner: null }, at, "completed")
    : { ...r, ...counted, progress: merged };
}

/**
 * Release (graceful, no attempt consumed): to nobody keeps the epoch (the
 * next claim bumps it); to a named successor opens its epoch at once.
 */
export function releaseRecord(r: SplitRecord, to: Owner | null, at: number = Date.now()): SplitRecord {
  const end: TenancyEnd | null = r.owner ? "released" : null;
  if (!to) return withTenancy({ ...r, owner: null }, at, end);
  const next: SplitRecord = { ...r, epoch: r.epoch + 1, owner: { instance: to.instance, session: to.session } };
  return withTenancy(next, at, end, { owner: to.instance, epoch: next.epoch });
}

/**
 * Hand back a split we claimed but cannot run for a reason that is not the
 * split's fault (its spec record missing, perhaps only for now): owner
 * none, no attempt charged; the reason joins the failure history, which is
 * how the leader tells it from a graceful release and backs off.
 */
export function handBackRecord(r: SplitRecord, reason: string, worker: string, at: number): SplitRecord {
  const failure = { at, worker, message: reason.slice(0, FAILURE_MESSAGE_CHARS) };
  const next = { ...r, owner: null, lastFailure: reason.slice(0, 1000), failures: [...(r.failures ?? []), failure].slice(-FAILURE_HISTORY) };
  return withTenancy(next, at, r.owner ? "handedBack" : null);
}

/**
 * Fail (poison report): attempts + 1, owner none; quarantined at the cap —
 * or at once when the failure is `permanent` (the source says no retry can
 * succeed: the attempt that failed is the only one charged, and no backoff
 * follows since a quarantined split is never offered). The report joins
 * the record's bounded failure history (`worker` reported it at wall time
 * `at`, with the first frames of `stack` when given, marked `permanent`).
 */
export function failRecord(
  r: SplitRecord,
  reason: string,
  maxAttempts: number,
  worker: string,
  at: number,
  stack?: string,
  permanent = false,
): SplitRecord {
  const attempts = r.attempts + 1;
  const frames = stack === undefined ? undefined : boundStack(stack, FAILURE_STACK_LINES, FAILURE_STACK_CHARS);
  const failure: SplitFailure = { at, worker, message: reason.slice(0, FAILURE_MESSAGE_CHARS) };
  if (frames !== undefined) failure.stack = frames;
  if (permanent) failure.permanent = true;
  const next: SplitRecord = {
    ...r,
    owner: null,
    attempts,
    lastFailure: reason.slice(0, 1000),
    failures: [...(r.failures ?? []), failure].slice(-FAILURE_HISTORY),
    status: permanent || attempts >= maxAttempts ? "quarantined" : "runnable",
  };
  return withTenancy(next, at, r.owner ? "failed" : null);
}

/**
 * Whether a quarantined record was quarantined by a permanent failure (its
 * last failure says so): what the fleet view, `splits`, the page and the
 * outcome's `permanent` count show. A requeued split keeps the history but
 * is no longer quarantined, so it does not count.
 */
export function permanentlyFailed(r: SplitRecord): boolean {
  return r.status === "quarantined" && r.failures?.at(-1)?.permanent === true;
}
