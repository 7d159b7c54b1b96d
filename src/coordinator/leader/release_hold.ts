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
 * - While a draining follower's releases arrive (its last within
 *   {@linkcode DRAIN_QUIET_MS}, and it still holds splits), the other
 *   members' writes wait for the rest, {@linkcode RELEASE_HOLD_MS} at most:
 *   the leader sees another member's releases one watch message at a time,
 *   and the reply to a write sent at the first came only after the leader
 *   had read the other 49 (17–20 ms of the hand-back's 50 ms, measured).
 *
 * @module
 */
import type { Owner } from "../../records.ts";
import { ownerKey } from "./leader_view.ts";
import type { MemberState } from "./member_state.ts";

/** How long a member's assignment write waits for this leader's next own release to it (`opTimeoutMs` in all). */
export const RELEASE_HOLD_MS = 50;

/** How soon after a draining member's last release the others' writes stop waiting for its next. */
export const DRAIN_QUIET_MS = 10;

/**
 * Decides how long each successor's write is held.
 *
 * @example
 * ```ts
 * import { ReleaseHold } from "./release_hold.ts";
 * const hold = new ReleaseHold();
 * hold.landed(100);
 * console.log(hold.activeAt(-Infinity)); // 100
 * hold.released({ instance: "pod-2", session: "s1" }, true, 100); // a draining follower let a split go
 * console.log(hold.burstUntil(105, () => true)); // 110
 * ```
 */
export class ReleaseHold {
  /** When a split write of our own member last landed. */
  #landedAt = -Infinity;
  /** Draining members whose releases come in, by {@linkcode ownerKey}: when the last was seen. */
  readonly #drains = new Map<string, number>();

  /** A split write of our own member landed at `now`. */
  landed(now: number): void {
    this.#landedAt = now;
  }

  /** The last sign of our releases going on: a landing, or `startedAt` (a release started). */
  activeAt(startedAt: number): number {
    return Math.max(this.#landedAt, startedAt);
  }

  /**
   * `owner` let a split go (seen at `now`) while `draining` (its member
   * record said so), or while its drain's releases were coming in: a
   * member that left is gone from the leader's states before the split
   * watch delivered the last of its releases.
   */
  released(owner: Owner, draining: boolean, now: number): void {
    const key = ownerKey(owner.instance, owner.session);
    if (draining || this.#drains.has(key)) this.#drains.set(key, now);
  }

  /**
   * Until when a draining member's releases still come in a burst
   * (`-Infinity`: none does): one of its releases was seen within
   * {@linkcode DRAIN_QUIET_MS} and `holds(ownerKey)` says it holds more.
   */
  burstUntil(now: number, holds: (ownerKey: string) => boolean): number {
    let until = -Infinity;
    for (const [key, at] of this.#drains) {
      if (at + DRAIN_QUIET_MS <= now || !holds(key)) this.#drains.delete(key);
      else until = Math.max(until, at + DRAIN_QUIET_MS);
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
