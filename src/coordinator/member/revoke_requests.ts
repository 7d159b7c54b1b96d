/**
 * The revocation of a held split, as its holder runs it: requested (by a
 * revoke directive of the leader, or by our own drain), answered by the
 * leader (a successor named, or none), withdrawn, and forced once its
 * deadline passes (docs/DESIGN.md, "Takeover, revocation and leader
 * loss"). The releases themselves are written by `TenancyWrites`; the held
 * set and its count of named successors are `Tenancies`'.
 *
 * @module
 */
import type { Owner } from "../../records.ts";
import type { Core } from "../core.ts";
import { bump } from "../stats.ts";
import type { Tenancy } from "./tenancy.ts";

/**
 * What a revocation needs of the held set (`Tenancies` hands it these):
 * its tenancies, the one way to change a tenancy's successor (the set counts
 * the tenancies that have one), and the forced release a deadline ends in.
 */
export interface RevokeHost {
  /** Held splits by id (the set's own map). */
  readonly held: ReadonlyMap<string, Tenancy>;
  /** Sets `t.to`, keeping the set's count of tenancies with a named successor. */
  succeed(t: Tenancy, to: Owner | null): void;
  /** Releases a split forcibly (`lost`, reason `revoked`). */
  forceRelease(id: string): Promise<void>;
}

/**
 * The revocations of one worker's held splits.
 *
 * @example
 * ```ts ignore
 * const revokes = new RevokeRequests(core, host);
 * revokes.requestRevoke("s1", null, true); // a revoke directive without a successor
 * ```
 */
export class RevokeRequests {
  readonly #core: Core;
  readonly #set: RevokeHost;
  readonly #held: ReadonlyMap<string, Tenancy>;

  /** Creates the revocations of the held set `set`. */
  constructor(core: Core, set: RevokeHost) {
    this.#core = core;
    this.#set = set;
    this.#held = set.held;
  }

  /**
   * Requests a cooperative revocation (`revokeRequested`), forced after the
   * drain deadline. `byLeader`: a revoke directive of the leader; otherwise
   * our own drain, whose release waits a short while for the leader's
   * answer unless `answered` (we lead, and named the successor ourselves).
   */
  requestRevoke(id: string, to: Owner | null, byLeader: boolean, answered: boolean = byLeader): void {
    const t = this.#held.get(id);
    if (!t) return;
    if (t.draining && !t.cancelled) {
      // Already draining: a successor named now (the leader's answer to our
      // drain) still counts, and a revoke the leader lists again without one
      // (the successor it named left) or with another one replaces it — a
      // release to the old one would reach a member that is gone, and the
      // leader would take the split over from it, charging an attempt.
      if (to || byLeader) this.#set.succeed(t, to);
      if (byLeader && t.unanswered) {
        const wake = t.unanswered;
        t.unanswered = undefined;
        wake();
      }
      return;
    }
    this.#set.succeed(t, to);
    if (!answered && !to) t.unanswered = () => {};
    t.byLeader = byLeader;
    t.cancelled = false;
    if (t.drainTimer !== undefined) this.#core.clock.clearTimeout(t.drainTimer);
    if (!t.draining) {
      t.draining = true;
      bump(this.#core.stats.revocations, "requested");
      this.#core.events.push({ type: "revokeRequested", splitId: id });
      this.#core.log("debug", "Revocation requested", { split: id, to: to?.instance ?? null });
      t.trace?.event("revocation", to ? { "splitlease.to": to.instance } : undefined);
    }
    t.drainTimer = this.#core.clock.setTimeout(() => {
      if (this.#held.get(id) === t) void this.#set.forceRelease(id);
    }, this.#core.config.drainDeadlineMs);
  }

  /**
   * The leader withdrew its revocation: no successor any more, and the hard
   * deadline becomes a no-progress rule (forced only if the drain commits
   * nothing for `drainDeadlineMs`).
   */
  cancelRevoke(id: string): void {
    const t = this.#held.get(id);
    if (!t || !t.draining || t.cancelled || !t.byLeader) return;
    t.cancelled = true;
    this.#set.succeed(t, null);
    bump(this.#core.stats.revocations, "cancelled");
    this.#core.log("debug", "Revocation withdrawn", { split: id });
    this.armNoProgress(id, t);
  }

  /** Re-arms `t`'s drain timer as a no-progress rule: forced once its drain commits nothing for `drainDeadlineMs`. */
  armNoProgress(id: string, t: Tenancy): void {
    if (t.drainTimer !== undefined) this.#core.clock.clearTimeout(t.drainTimer);
    t.drainTimer = this.#core.clock.setTimeout(() => {
      if (this.#held.get(id) === t) void this.#set.forceRelease(id);
    }, this.#core.config.drainDeadlineMs);
  }

  /**
   * Until the leader answered our drain's revocation of `t` (it listed the
   * revoke, naming a successor or none), `spareClaimAfterMs` at most. A
   * follower's lanes stop before its drain reaches the leader; released
   * then, they went to nobody, and the member the leader dealt them to
   * claimed each with a write of its own before starting it, where a
   * release to a named successor is started on the leader's grant (a
   * 50-split hand-back: 40 ms against 31 ms when the holder leads). Without
   * a leader the wait ends at the deadline and the release goes to nobody,
   * as before.
   */
  answered(t: Tenancy): Promise<void> {
    const { clock, timings } = this.#core;
    return new Promise<void>((resolve) => {
      const timer = clock.setTimeout(() => {
        t.unanswered = undefined;
        resolve();
      }, timings.spareClaimAfterMs);
      t.unanswered = () => {
        clock.clearTimeout(timer);
        resolve();
      };
    });
  }
}
