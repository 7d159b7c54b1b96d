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
import type { ProgRecord } from "./prog.ts";
import type { Owner } from "./owner.ts";
import type { SplitRecord } from "./split.ts";
import { FAILURE_HISTORY, FAILURE_MESSAGE_CHARS, FAILURE_STACK_CHARS, FAILURE_STACK_LINES, type SplitFailure } from "./split_failure.ts";
import { estimateProblem, type SplitProgress } from "./split_progress.ts";
import { SPLIT_RUN_HISTORY, type SplitRun } from "./split_run.ts";
import { TENANCY_HISTORY, type TenancyEnd } from "./split_tenancy.ts";

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

/**
 * What a tenancy that ends leaves its successor, when it can vouch for it:
 * its last committed progress (and records), with no progress write of its
 * own in flight and every older tenancy already unable to write the
 * progress record (it started past `closed`, or fenced that record). A
 * terminal write given it sets `closed` past the tenancy's epoch, so the
 * next tenancy starts from this progress without a fence.
 */
export interface Settled {
  /** The progress its last landed commit wrote (or the progress it started from). */
  progress: SplitProgress | null;
  /** The records total its last landed commit wrote. */
  records?: number;
  /** The revision of the progress record as it left it (0: none; absent: the record's own `prog` stands). */
  rev?: number;
}

/** `r` with `s` applied (see {@linkcode Settled}), at epoch `epoch` of the tenancy that settles it. */
function settle(r: SplitRecord, epoch: number, s: Settled | undefined): SplitRecord {
  if (!s) return r;
  const next: SplitRecord = { ...r, progress: s.progress, closed: epoch + 1 };
  if (s.records !== undefined && s.records > 0) next.records = s.records;
  const rev = s.rev ?? r.prog ?? 0;
  if (rev > 0) next.prog = rev;
  else delete next.prog;
  return next;
}

/**
 * The record of a freshly planned split: the descriptor inline, or `spec:
 * true` when it lives in `spec.<id>`. Nobody held it: its first tenancy (at
 * epoch 1) starts without fencing the progress record.
 */
export function seedRecord(weight: number, descriptor: Json | undefined): SplitRecord {
  const r: SplitRecord = { v: 2, epoch: 0, status: "runnable", owner: null, attempts: 0, weight, progress: null, closed: 1 };
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
  // Its progress record, if any, is an older run's: below `closed`, nothing of it is carried (see `ProgHold.closed`).
  r.closed = r.epoch + 1;
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
 * Commit: new progress over the last committed one (`r.progress`); `final`
 * marks it completed and frees it. A watermark below the committed one is a
 * caller error. Progress commits write it into the split's progress record
 * (see {@linkcode progRecord}); a final commit into the split record, over
 * the tenancy's last committed progress.
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
 * `settled` (see {@linkcode Settled}) lets the next tenancy start without a
 * fence.
 */
export function releaseRecord(r: SplitRecord, to: Owner | null, at: number = Date.now(), settled?: Settled): SplitRecord {
  const end: TenancyEnd | null = r.owner ? "released" : null;
  const base = settle(r, r.epoch, settled);
  if (!to) return withTenancy({ ...base, owner: null }, at, end);
  const next: SplitRecord = { ...base, epoch: r.epoch + 1, owner: { instance: to.instance, session: to.session } };
  return withTenancy(next, at, end, { owner: to.instance, epoch: next.epoch });
}

/**
 * Hand back a split we claimed but cannot run for a reason that is not the
 * split's fault (its spec record missing, perhaps only for now): owner
 * none, no attempt charged; the reason joins the failure history, which is
 * how the leader tells it from a graceful release and backs off.
 */
export function handBackRecord(r: SplitRecord, reason: string, worker: string, at: number, settled?: Settled): SplitRecord {
  const failure = { at, worker, message: reason.slice(0, FAILURE_MESSAGE_CHARS) };
  const next = { ...settle(r, r.epoch, settled), owner: null, lastFailure: reason.slice(0, 1000), failures: [...(r.failures ?? []), failure].slice(-FAILURE_HISTORY) };
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
  settled?: Settled,
  permanent = false,
): SplitRecord {
  const attempts = r.attempts + 1;
  const frames = stack === undefined ? undefined : boundStack(stack, FAILURE_STACK_LINES, FAILURE_STACK_CHARS);
  const failure: SplitFailure = { at, worker, message: reason.slice(0, FAILURE_MESSAGE_CHARS) };
  if (frames !== undefined) failure.stack = frames;
  if (permanent) failure.permanent = true;
  const next: SplitRecord = {
    ...settle(r, r.epoch, settled),
    owner: null,
    attempts,
    lastFailure: reason.slice(0, 1000),
    failures: [...(r.failures ?? []), failure].slice(-FAILURE_HISTORY),
    status: permanent || attempts >= maxAttempts ? "quarantined" : "runnable",
  };
  return withTenancy(next, at, r.owner ? "failed" : null);
}

/**
 * Whether a tenancy opening epoch `epoch` of `r` must fence the split's
 * progress record before it starts: some older tenancy may still land a
 * write there (it was taken over, fenced, or ended with a write in flight).
 */
export function mustFence(r: SplitRecord, epoch: number): boolean {
  return (r.closed ?? 0) < epoch;
}

/**
 * The progress record a tenancy at `epoch` owned by `owner` writes: a
 * commit's progress over its last committed one (`prev`, checked and merged
 * by {@linkcode commitRecord}'s rules), or, for a fence, the progress it
 * carries over unchanged.
 */
export function progRecord(
  splitId: string,
  owner: Owner,
  epoch: number,
  prev: { progress: SplitProgress | null; records?: number },
  progress: SplitProgress | null,
  records = 0,
  cuts?: number,
): ProgRecord {
  let merged = prev.progress;
  let total = prev.records ?? 0;
  if (progress !== null) {
    const base: SplitRecord = { v: 2, epoch, status: "runnable", owner, attempts: 0, weight: 1, progress: prev.progress };
    if (prev.records !== undefined) base.records = prev.records;
    const c = commitRecord(splitId, base, progress, false, 0, records);
    merged = c.progress;
    total = c.records ?? 0;
  }
  const p: ProgRecord = { v: 2, epoch, owner: { instance: owner.instance, session: owner.session }, progress: merged };
  if (total > 0) p.records = total;
  if (cuts !== undefined && cuts > 0) p.cuts = cuts;
  return p;
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
