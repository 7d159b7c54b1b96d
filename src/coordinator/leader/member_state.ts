/**
 * The leader's state of one live member session: what the member reports
 * (its session, lanes, whether it drains or plans, how many splits it says
 * it holds) and what the leader's own rules note of it. What the leader
 * tells it — offers, grants, revokes, drops, asks to cut — and the writer of
 * its `assign.<instance>` record are the {@linkcode AssignmentTracker}'s
 * (`assignment_tracker.ts`), asked with `tracker.of(member)` and
 * `tracker.writer(member)`.
 *
 * @module
 */
import type { Owner } from "../../records.ts";
import { keys } from "../../store/keys.ts";
import { hashStrings } from "../../balance/hash.ts";
import { ownerKey } from "./leader_view.ts";

/**
 * The leader's state for one live member session.
 *
 * @example
 * ```ts ignore
 * const m = tracker.member("pod-2", "s1", 4, false, false);
 * console.log(m.key, m.maxInFlight); // "pod-2 s1" 4
 * ```
 */
export class MemberState {
  readonly instance: string;
  readonly session: string;
  /** `ownerKey(instance, session)`, built once: passes look members up by it on every event. */
  readonly key: string;
  /** A hash of `key`, for the membership signature. */
  readonly keyHash: number;
  /** Its `member.<instance>` key. */
  readonly memberKey: string;
  /** Lanes, as its record says. */
  maxInFlight: number;
  /** Whether it drains (its record says so, or this leader's own member started to). */
  draining: boolean;
  /** Whether it carries the planner. */
  planner: boolean;
  /** Consecutive beats on which the member reported holding fewer splits than the store names it for. */
  suspect = 0;
  /** Since when its next write waits for this leader's own releases to it (see `ReleaseHold` in release_hold.ts). */
  holdSince: number | undefined;

  /** Built by {@linkcode AssignmentTracker.member}, which keeps what it is told. */
  constructor(instance: string, session: string, maxInFlight: number, draining: boolean, planner: boolean) {
    this.instance = instance;
    this.session = session;
    this.key = ownerKey(instance, session);
    this.keyHash = hashStrings([this.key]) % 2 ** 32; // sums of many stay exact
    this.memberKey = keys.member(instance);
    this.maxInFlight = maxInFlight;
    this.draining = draining;
    this.planner = planner;
  }

  /** The owner this state is for. */
  get owner(): Owner {
    return { instance: this.instance, session: this.session };
  }
}
