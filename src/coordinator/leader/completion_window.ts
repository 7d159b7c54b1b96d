/**
 * The job-wide completion rate the leader publishes on its beat
 * (`JobCounts.rate`), from the completion times in the split records it
 * indexes — the same times a fleet view's rate is computed from
 * (`src/fleet/fleet_rate.ts`), so `splitlease status` and `wait` on a job
 * of a million splits show a rate and an ETA without reading its records.
 * Completions are summed in one-second buckets of the completers' wall
 * clocks over the last five minutes: O(1) memory and O(1) work per
 * completion, whatever the number of splits. A new leader fills them from
 * its first snapshot (every completed record passes through its index),
 * so the rate survives a failover.
 *
 * @module
 */
import type { SplitRecord } from "../../records.ts";

/** The window a rate is measured over (five minutes, as a fleet view's). */
export const COMPLETION_WINDOW_MS = 5 * 60_000;
const BUCKET_MS = 1000;
const BUCKETS = COMPLETION_WINDOW_MS / BUCKET_MS + 10;

/** Splits completed within a window and their weight, as a beat carries them (`JobCounts.rate`). */
export interface CompletionRate {
  /** The leader's wall clock when it was measured. */
  at: number;
  /** The window (ms): five minutes, or since `since` if shorter; 0 before any tenancy. */
  ms: number;
  /** Splits completed within it. */
  n: number;
  /** Their weight. */
  w: number;
  /** The earliest tenancy start any indexed record names, or `null`. */
  since: number | null;
}

/**
 * Completions in one-second buckets over the last five minutes (a ring:
 * each slot remembers which second it counts, so a stale slot is reset,
 * never summed).
 *
 * @example
 * ```ts ignore
 * const w = new CompletionWindow();
 * w.saw(record); // every record the view indexes
 * w.rate(Date.now()); // { at, ms, n, w, since }
 * ```
 */
export class CompletionWindow {
  readonly #second = new Float64Array(BUCKETS).fill(-1);
  readonly #n = new Float64Array(BUCKETS);
  readonly #w = new Float64Array(BUCKETS);
  #since: number | null = null;

  /**
   * Notes a split record the view indexes: the earliest tenancy start, and,
   * for a completed one, its completion (its last tenancy's end) and weight.
   * Records indexed again without a new completion are not indexed twice by
   * the view (a change of nothing it decides on moves no index).
   */
  saw(r: SplitRecord): void {
    const ts = r.tenancies;
    if (!ts || ts.length === 0) return;
    for (const t of ts) if (this.#since === null || t.from < this.#since) this.#since = t.from;
    const last = ts[ts.length - 1];
    if (r.status !== "completed" || last.end !== "completed" || last.to === undefined) return;
    const second = Math.floor(last.to / BUCKET_MS);
    const slot = ((second % BUCKETS) + BUCKETS) % BUCKETS;
    if (this.#second[slot] > second) return; // older than the ring reaches
    if (this.#second[slot] < second) (this.#second[slot] = second, this.#n[slot] = 0, this.#w[slot] = 0);
    this.#n[slot]++;
    this.#w[slot] += r.weight;
  }

  /** The completions of the window ending at `now` (wall clock); a completer's clock ahead of ours (by up to ten seconds) counts too. */
  rate(now: number): CompletionRate {
    const ms = this.#since === null ? 0 : Math.round(Math.max(0, Math.min(COMPLETION_WINDOW_MS, now - this.#since)));
    const from = Math.floor((now - COMPLETION_WINDOW_MS) / BUCKET_MS);
    let n = 0, w = 0;
    if (ms > 0) {
      for (let i = 0; i < BUCKETS; i++) {
        if (this.#second[i] >= from) (n += this.#n[i], w += this.#w[i]);
      }
    }
    return { at: Math.round(now), ms, n, w, since: this.#since };
  }
}
