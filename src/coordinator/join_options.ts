/**
 * The options a member joins a job with: the store, the job, its identity,
 * planner, clock, randomness and logger, and the tunables.
 *
 * @module
 */
import type { Store } from "../store/store.ts";
import type { CoordinatorTunables } from "./config.ts";
import type { Clock, Planner } from "./types.ts";
import type { Logger } from "../util/logger.ts";

/**
 * Options of {@linkcode SplitCoordinator.join}.
 *
 * @example
 * ```ts
 * import { MemoryStore, SplitCoordinator, type JoinOptions } from "@splitlease/splitlease";
 * const options: JoinOptions = { store: new MemoryStore(), job: "backfill", instance: "pod-1", leaseMs: 15000 };
 * const c = await SplitCoordinator.join(options);
 * await c.close();
 * ```
 */
export interface JoinOptions extends CoordinatorTunables {
  /** The coordination store (shared by the whole fleet). */
  store: Store;
  /** Job name. */
  job: string;
  /** Instance id (pod name); generated when absent. */
  instance?: string;
  /** Job fingerprint; a bucket holding another fingerprint is refused (default: the job name). */
  fingerprint?: string;
  /** Planner; members with one are preferred as leader, and only a leader with one plans. */
  planner?: Planner;
  /** Clock (default: the system clock). */
  clock?: Clock;
  /** Randomness in [0, 1) (default `Math.random`). */
  random?: () => number;
  /** Structured logger (default: silent). */
  logger?: Logger;
  /** Runtime name advertised on the member record. */
  runtime?: string;
  /**
   * Elect a leader while the job is stalled (default `false`: a finished job
   * needs no leader). For a member that stays in a stalled job (serve's
   * `afterStall: "wait"`): it then leads the stall once the leader left, so
   * the job-wide gauges (`splits_quarantined`, `job_stalled`) stay exported.
   */
  leadWhileStalled?: boolean;
  /**
   * The shard this coordinator is of a sharded job (set by
   * {@linkcode ShardedCoordinator}, which joins one per shard; absent: an
   * unsharded job).
   */
  shard?: ShardSeat;
}

/**
 * A shard coordinator's seat in a sharded job (docs/DESIGN.md, "Sharded
 * jobs"): which shard, of how many, and the lanes of the member's
 * `maxInFlight` its other shards hold — the lane budget they share.
 *
 * @example
 * ```ts
 * import type { ShardSeat } from "@splitlease/splitlease/admin";
 * const seat: ShardSeat = { index: 1, count: 4, lanesElsewhere: () => 0, onChange: () => () => {} };
 * ```
 */
export interface ShardSeat {
  /** Which shard (0 .. count - 1). */
  index: number;
  /** The job's shard count. */
  count: number;
  /** Lanes busy in the job's other shards now (held, being claimed or started). */
  lanesElsewhere(): number;
  /** Calls `listener` when `lanesElsewhere()` may have changed; returns the unsubscribe. */
  onChange(listener: () => void): () => void;
  /**
   * Whether the member has joined every shard (absent: it has). Until then
   * the shard stands in no election: a join that fails in another shard
   * would have taken a leader term here for nothing. `onChange` listeners are
   * called when it becomes true.
   */
  joined?(): boolean;
}
