/**
 * Holding assignment writes while a burst of releases comes in. One write is
 * in flight per member, so a write sent at the first release of a drain
 * carried one split and made the others wait for its reply: a 50-split
 * hand-back took three rewrites.
 *
 * - A leader that is also the releasing member (a draining leader, or a
 *   steal of its own lanes) holds a successor's next assignment write while
 *   its own member still holds splits owed to that successor (docs/DESIGN.md,
 *   "A leading member's own split writes").
 * - While a follower's releases arrive (its last within
 *   {@linkcode DRAIN_QUIET_MS}, and it still holds splits), the other
 *   members' writes wait for the rest, {@linkcode RELEASE_HOLD_MS} at most:
 *   the leader sees another member's releases one watch message at a time,
 *   and the reply to a write sent at the first came only after the leader
 *   had read the other 49 (17–20 ms of the hand-back's 50 ms, measured).
 *   A follower's graceful release ({@linkcode releasedGracefully}) starts
 *   the burst, and so does its first `draining` record: the two come
 *   through different watches, and on PostgreSQL the split watch delivered
 *   the first releases of a drain before the record (a first rewrite with
 *   one split of 30; scenarios A8b and A8c).
 *
 * @module
 */
import type { Owner, SplitRecord } from "../../records.ts";
import { ownerKey } from "./leader_view.ts";
import type { MemberState } from "./member_state.ts";

/** How long a member's assignment write waits for this leader's next own release to it (`opTimeoutMs` in all). */
export const RELEASE_HOLD_MS = 50;

/**
 * How soon after a releasing member's last release the others' writes stop
 * waiting for its next, while its record does not say it drains (a burst
 * whose releaser holds nothing more ends at once). Long enough to bridge
 * the releases a PostgreSQL watch delivered before the `draining` record
 * (5–6 ms apart on a loaded machine); a revocation or a `release()` of
 * one split costs the others' writes this much at most.
 */
export const DRAIN_QUIET_MS = 20;

/**
 * Whether `next` is `prev`'s owner letting the split go gracefully (a drain,
 * a revocation, `release()`): its tenancy ended "released". A completion, a
 * failure, a hand-back or a takeover is not, and starts no burst.
 *
 * @example
 * ```ts
 * import { releasedGracefully } from "./release_hold.ts";
 * import type { SplitRecord } from "../../records.ts";
 * const owner = { instance: "pod-2", session: "s1" };
 * const prev: SplitRecord = { v: 2, epoch: 1, status: "runnable", owner, attempts: 0, weight: 1, progress: null, tenancies: [{ epoch: 1, owner: "pod-2", from: 0 }] };
 * const next: SplitRecord = { ...prev, owner: null, tenancies: [{ epoch: 1, owner: "pod-2", from: 0, to: 5, end: "released" }] };
 * console.log(releasedGracefully(prev, next)); // true
 * ```
 */
export function releasedGracefully(prev: SplitRecord, next: SplitRecord | undefined): boolean {
  const from = prev.owner;
  if (!from || !next?.tenancies) return false;
  for (let i = next.tenancies.length - 1; i >= 0; i--) {
    const t = next.tenancies[i];
    if (t.epoch === prev.epoch && t.owner === from.instance) return t.end === "released";
  }
  return false;
}

/**
 * Decides how long each successor's write is held.
 *
 * @example
 * ```ts
 * import { ReleaseHold } from "./release_hold.ts";
 * const hold = new ReleaseHold();
 * hold.landed(100);
 * console.log(hold.activeAt(-Infinity)); // 100
 * hold.released({ instance: "pod-2", session: "s1" }, true, false, 100); // a follower let a split go
 * console.log(hold.burstUntil(105, () => true)); // 120
 * hold.released({ instance: "pod-2", session: "s1" }, true, true, 110); // its record says it drains
 * console.log(hold.burstUntil(115, () => true)); // 160
 * ```
 */
export class ReleaseHold {
  /** When a split write of our own member last landed. */
  #landedAt = -Infinity;
  /** Members whose releases come in, by {@linkcode ownerKey}: when the last was seen, and whether the member drains. */
  readonly #drains = new Map<string, { at: number; draining: boolean }>();

  /** A split write of our own member landed at `now`. */
  landed(now: number): void {
    this.#landedAt = now;
  }

  /** The last sign of our releases going on: a landing, or `startedAt` (a release started). */
  activeAt(startedAt: number): number {
    return Math.max(this.#landedAt, startedAt);
  }

  /**
   * `owner` let a split go (seen at `now`): a burst starts or goes on when
   * `graceful` (a follower's graceful release) or `draining` (its member
   * record says so), or while its releases were coming in: a member that
   * left is gone from the leader's states before the split watch delivered
   * the last of its releases.
   */
  released(owner: Owner, graceful: boolean, draining: boolean, now: number): void {
    const key = ownerKey(owner.instance, owner.session);
    const was = this.#drains.get(key);
    if (graceful || draining || was) this.#drains.set(key, { at: now, draining: draining || was?.draining === true });
  }

  /**
   * `owner`'s record says it drains (seen at `now`): the rest of its splits
   * are coming back, so a burst starts or goes on whether or not its first
   * releases came before the record (through the split watch, which has no
   * order with the member watch).
   */
  drains(owner: Owner, now: number): void {
    this.#drains.set(ownerKey(owner.instance, owner.session), { at: now, draining: true });
  }

  /**
   * Until when a releasing member's releases still come in a burst
   * (`-Infinity`: none does), while `holds(ownerKey)` says it holds more:
   * {@linkcode DRAIN_QUIET_MS} after its last release, or
   * {@linkcode RELEASE_HOLD_MS} for a member known to drain (the rest of its
   * splits are coming; a PostgreSQL watch on a loaded machine delivered a
   * drain's releases in batches more than 20 ms apart).
   */
  burstUntil(now: number, holds: (ownerKey: string) => boolean): number {
    let until = -Infinity;
    for (const [key, { at, draining }] of this.#drains) {
      const end = at + (draining ? RELEASE_HOLD_MS : DRAIN_QUIET_MS);
      if (end <= now || !holds(key)) this.#drains.delete(key);
      else until = Math.max(until, end);
    }
    return until;
  }

  /**
   * Until when `st`'s next assignment write waits (0: not at all): while
   * `owed` splits are still ours to release to it and releases keep
   * starting or landing within {@linkcode RELEASE_HOLD_MS} of each other
   * (the rest may be slow lanes still draining), and `opTimeoutMs` in all;
   * and, unless `st` drains itself, while another member's drain comes in
   * (`burstUntil`, from {@linkcode ReleaseHold.burstUntil}), for
   * {@linkcode RELEASE_HOLD_MS} at most.
   */
  until(st: MemberState, now: number, owed: number, activeAt: number, opTimeoutMs: number, burstUntil = -Infinity): number {
    const burst = burstUntil > now && !st.draining;
    if (owed === 0 && !burst) {
      st.holdSince = undefined;
      return 0;
    }
    const since = (st.holdSince ??= now);
    const own = owed > 0 ? Math.min(since + opTimeoutMs, Math.max(since, activeAt) + RELEASE_HOLD_MS) : 0;
    return Math.max(own, burst ? Math.min(since + RELEASE_HOLD_MS, burstUntil) : 0);
  }
}

/**
 * What the leader's own member side tells each pass: how many of its held
 * splits are being revoked to each named successor (`Tenancies.owedTo`;
 * `undefined` when none is) and when a release of its last started.
 *
 * @example
 * ```ts
 * import type { OwnReleases } from "./release_hold.ts";
 * const none: OwnReleases = { owed: undefined, releasedAt: -Infinity };
 * ```
 */
export interface OwnReleases {
  /** Held splits being revoked to each named successor, by instance. */
  owed: Map<string, number> | undefined;
  /** When a release of ours last started. */
  releasedAt: number;
}
