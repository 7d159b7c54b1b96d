/**
 * What a member has been promised, as the decisions read it: the types the
 * {@linkcode AssignmentTracker} (their one owner) hands out, kept apart so
 * that `MemberState` can read them without importing the tracker.
 *
 * @module
 */
import type { Revoke } from "./directives.ts";

/**
 * What one member is promised, read-only outside the tracker.
 *
 * @example
 * ```ts ignore
 * const lanes = m.maxInFlight - view.heldByKey(m.key) - m.promised.incoming - m.promised.plain;
 * ```
 */
export interface MemberPromises {
  /** Offers: split id → revision offered, in the order they were dealt. */
  readonly offers: ReadonlyMap<string, number>;
  /** The offers that are spares (beyond its free lanes). */
  readonly spares: ReadonlySet<string>;
  /** Total weight of its offers. */
  readonly offeredWeight: number;
  /** Offers for its free lanes (the offers that are not spares). */
  readonly plain: number;
  /** Revocations it was asked for, by split id. */
  readonly revokes: ReadonlyMap<string, Revoke>;
  /** Lanes it must keep free: revocations naming it as successor and splits being written for it. */
  readonly incoming: number;
  /** Whether a revocation of `id` names this member as successor. */
  expects(id: string): boolean;
}

/**
 * A lane of a member held for a split on its way to it (a seed or a
 * takeover being written for it), until released — once.
 *
 * @example
 * ```ts ignore
 * const r = tracker.reserve(m, "takeover");
 * try { await write(); } finally { tracker.release(r); }
 * ```
 */
export interface LaneReservation {
  /** The member whose lane is held (by instance and session). */
  readonly instance: string;
  readonly session: string;
  /** Why: a seed or a takeover being written for it. */
  readonly why: "seed" | "takeover";
}
