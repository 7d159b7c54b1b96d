/**
 * Public types of the coordinator: events, splits, planner, clock, status.
 *
 * @module
 */
import type { Json, SplitProgress } from "../records.ts";
import type { CoordinatorStats } from "./coordinator_stats.ts";
import type { TransactionWork } from "../store/store.ts";

/**
 * A split as a worker receives it: id, descriptor and weight.
 *
 * @example
 * ```ts
 * import type { SplitSpec } from "@splitlease/splitlease";
 * const spec: SplitSpec = { id: "a", descriptor: { file: "a.ndjson" }, weight: 1 };
 * ```
 */
export interface SplitSpec {
  /** Deterministic split id (1–128 of `[A-Za-z0-9_-]`). */
  id: string;
  /** Everything a worker needs to process the split (opaque JSON). */
  descriptor: Json;
  /** Relative cost (bytes, rows); default 1. */
  weight: number;
  /**
   * For a split cut from a running one (README, "Stragglers"): the planned
   * split its lineage comes from, whose id its fencing token names.
   */
  root?: string;
}

/**
 * Why a split was lost.
 *
 * @example
 * ```ts
 * import type { LostReason } from "@splitlease/splitlease";
 * const reason: LostReason = "expired"; // taken over after our lease lapsed
 * ```
 */
export type LostReason = "fenced" | "expired" | "starved" | "revoked";

/**
 * An ownership or job-state change (docs/DESIGN.md, "Events"). Per split, `gained`
 * precedes `lost`, and a re-gained split carries a higher epoch.
  *
  * @example
  * ```ts
  * import type { CoordinationEvent } from "@splitlease/splitlease";
  * function onEvent(ev: CoordinationEvent): void {
  *   if (ev.type === "gained") console.log("start", ev.split.id, "at epoch", ev.epoch);
  *   else if (ev.type === "lost") console.log("stop", ev.splitId, ev.reason);
  * }
  * ```
 */
export type CoordinationEvent =
  /**
   * `kind`: how the split came (`claim`, `grant`, `takeover`, `reclaim`,
   * `handoff`, `resume`; the label of `acquisitions_total`); `attempts`: the
   * non-graceful ends charged to it so far.
   */
  | { type: "gained"; split: SplitSpec; epoch: number; progress?: SplitProgress; kind?: string; attempts?: number }
  | { type: "lost"; splitId: string; reason: LostReason }
  | { type: "revokeRequested"; splitId: string }
  /**
   * The leader asks for the remaining work of a held split to be cut into
   * `parts` pieces (lanes are idle and nothing else is left to start):
   * answer with {@linkcode Coordinator.split}, or ignore it to decline.
   */
  | { type: "splitRequested"; splitId: string; epoch: number; parts: number }
  /** `permanent`: quarantined at once by a permanent failure, not at `maxAttempts`. */
  | { type: "quarantined"; splitId: string; attempts: number; permanent?: boolean }
  /**
   * The job is complete: `completed` splits, and `cancelled` ones skipped
   * for good (absent when none; both absent from coordinators that do not
   * count them).
   */
  | { type: "allComplete"; completed?: number; cancelled?: number }
  /** Only quarantined splits are left (`permanent` of them by permanent failures); `cancelled` skipped for good. Absent counts are 0. */
  | { type: "stalled"; completed: number; quarantined: number; cancelled?: number; permanent?: number }
  /**
   * An operator paused the job (`splitlease pause`): this member hands back
   * the `handingBack` splits it holds (each gets `revokeRequested`) and
   * takes nothing new until `resumed`.
   */
  | { type: "paused"; handingBack: number }
  /** The pause was lifted: this member takes work again. */
  | { type: "resumed" }
  /** The outcome announced before (`allComplete` or `stalled`) was withdrawn: an operator requeued or cancelled a split, and the job runs (or is judged) again. */
  | { type: "reopened"; was: "allComplete" | "stalled" }
  | { type: "planFailed"; error: string; attempts: number };

/**
 * A split produced by a planner.
 *
 * @example
 * ```ts
 * import type { PlannedSplit } from "@splitlease/splitlease";
 * const s: PlannedSplit = { id: "range-0000", descriptor: { from: 0, to: 1000 }, weight: 1000 };
 * ```
 */
export interface PlannedSplit {
  /** Deterministic id (see `splitIdFrom`). */
  id: string;
  /** Opaque JSON descriptor. */
  descriptor: Json;
  /** Weight > 0 (default 1). */
  weight?: number;
}

/**
 * What a planner run returns.
 *
 * @example
 * ```ts
 * import type { PlanResult } from "@splitlease/splitlease";
 * const r: PlanResult = { splits: [{ id: "a", descriptor: { file: "a.ndjson" } }], finality: "final" };
 * ```
 */
export interface PlanResult {
  /** The splits of this run (new and already known ones alike). */
  splits: Iterable<PlannedSplit> | AsyncIterable<PlannedSplit>;
  /** `final`: the enumeration is complete; `open`: plan again later. */
  finality: "open" | "final";
  /** Cursor handed to the next run of a discovery planner. */
  cursor?: Json;
  /**
   * `true`: this run is one part of a listing that goes on (an object
   * store's page of keys, a table's range of ids), and the planner is called
   * again at once with this run's `cursor`, not after `replanIntervalMs`.
   * Only with `finality: "open"`; the last part says `"final"`. A plan
   * returned in parts of, say, 50,000 splits is published part by part: the
   * first splits are dealt while the rest is listed, a new leader goes on
   * from the last published cursor, and the leader never holds more than one
   * part of the listing (a million splits returned at once are the leader's
   * memory high-water mark: docs/OPERATIONS.md, "The leader of a large
   * job"). Heaviest first then holds within each part.
   */
  more?: boolean;
}

/**
 * Context handed to a planner run.
 *
 * @example
 * ```ts
 * import type { PlanContext, PlanResult } from "@splitlease/splitlease";
 * async function plan(ctx: PlanContext): Promise<PlanResult> {
 *   const seen = (ctx.cursor as string[] | undefined) ?? [];
 *   return { splits: [], finality: "open", cursor: seen };
 * }
 * ```
 */
export interface PlanContext {
  /** Cursor returned by the previous published run, if any. */
  cursor?: Json;
  /** The term of the leader that runs this planner (a plan it publishes carries it; a newer leader's plan replaces it). */
  term: number;
  /** Aborted when this instance stops leading. */
  signal: AbortSignal;
  /**
   * Of a sharded job (`shards: K`): the shard this run plans. Each shard's
   * leader runs the planner and keeps the splits `shardOf(id, count)` routes
   * to its shard; a planner that can list only its part (a key range, a
   * hash of its inputs) may return only those. Absent: an unsharded job.
   */
  shard?: { index: number; count: number };
}

/**
 * A planner: runs on the leader only.
 *
 * @example
 * ```ts
 * import type { Planner } from "@splitlease/splitlease";
 * const planner: Planner = () => Promise.resolve({ splits: [{ id: "only", descriptor: null }], finality: "final" });
 * ```
 */
export type Planner = (ctx: PlanContext) => Promise<PlanResult>;

/**
 * Time source: a monotonic `now()` plus timers. Injected so tests can drive
 * time by hand.
  *
  * @example
  * ```ts
  * import { systemClock } from "@splitlease/splitlease/testing";
  * import { type Clock } from "@splitlease/splitlease";
  * const clock: Clock = systemClock;
  * const t0 = clock.now();
  * ```
 */
export interface Clock {
  /** Monotonic milliseconds (never goes back). */
  now(): number;
  /** Wall-clock milliseconds since the epoch (informational fields only). */
  wallNow(): number;
  /** Runs `fn` after `ms`; returns a handle for {@linkcode Clock.clearTimeout}. */
  setTimeout(fn: () => void, ms: number): unknown;
  /** Cancels a timer. */
  clearTimeout(handle: unknown): void;
}

/**
 * A held split as shown by {@linkcode CoordinatorStatus}.
 *
 * @example
 * ```ts
 * import type { Coordinator, HeldSplitStatus } from "@splitlease/splitlease";
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

/**
 * Options of {@linkcode Coordinator.commit}.
 *
 * @example
 * ```ts
 * import type { CommitOptions, Coordinator } from "@splitlease/splitlease";
 * declare const c: Coordinator;
 * const options: CommitOptions = { final: true };
 * await c.commit("split-1", 3, { watermark: 100 }, options);
 * ```
 */
export interface CommitOptions {
  /** Terminal commit: the split is marked `completed` and leaves this worker. */
  final?: boolean;
  /**
   * Statements committed in ONE transaction with the progress write, on the
   * store's own database (`Store.updateInTransaction`: PostgresStore): a
   * fenced commit rolls them back, so a tenancy that lost its split writes
   * nothing. `INVALID_CONFIG` on a store that cannot.
   */
  transaction?: TransactionWork;
  /** Records this commit covers (an integer >= 0), summed into the split record's `records`. */
  records?: number;
}

/**
 * Options of {@linkcode Coordinator.fail}.
 *
 * @example
 * ```ts
 * import type { Coordinator } from "@splitlease/splitlease";
 * import type { FailOptions } from "@splitlease/splitlease/admin";
 * declare const c: Coordinator;
 * const error = new Error("ECONNRESET");
 * const options: FailOptions = { stack: error.stack };
 * await c.fail("split-1", 3, `run threw: ${error.message}`, options);
 * ```
 */
export interface FailOptions {
  /**
   * The failing error's stack: its first frames join the split's failure
   * history (bounded; shown by the fleet page and `splitlease splits`).
   */
  stack?: string;
  /**
   * The failure will not go away (a 404, a schema violation): the split is
   * quarantined at once instead of retried up to `maxAttempts`, and the
   * failure is marked `permanent` in its history.
   */
  permanent?: boolean;
}

/**
 * What a worker runtime needs from a coordinator. `SplitCoordinator`
 * implements it; tests may script their own.
  *
  * @example
  * ```ts
  * import type { Coordinator } from "@splitlease/splitlease";
  * async function pump(c: Coordinator): Promise<void> {
  *   for await (const ev of c) if (ev.type === "allComplete") break;
  *   await c.close();
  * }
  * ```
 */
export interface Coordinator extends AsyncDisposable, AsyncIterable<CoordinationEvent> {
  /** This process's stable name in the fleet (the `instance` it joined with, or the one generated). */
  readonly instance: string;
  /**
   * The splits this member holds at most, as its member record announces
   * them to the leader (a worker runs that many lanes). Optional for
   * coordinators that do not say; `SplitCoordinator` always does.
   */
  readonly maxInFlight?: number;
  /**
   * The lifecycle state `status()` reports, read without building the rest
   * of the status (a worker checks it after every burst of events; the
   * status is O(held)). Optional for coordinators that do not say.
   */
  readonly state?: CoordinatorStatus["state"];
  /** Waits for the next event; `undefined` once the coordinator stopped. */
  poll(): Promise<CoordinationEvent | undefined>;
  /** The next queued event without waiting, or `undefined`. */
  tryPoll(): CoordinationEvent | undefined;
  /**
   * Fenced progress commit for a held split at `epoch`.
   * @throws {FencedError} when the split moved on (nothing written; `lost` emitted)
   */
  commit(splitId: string, epoch: number, progress: SplitProgress, options?: CommitOptions): Promise<void>;
  /**
   * Graceful release (no attempt consumed). A split under revocation is
   * released to its thief. Splits no longer held are ignored.
   */
  release(splitIds: readonly string[]): Promise<void>;
  /**
   * Reports a poison split: consumes an attempt; quarantines at the cap, or
   * at once with `options.permanent` (with the error's stack in `options`,
   * kept in its failure history).
   */
  fail(splitId: string, epoch: number, reason: string, options?: FailOptions): Promise<void>;
  /**
   * Cuts a held split's remaining work (an answer to `splitRequested`):
   * one CAS at `epoch` shrinks its descriptor to `cut.keep` and records the
   * residuals, which become new splits (charged nothing, their parent
   * named). Resolves with the residuals' ids once the cut landed; the lane
   * must process nothing outside `keep` from the call on. A cut lost to an
   * outage is carried by the tenancy's next write.
   *
   * @throws {FencedError} when the split moved on (nothing written).
   * @throws {SplitleaseError} (`INVALID_ARGUMENT`) for a malformed cut, a split being revoked, or a cut still in flight.
   */
  split?(splitId: string, epoch: number, cut: CutAnswer): Promise<string[]>;
  /**
   * The source cannot stop intake for a requested revocation: release it
   * forcibly now (`lost` with reason `revoked`).
   */
  declineRevocation(splitId: string): Promise<void>;
  /**
   * Graceful drain: stop claiming and request revocation of every held split
   * (`revokeRequested` for each). Splits not released within
   * `drainDeadlineMs` are released forcibly. Resolves when nothing is held.
   */
  drain(): Promise<void>;
  /** Releases everything still held, leaves (deletes the member record), stops. */
  close(): Promise<void>;
  /** What `/status` shows: state, leader, plan, job counts, held splits, unreadable records. */
  status(): CoordinatorStatus;
  /** Counters for metrics. */
  stats(): CoordinatorStats;
}

/**
 * A source's cut of a running split's remaining work: the descriptor the
 * lane keeps and the residual work, as new splits.
 *
 * @example
 * ```ts
 * import type { CutAnswer } from "@splitlease/splitlease/admin";
 * const cut: CutAnswer = { keep: { from: 0, to: 5000 }, residuals: [{ descriptor: { from: 5000, to: 10000 } }] };
 * ```
 */
export interface CutAnswer {
  /** The descriptor the lane keeps (at most 2048 bytes of JSON). */
  keep: Json;
  /** The kept split's weight (default: the split's weight shared evenly with the residuals). */
  weight?: number;
  /** The residual work: 1 to 16 new splits (each descriptor at most 2048 bytes of JSON). */
  residuals: { descriptor: Json; weight?: number }[];
}
