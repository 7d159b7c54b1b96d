/**
 * The counters and histograms a coordinator keeps for metrics
 * (`Coordinator.stats()`, rendered on `/metrics`).
 *
 * @module
 */

/**
 * Counters and histograms a coordinator keeps for metrics.
 *
 * @example
 * ```ts
 * import type { Coordinator } from "@splitlease/splitlease";
 * import type { CoordinatorStats } from "@splitlease/splitlease/admin";
 * declare const c: Coordinator;
 * const stats: CoordinatorStats = c.stats();
 * console.log(stats.selfFences, stats.acquisitions.takeover ?? 0);
 * ```
 */
export interface CoordinatorStats {
  /** Splits gained, by how: `claim` (an offer), `grant` (opened for us), `takeover`/`reclaim`/`handoff` (the grant's reason), `resume` (after a self-fence). */
  acquisitions: Record<string, number>;
  /** Splits lost, by reason. */
  losses: Record<string, number>;
  /** Graceful releases. */
  releases: number;
  /** Revocations by outcome (`requested`, `drained`, `forced`, `cancelled`). */
  revocations: Record<string, number>;
  /** Store writes by outcome (`ok`, `conflict`, `error`). */
  writes: Record<string, number>;
  /** Ownership writes tried (claims of offers, resumes, and a leader's takeovers), won or lost. */
  claimAttempts: number;
  /** Unreadable control records this instance replaced by CAS (a garbage `leader`, `plan`, member or assignment record). */
  recordsReplaced: number;
  /** Failed planner runs (a throw, duplicate ids, an oversized descriptor) on this instance while it led. */
  planFailures: number;
  /** Self-fences (heartbeat starvation). */
  selfFences: number;
  /** Store op latency observations in seconds, by op. */
  storeOpSeconds: Record<string, Histogram>;
  /** Steal requested → thief gained, seconds. */
  handoverSeconds: Histogram;
  /** Cuts of running splits' remaining work: `asked` by this instance while it led, `performed` (a cut of ours landed). */
  cuts: { asked: number; performed: number };
  /**
   * The leader's full passes while this instance led (what its CPU goes
   * on: a pass per ownership or membership change, none per progress commit).
   */
  leaderPasses: number;
}

/**
 * A cumulative histogram (Prometheus style).
 *
 * @example
 * ```ts
 * import { newHistogram, observe } from "@splitlease/splitlease/testing";
 * import { type Histogram } from "@splitlease/splitlease/admin";
 * const h: Histogram = newHistogram();
 * observe(h, 0.004);
 * console.log(h.count); // 1
 * ```
 */
export interface Histogram {
  /** Upper bounds of the buckets, ascending (seconds). */
  buckets: number[];
  /** Cumulative-ready counts per bucket (not cumulative: count per bucket). */
  counts: number[];
  /** Sum of observations. */
  sum: number;
  /** Number of observations. */
  count: number;
}
