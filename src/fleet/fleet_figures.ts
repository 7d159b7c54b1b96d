/**
 * The job-wide figures of a fleet view: its split counts, its rate and ETA,
 * and the summary of what the job did.
 *
 * @module
 */

/**
 * The job-wide rate of a fleet view, from the completion times the split
 * records hold (not from the reader's own samples): splits completed per
 * minute over the last five minutes (or since the job's first tenancy, if
 * shorter), the ETA of the runnable work left at that rate (by weight, each
 * running split counted by the fraction its source estimates done) and a
 * sparkline of completions over the last ten minutes.
 *
 * @example
 * ```ts
 * import type { FleetRate } from "@splitlease/splitlease/admin";
 * const finishesAt = (r: FleetRate) => r.eta.state === "estimated" ? new Date(r.eta.at!).toISOString() : r.eta.state;
 * ```
 */
export interface FleetRate {
  /** The window measured (ms): five minutes, or since the job began if shorter; 0 before any tenancy. */
  windowMs: number;
  /** The earliest tenancy start any record names (the job began running), or `null`. */
  startedAt: number | null;
  /** Splits completed within the window. */
  completedInWindow: number;
  /** The weight of the splits completed within the window (what the rate in weight is computed from). */
  weightInWindow: number;
  /** Splits per minute over the window, or `null` when there is no window yet. */
  perMinute: number | null;
  /** Completed splits whose records hold a completion time. */
  timed: number;
  /** Completed splits whose records hold none (written before tenancies were recorded). */
  untimed: number;
  /** Weight of the runnable work left (running splits less the fraction their source estimates done). */
  remainingWeight: number;
  /** Weight the running splits' estimates count as done. */
  partialWeight: number;
  /**
   * When the runnable work should be done at this rate: `estimated`,
   * `unknown` (nothing completed in the window), `stalled` (only
   * quarantined splits left) or `done`. `thenStalled`: quarantined splits
   * wait behind the runnable work, so the job stalls when it is done unless
   * they are requeued or cancelled.
   */
  eta: { state: "estimated" | "unknown" | "stalled" | "done"; at: number | null; inMs: number | null; thenStalled: boolean };
  /** Completions per bucket (60 of `bucketMs`: the job's life, 1 to 10 minutes), oldest first, the last ending at the view's time. */
  spark: { bucketMs: number; counts: number[] };
}

/**
 * What a job did, from its split records: what its result summary shows
 * (the fleet page once it is done, `splitlease status`). Runs are counted
 * from each split's tenancy history (its last 8 tenancies), so a split that
 * ran more often than that counts its latest runs only. The times are the
 * writers' wall clocks, as in {@linkcode FleetRate}.
 *
 * @example
 * ```ts
 * import type { FleetSummary } from "@splitlease/splitlease/admin";
 * const line = (s: FleetSummary) => `${s.records} records, ${s.retries} retries, ${s.failures} failures, ${s.cuts} cuts`;
 * ```
 */
export interface FleetSummary {
  /** Records the split records count (what the owners reported with the commits that landed), over every split. */
  records: number;
  /** Splits whose records count any (a source that reports no records leaves this 0). */
  splitsWithRecords: number;
  /** Runs that followed a failed or lost run of the same split (the work retried). */
  retries: number;
  /** Runs that ended failed (a `run` that threw, a poison report). */
  failures: number;
  /** Runs whose owner was judged dead or fenced, the split taken over (`lost`). */
  lost: number;
  /** Cuts of running splits' remaining work (each made residual splits of its own). */
  cuts: number;
  /** When the first tenancy on record began, or `null`. */
  startedAt: number | null;
  /** When the latest split completed, or `null`: the job's end once it is done. */
  lastCompletedAt: number | null;
  /** From `startedAt` to `lastCompletedAt` (ms), or `null`: how long the job took, once done. */
  tookMs: number | null;
  /** Splits completed per minute over `tookMs`, or `null`. */
  perMinute: number | null;
  /** Records per second over `tookMs`, or `null` (no records or no time). */
  recordsPerSecond: number | null;
}

/**
 * Job-wide split counts of a fleet view (every split, whatever the filter).
 *
 * @example
 * ```ts
 * import type { FleetCounts } from "@splitlease/splitlease/admin";
 * const done = (c: FleetCounts) => c.completed + c.cancelled === c.total;
 * ```
 */
export interface FleetCounts {
  /** Readable split records. */
  total: number;
  /** Runnable splits, owned or not. */
  runnable: number;
  /** Runnable splits with an owner. */
  owned: number;
  /** Runnable splits without an owner (the backlog): the `unclaimed` of `/status` and the `splits_unclaimed` metric. */
  unclaimed: number;
  /** @deprecated The same as `unclaimed` (its old name), kept for readers of `/fleet`. */
  unowned: number;
  /** Completed splits. */
  completed: number;
  /** Quarantined (poison) splits, parked until requeued. */
  quarantined: number;
  /** Of the quarantined, those quarantined by a permanent failure (requeue them only once their input is fixed). */
  permanent: number;
  /** Cancelled splits (terminal, never run again). */
  cancelled: number;
  /** Unreadable split records. */
  invalid: number;
  /** Total weight of every readable split. */
  weight: number;
  /** Weight of the completed ones. */
  completedWeight: number;
}
