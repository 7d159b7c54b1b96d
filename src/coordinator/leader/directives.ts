/**
 * The directives the leader lists in a member's `assign.<instance>` record
 * besides its offers — grants, revocations, drops and asks to cut —, what
 * one member is told and promised ({@linkcode MemberDirectives}), and the
 * two faces of their one owner, the `AssignmentTracker`: what decisions
 * read ({@linkcode Assignments}) and what applying intents writes
 * ({@linkcode AssignmentDraft}).
 *
 * @module
 */
import type { AssignEntry, Owner } from "../../records.ts";
import type { DealingReads } from "./dealing_order.ts";
import type { MemberState } from "./member_state.ts";

/** A revocation the leader asked for. */
export interface Revoke {
  /** Epoch of the owner's tenancy. */
  epoch: number;
  /** Successor to release to. */
  to?: Owner;
  /** Leader time it was asked. */
  since: number;
  /** Membership signature when it was asked (a balancing move is withdrawn when it changes). */
  sig?: string;
  /** Whether it is a balancing steal (fenced if never answered) rather than a drain. */
  steal: boolean;
}

/** An ask to cut a held split's remaining work (see leader/cut_asks.ts). */
export interface CutAsk {
  /** Epoch of the owner's tenancy. */
  epoch: number;
  /** Pieces wanted, the kept one included. */
  parts: number;
  /** The leader's number of this ask of the split. */
  ask: number;
  /** Leader time it was asked. */
  since: number;
  /** The split's cut count when asked (a higher one answers it). */
  cuts: number;
}

/** A tenancy the member must stop, listed once in its assignment record. */
export interface Drop {
  /** Epoch of the tenancy. */
  epoch: number;
  /** Why: its record was fenced or expired (taken over), or the split was cancelled. */
  reason: "fenced" | "expired" | "cancelled";
}

/** A split opened for a member, listed in its assignment record. */
export interface Grant {
  /** Epoch opened for the member. */
  epoch: number;
  /** Why it was opened, when not a plain grant. */
  why?: AssignEntry["why"];
  /** Revision of the first assignment record that listed it. */
  at?: number;
}

/**
 * Everything the leader tells and promises one member, as decisions read it
 * (read-only: the `AssignmentTracker` of `assignment_tracker.ts`
 * is its one owner and changes it only through a draft).
 *
 * @example
 * ```ts ignore
 * const d = tracker.of(m);
 * const lanes = m.maxInFlight - view.heldByKey(m.key) - d.incoming - d.plain;
 * ```
 */
export interface MemberDirectives {
  /** Offers: split id → revision offered, in the order they were dealt. */
  readonly offers: ReadonlyMap<string, number>;
  /**
   * The offers that are spares (beyond its free lanes): listed with
   * `spare: true`, claimed only when the leader has not answered a free
   * lane for `spareClaimAfterMs` (docs/DESIGN.md, "How a split reaches a worker").
   */
  readonly spares: ReadonlySet<string>;
  /** Total weight of its offers. */
  readonly offeredWeight: number;
  /** Offers for its free lanes (the offers that are not spares). */
  readonly plain: number;
  /** Revocations it was asked for, by split id. */
  readonly revokes: ReadonlyMap<string, Revoke>;
  /** Lanes it must keep free: revocations naming it as successor, and seeds and takeovers being written for it. */
  readonly incoming: number;
  /** Whether a revocation of `id` names this member as successor. */
  expects(id: string): boolean;
  /**
   * Grants: split id → epoch opened for the member (and why), until the
   * member wrote to the split at that epoch or acknowledged a record that
   * listed it (`at`: the revision of the first write that carried it).
   */
  readonly grants: ReadonlyMap<string, Grant>;
  /** Drops to write once. */
  readonly drops: ReadonlyMap<string, Drop>;
  /** Asks to cut a held split's remaining work, by split id. */
  readonly asks: ReadonlyMap<string, CutAsk>;
}

/**
 * A lane of a member held for a split on its way to it (a seed or a
 * takeover being written for it), until released — once.
 *
 * @example
 * ```ts ignore
 * const r = tracker.edit((d) => d.reserve(m, "takeover"));
 * try { await write(); } finally { tracker.edit((d) => d.release(r)); }
 * ```
 */
export interface LaneReservation {
  /** The member whose lane is held (by instance and session). */
  readonly instance: string;
  readonly session: string;
  /** Why: a seed or a takeover being written for it. */
  readonly why: "seed" | "takeover";
}

/**
 * What decisions read of the tracker (they never write it).
 *
 * @example
 * ```ts ignore
 * const lanes = m.maxInFlight - view.heldByKey(m.key) - t.of(m).incoming;
 * ```
 */
export interface Assignments {
  /** Everything `m` is told and promised. */
  of(m: MemberState): MemberDirectives;
  /** Offers in all. */
  readonly offered: number;
  /** The member `id` is offered to, if any. */
  offeredTo(id: string): MemberState | undefined;
  /** The live member asked to give `id` up and its revocation, if any. */
  revocationOf(id: string): { member: MemberState; revoke: Revoke } | undefined;
  /** The member asked to cut `id` and its ask, if any. */
  askOf(id: string): { member: MemberState; ask: CutAsk } | undefined;
  /** Split id → the member asked to cut it, in the order they were asked. */
  readonly asked: ReadonlyMap<string, MemberState>;
  /** Lane reservations held now. */
  readonly reservations: number;
  /** The order free splits are dealt in. */
  readonly dealing: DealingReads;
}

/**
 * The tracker opened for writing: what applying intents changes (see
 * `AssignmentTracker.edit`).
 *
 * @example
 * ```ts ignore
 * tracker.edit((d) => d.grant(member, "split-7", { epoch: 3 }));
 * ```
 */
export interface AssignmentDraft extends Assignments {
  /** `m`'s record is to be written again when the draft commits. */
  touch(m: MemberState): void;
  /** Offers `id` (at revision `rev`) to `m`, for a free lane or as a spare. A split is offered to one member at a time. */
  offer(m: MemberState, id: string, rev: number, weight: number, spare?: boolean): void;
  /** Takes back the offer of `id` (`requeue`: back to the dealing order); returns the member it was offered to. */
  unoffer(id: string, weight: number, requeue?: boolean): MemberState | undefined;
  /** Takes back every offer of `m` (it left, drains, or the job paused), back to the dealing order. */
  unofferAll(m: MemberState): void;
  /** Puts a free split back in the dealing order (its retry backoff ended). */
  requeue(id: string): void;
  /** Drops from the dealing order's tops what no deal can take now (see `DealingOrder.prune`). */
  prune(withheld: (id: string) => boolean): void;
  /** Holds a lane of `m` for a split being written for it, until released. */
  reserve(m: MemberState, why: LaneReservation["why"]): LaneReservation;
  /** Ends a reservation (its write landed or failed); whether it was held (once: a second release changes nothing). */
  release(r: LaneReservation): boolean;
  /** Asks `m` to release `id`; a successor named in it expects the split. */
  revoke(m: MemberState, id: string, r: Revoke): void;
  /** Names `to` as the successor of `m`'s revocation of `id` (a drain that had none). */
  nameSuccessor(m: MemberState, id: string, to: MemberState): void;
  /** The successor of `m`'s revocation of `id` is gone: the drain goes on with none. */
  unnameSuccessor(m: MemberState, id: string): void;
  /** Withdraws or settles `m`'s revocation of `id` (its successor stops expecting it); returns it, if there was one. */
  unrevoke(m: MemberState, id: string): Revoke | undefined;
  /** Lists a split opened for `m` in its next record. */
  grant(m: MemberState, id: string, g: Grant): void;
  /** Stops listing a grant (acknowledged, or the split moved on): nothing to write for it. */
  forgetGrant(m: MemberState, id: string): void;
  /**
   * `m` applied its record at revision `seen`: the grants that record listed
   * are known to it (started, dormant or being recovered) and later records
   * leave them out — else a member holding long splits it rarely commits is
   * sent all of them on every write. No write is needed for this alone.
   */
  acknowledge(m: MemberState, seen: number): void;
  /** Tells `m` to stop a tenancy it may still run (listed once). */
  drop(m: MemberState, id: string, d: Drop): void;
  /** Asks `m` to cut the remaining work of `id` (listed in its next record). */
  ask(m: MemberState, id: string, a: CutAsk): void;
  /** The ask of `id` was answered, declined or overtaken; returns it, if there was one. */
  unask(m: MemberState, id: string): CutAsk | undefined;
  /** `m` is gone: its offers go back to the dealing order, its lane reservations and asks end (its revocations are `Revocations`' to settle). */
  forget(m: MemberState): void;
}
