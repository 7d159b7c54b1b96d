/**
 * The coordinator's API as a worker runtime sees it (`Coordinator`) and the
 * options and answers its methods take (`CommitOptions`, `FailOptions`,
 * `CutAnswer`). The other public types of the coordinator live apart, one
 * concept a file — events (`coordination_event.ts`), the planner's contract
 * (`planner.ts`), the clock (`clock.ts`), the status (`coordinator_status.ts`)
 * — and are re-exported here, so code and entry files import them from one
 * place.
 *
 * @module
 */
import type { Json, SplitProgress } from "../records.ts";
import type { CoordinatorStats } from "./coordinator_stats.ts";
import type { TransactionWork } from "../store/store.ts";
import type { CoordinationEvent } from "./coordination_event.ts";
import type { CoordinatorStatus } from "./coordinator_status.ts";

export type { CoordinationEvent, LostReason, SplitSpec } from "./coordination_event.ts";
export type { PlanContext, PlannedSplit, Planner, PlanResult } from "./planner.ts";
export type { Clock } from "./clock.ts";
export type { CoordinatorStatus, HeldSplitStatus, ShardStatus } from "./coordinator_status.ts";

/**
 * Options of {@linkcode Coordinator.commit}.
 *
 * @example
 * ```ts
 * import type { Coordinator } from "@splitlease/splitlease";
 * import type { CommitOptions } from "@splitlease/splitlease/host";
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
