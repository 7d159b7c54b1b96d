/**
 * What `Coordinator.status()` returns: one coordinator's `/status` snapshot,
 * the splits it holds and, of a sharded job, each shard's line. Apart from
 * the `Coordinator` interface because the status builders, the metrics and
 * the CLI read these shapes alone.
 *
 * @module
 */
import type { SplitProgress } from "../records.ts";

/**
 * A held split as shown by {@linkcode CoordinatorStatus}.
 *
 * @example
 * ```ts
 * import type { Coordinator } from "@splitlease/splitlease";
 * import type { HeldSplitStatus } from "@splitlease/splitlease/host";
 * declare const c: Coordinator;
 * const held: HeldSplitStatus[] = c.status().held;
 * for (const h of held) console.log(h.id, h.epoch, h.progress?.watermark);
 * ```
 */
export interface HeldSplitStatus {
  /** The split this member holds. */
  id: string;
  /** Current epoch (fencing token). */
  epoch: number;
  /** Relative cost as planned (lowered by a cut); the balancer evens weight, not counts. */
  weight: number;
  /** Last committed progress. */
  progress: SplitProgress | null;
  /** Whether a revocation is in progress. */
  draining: boolean;
}

/**
 * A `/status`-ready snapshot of one coordinator.
 *
 * @example
 * ```ts
 * import type { Coordinator, CoordinatorStatus } from "@splitlease/splitlease";
 * declare const c: Coordinator;
 * const s: CoordinatorStatus = c.status();
 * console.log(s.held.length, s.counts.unclaimed, s.quarantined);
 * ```
 */
export interface CoordinatorStatus {
  /** This process's stable name in the fleet (a restart under the same name reclaims its splits at once). */
  instance: string;
  /** This process's session nonce. */
  session: string;
  /** The job this member works on (its bucket is `splitlease_<job>`). */
  job: string;
  /** `starting`, `running`, `draining`, `stopped` or `failed`. */
  state: "starting" | "running" | "draining" | "stopped" | "failed";
  /** Whether the last heartbeat succeeded recently. */
  connected: boolean;
  /** Whether this instance is the leader. */
  isLeader: boolean;
  /** The current leader as observed, if any. */
  leader: { instance: string; term: number; alive: boolean } | null;
  /** The published plan, if any. */
  plan: { term: number; finality: "open" | "final"; generation: number; planned: number } | null;
  /**
   * The job is paused (the plan record says so): nothing new is dealt or
   * claimed, and no outcome is decided. `SplitCoordinator` always says;
   * absent from coordinators that do not (read it as `false`).
   */
  paused?: boolean;
  /** Live members by instance: every one on the leader, only this one elsewhere (members do not watch each other). */
  liveMembers: string[];
  /** Number of live members (standbys included), as the leader last reported it. */
  members: number;
  /** Splits held by this instance. */
  held: HeldSplitStatus[];
  /** Job-wide split counts: the leader's own, or those of its last heartbeat; once the job has an outcome (`allComplete`, `stalled`), the outcome's, on every member. */
  counts: {
    planned: number;
    runnable: number;
    unclaimed: number;
    owned: number;
    completed: number;
    quarantined: number;
    cancelled: number;
  };
  /**
   * Ids of quarantined splits, by id: on the leader the first 1000;
   * elsewhere the first 20 its last beat published (`counts.quarantined`
   * counts them all; `/fleet?state=quarantined` lists them all).
   */
  quarantined: string[];
  /** Job outcome once known. */
  outcome: "allComplete" | "stalled" | "planFailed" | null;
  /** Records that could not be read (key and message), most recent last; `replaced` when this instance wrote over them. */
  invalidRecords: { key: string; message: string; replaced?: boolean }[];
  /** Planning trouble on the leader: consecutive failed runs and the last error. */
  planning?: { failures: number; lastError: string };
  /** On the leader: failed splits waiting out their retry backoff (at most 100 listed). */
  retrying?: { id: string; attempts: number; inMs: number }[];
  /**
   * Of a sharded job's member (`ShardedCoordinator`): each shard's own
   * line — its records' job name, state, leader, what this member holds
   * there, its outcome and counts. The fields above sum or combine them.
   */
  shards?: ShardStatus[];
}

/**
 * One shard of a sharded job, as its member sees it (`CoordinatorStatus.shards`).
 *
 * @example
 * ```ts
 * import type { ShardStatus } from "@splitlease/splitlease/admin";
 * const line = (s: ShardStatus) => `shard ${s.index} (${s.job}): ${s.state}, leader ${s.leader ?? "none"}`;
 * ```
 */
export interface ShardStatus {
  /** Which shard. */
  index: number;
  /** The job name its records are under (`shardJob`). */
  job: string;
  /** This member's coordinator of the shard: its state. */
  state: CoordinatorStatus["state"];
  /** Whether this member leads the shard. */
  isLeader: boolean;
  /** The shard's leader, if known. */
  leader: string | null;
  /** Splits of the shard this member holds. */
  held: number;
  /** The shard's outcome once known. */
  outcome: CoordinatorStatus["outcome"];
  /** The shard's counts. */
  counts: CoordinatorStatus["counts"];
  /** Whether the shard is paused (its plan record). */
  paused: boolean;
  /** Live members of the shard (its leader's judgement, where this member leads it). */
  liveMembers: string[];
  /** Members the shard counts live. */
  members: number;
}
