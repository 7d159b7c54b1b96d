/**
 * How far each running split is, for the cut ranking (docs/DESIGN.md,
 * "Stragglers: cutting a running split"): progress commits go to `prog.<id>` records no leader
 * watches, so the estimates a member's heartbeat carries for the splits it
 * runs are where the leader learns how much work is left of each, and how
 * fast it drops. Kept by the `LeaderView` beside the records.
 *
 * @module
 */
import type { SplitRecord } from "../../records.ts";

/** Work left of a split by its record alone: its weight × the fraction its last estimate leaves (all of it without one). */
export function workLeftOf(r: SplitRecord): number {
  const e = r.progress?.estimate;
  return e && e.total > 0 ? r.weight * Math.min(1, Math.max(0, e.left / e.total)) : r.weight;
}

/**
 * Running splits whose owner reports an estimate: the last one, when it
 * came (the leader's clock), and how fast it drops (an exponential average
 * of the drops between estimates).
 *
 * @example
 * ```ts ignore
 * const pace = new SplitPace(() => clock.now());
 * pace.note("s", record, { left: 50, total: 100 });
 * pace.workLeft("s", record, clock.now() + 500); // less than half of its weight, at the pace it fell
 * ```
 */
export class SplitPace {
  readonly #now: () => number;
  readonly #pace = new Map<string, { left: number; total: number; at: number; rate: number }>();

  constructor(now: () => number) {
    this.#now = now;
  }

  /**
   * Work left of split `id` (its record `r`) at `now`, in weight units: its
   * weight × the fraction its last estimate leaves, less what its owner got
   * through since at the pace its estimates fell (by its record alone
   * without an estimate). A split ranked by a stale estimate was asked to
   * be cut at its very end.
   */
  workLeft(id: string, r: SplitRecord, now: number): number {
    const p = this.#pace.get(id);
    if (!p) return workLeftOf(r);
    const left = Math.max(0, p.left - p.rate * Math.max(0, now - p.at));
    return r.weight * Math.min(1, left / p.total);
  }

  /** Notes an estimate of running split `id` (record `r`): its pace from the one before. */
  note(id: string, r: SplitRecord | undefined, e: { left: number; total: number } | undefined): void {
    if (!r || r.status !== "runnable" || !r.owner || !e || !(e.total > 0)) return void this.#pace.delete(id);
    const now = this.#now();
    const p = this.#pace.get(id);
    if (!p || p.total !== e.total || e.left > p.left) return void this.#pace.set(id, { left: e.left, total: e.total, at: now, rate: 0 });
    const dt = now - p.at;
    const rate = dt > 0 ? (p.left - e.left) / dt : p.rate;
    this.#pace.set(id, { left: e.left, total: e.total, at: now, rate: p.rate === 0 ? rate : 0.7 * p.rate + 0.3 * rate });
  }

  /** `id` has a new tenancy, or none: its pace starts over. */
  forget(id: string): void {
    this.#pace.delete(id);
  }
}
