/**
 * Observer-judged liveness (docs/DESIGN.md, "Liveness: judged by the leader"): a member is dead to an observer when
 * its record's revision has not moved for `leaseMs` on the observer's own
 * monotonic clock. No store TTL, no cross-host clock comparison.
 *
 * @module
 */

/**
 * When a revision was first seen by this observer.
 *
 * @example
 * ```ts
 * import { isAlive, type Sighting } from "@splitlease/splitlease/testing";
 * const s: Sighting = { revision: 7, since: 1000 };
 * console.log(isAlive(s, 1500, 1000)); // true
 * ```
 */
export interface Sighting {
  /** Last revision seen. */
  revision: number;
  /** Observer-local monotonic time at which that revision first appeared. */
  since: number;
}

/**
 * Whether a record last seen moving at `since` is still alive at `now`.
 *
 * @example
 * ```ts
 * import { isAlive } from "@splitlease/splitlease/testing";
 * isAlive({ revision: 3, since: 1000 }, 1500, 1000); // true
 * isAlive({ revision: 3, since: 1000 }, 2000, 1000); // false
 * ```
 */
export function isAlive(sighting: Sighting | undefined, now: number, leaseMs: number): boolean {
  return sighting !== undefined && now - sighting.since < leaseMs;
}

/**
 * Remembers, per key, the last revision seen and when it first appeared.
 *
 * @example
 * ```ts
 * import { LivenessTracker } from "@splitlease/splitlease/testing";
 * const t = new LivenessTracker();
 * t.observe("member.a", 5, 0);
 * t.observe("member.a", 5, 900); // same revision: `since` stays 0
 * console.log(t.alive("member.a", 999, 1000)); // true
 * console.log(t.alive("member.a", 1000, 1000)); // false
 * ```
 */
export class LivenessTracker {
  #seen = new Map<string, Sighting>();

  /** Records that `key` is at `revision` as of `now`; returns whether it moved. */
  observe(key: string, revision: number, now: number): boolean {
    const s = this.#seen.get(key);
    if (s && s.revision === revision) return false;
    this.#seen.set(key, { revision, since: now });
    return true;
  }

  /** Records that `key` has been at `revision` since `since` (a sighting inherited from elsewhere). */
  set(key: string, revision: number, since: number): void {
    this.#seen.set(key, { revision, since });
  }

  /** Forgets `key` (its record was deleted). */
  forget(key: string): void {
    this.#seen.delete(key);
  }

  /** The sighting of `key`, if any. */
  get(key: string): Sighting | undefined {
    return this.#seen.get(key);
  }

  /** Whether `key` is alive at `now`. */
  alive(key: string, now: number, leaseMs: number): boolean {
    return isAlive(this.#seen.get(key), now, leaseMs);
  }

  /** When `key` expires (observer time), or `undefined` if never seen. */
  expiresAt(key: string, leaseMs: number): number | undefined {
    const s = this.#seen.get(key);
    return s ? s.since + leaseMs : undefined;
  }
}
