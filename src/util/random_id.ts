/**
 * Random ids from an injected source of randomness (instance ids, session
 * nonces): a test's seeded `random` makes them reproducible.
 *
 * @module
 */

/**
 * `n` characters of `[a-z0-9]` drawn from `random` (values in [0, 1)).
 *
 * @example
 * ```ts
 * import { randomId } from "./random_id.ts";
 * randomId(Math.random, 10); // e.g. "k3j2h1g0ab"
 * ```
 */
export function randomId(random: () => number, n: number): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  let s = "";
  for (let i = 0; i < n; i++) s += alphabet[Math.floor(random() * alphabet.length)];
  return s;
}
