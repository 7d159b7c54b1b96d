/**
 * A leader that is also the releasing member (a draining leader, or a steal
 * of its own lanes) holds a successor's next assignment write while its own
 * member still holds splits owed to that successor (docs/DESIGN.md, "A
 * leading member's own split writes"). One write is in flight per member,
 * so writing at the first landed release sent one grant and made the others
 * of a drain wait for that write: a 50-split hand-back took three rewrites.
 *
 * @module
 */
import type { MemberState } from "./member_state.ts";

/** How long a member's assignment write waits for this leader's next own release to it (`opTimeoutMs` in all). */
export const RELEASE_HOLD_MS = 50;

/**
 * Decides how long each successor's write is held.
 *
 * @example
 * ```ts
 * import { ReleaseHold } from "./release_hold.ts";
 * const hold = new ReleaseHold();
 * hold.landed(100);
 * console.log(hold.activeAt(-Infinity)); // 100
 * ```
 */
export class ReleaseHold {
  /** When a split write of our own member last landed. */
  #landedAt = -Infinity;

  /** A split write of our own member landed at `now`. */
  landed(now: number): void {
    this.#landedAt = now;
  }

  /** The last sign of our releases going on: a landing, or `startedAt` (a release started). */
  activeAt(startedAt: number): number {
    return Math.max(this.#landedAt, startedAt);
  }

  /**
   * Until when `st`'s next assignment write waits (0: not at all): while
   * `owed` splits are still ours to release to it and releases keep
   * starting or landing within {@linkcode RELEASE_HOLD_MS} of each other
   * (the rest may be slow lanes still draining), and `opTimeoutMs` in all.
   */
  until(st: MemberState, now: number, owed: number, activeAt: number, opTimeoutMs: number): number {
    if (owed === 0) {
      st.holdSince = undefined;
      return 0;
    }
    st.holdSince ??= now;
    return Math.min(st.holdSince + opTimeoutMs, Math.max(st.holdSince, activeAt) + RELEASE_HOLD_MS);
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
