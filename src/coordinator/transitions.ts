/**
 * Pure transitions of a split record (DESIGN §6, §9). Every write of a split
 * record is one of these, applied by compare-and-swap: the epoch moves on
 * every ownership change, so a stale owner's write can never land.
 *
 * @module
 */
import { SplitleaseError } from "../errors.ts";
import type { Owner, SplitProgress, SplitRecord } from "../records.ts";

/** The record of a freshly planned split. */
export function seedRecord(weight: number): SplitRecord {
  return { v: 1, epoch: 0, status: "runnable", owner: null, attempts: 0, weight, progress: null, reservedFor: null };
}

/**
 * Claim: epoch + 1, owner = `me`, reservation cleared. `nonGraceful` (a
 * takeover from a dead owner, a reclaim after a crash) consumes an attempt;
 * at `maxAttempts` the split is quarantined instead of claimed.
 */
export function claimRecord(
  r: SplitRecord,
  me: Owner,
  nonGraceful: boolean,
  maxAttempts: number,
): SplitRecord {
  const attempts = r.attempts + (nonGraceful ? 1 : 0);
  if (attempts >= maxAttempts) {
    return { ...r, epoch: r.epoch + 1, owner: null, attempts, status: "quarantined", reservedFor: null };
  }
  return { ...r, epoch: r.epoch + 1, owner: { ...me }, attempts, reservedFor: null };
}

/** Whether `r` is held by `me` at `epoch`. */
export function heldBy(r: SplitRecord, me: Owner, epoch: number): boolean {
  return r.status === "runnable" && r.epoch === epoch && r.owner !== null &&
    r.owner.instance === me.instance && r.owner.session === me.session;
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
  const merged: SplitProgress = {};
  const wm = progress.watermark ?? prev;
  if (wm !== undefined) merged.watermark = wm;
  const state = progress.state !== undefined ? progress.state : r.progress?.state;
  if (state !== undefined) merged.state = state;
  return final
    ? { ...r, progress: merged, status: "completed", owner: null, reservedFor: null }
    : { ...r, progress: merged };
}

/** Release (graceful): owner none, epoch unchanged, no attempt consumed. */
export function releaseRecord(r: SplitRecord, reservedFor: string | null): SplitRecord {
  return { ...r, owner: null, reservedFor };
}

/** Fail (poison report): attempts + 1, owner none; quarantined at the cap. */
export function failRecord(r: SplitRecord, reason: string, maxAttempts: number): SplitRecord {
  const attempts = r.attempts + 1;
  return {
    ...r,
    owner: null,
    reservedFor: null,
    attempts,
    lastFailure: reason.slice(0, 1000),
    status: attempts >= maxAttempts ? "quarantined" : "runnable",
  };
}

/**
 * Leader fence of an owner that never answered a revocation: epoch + 1 (its
 * late commits can no longer land), owner none, reserved for the thief.
 */
export function fenceRecord(r: SplitRecord, reservedFor: string | null): SplitRecord {
  return { ...r, epoch: r.epoch + 1, owner: null, reservedFor };
}
