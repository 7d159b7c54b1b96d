/**
 * A record as read or watched: decoded, with the revision that wrote it
 * (the revision a CAS over it names).
 *
 * @module
 */

/**
 * A decoded record with the revision that wrote it.
 *
 * @example
 * ```ts
 * import type { Versioned } from "./versioned.ts";
 * const plan: Versioned<{ planned: number }> = { record: { planned: 3 }, revision: 7 };
 * ```
 */
export interface Versioned<T> {
  /** The decoded value. */
  record: T;
  /** The store revision that wrote it: a CAS over it names this. */
  revision: number;
}
