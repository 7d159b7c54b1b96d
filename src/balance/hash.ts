/**
 * A small, fast, synchronous, non-cryptographic string hash used for
 * deterministic tie-breaking in balancing and for rendezvous (highest random
 * weight) ranking. Web Crypto is asynchronous and far too slow per split, so
 * this is a plain-JS hash: cyrb53 (public domain, by bryc) extended to hash a
 * sequence of strings with a length prefix per part, so `["ab", "c"]` and
 * `["a", "bc"]` hash differently.
 *
 * Not for security: an adversary can construct collisions. Inputs here are
 * job-controlled ids (split ids, instance ids, the job seed).
 *
 * @module
 */

/**
 * Hashes a sequence of strings to a non-negative integer below 2^53
 * (a safe integer), deterministically on every runtime.
 *
 * Each part is length-prefixed, so part boundaries matter. The result is
 * well mixed (every input bit affects every output bit), which makes it
 * suitable for rendezvous hashing and for seeded tie-breaks.
 *
 * @param parts The strings to hash, in order.
 * @returns An integer in `[0, 2^53)`.
 *
 * @example
 * ```ts
 * import { hashStrings } from "@splitlease/splitlease/testing";
 * const a = hashStrings(["job-1", "split-7"]);
 * console.assert(a === hashStrings(["job-1", "split-7"])); // deterministic
 * console.assert(a !== hashStrings(["job-1s", "plit-7"])); // boundaries matter
 * ```
 */
export function hashStrings(parts: readonly string[]): number {
  let h1 = 0xdeadbeef ^ parts.length;
  let h2 = 0x41c6ce57 ^ parts.length;
  for (let p = 0; p < parts.length; p++) {
    const s = parts[p];
    h1 = Math.imul(h1 ^ s.length, 2654435761);
    h2 = Math.imul(h2 ^ s.length, 1597334677);
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      h1 = Math.imul(h1 ^ c, 2654435761);
      h2 = Math.imul(h2 ^ c, 1597334677);
    }
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
  h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
  h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

/**
 * Ranks candidates for one split by rendezvous (highest random weight)
 * hashing: candidates ordered by `hashStrings([seed, splitId, candidate])`,
 * highest first (ties, astronomically rare, by candidate id). Duplicate
 * candidates are ranked once.
 *
 * Properties the coordinator relies on for claim stagger: every observer that
 * sees the same candidate set computes the same ranking (no communication);
 * the first choice is spread uniformly over candidates across splits; and
 * removing a candidate does not reorder the others (minimal disruption).
 * The result does not depend on the order of `candidates`.
 *
 * @param splitId The split being ranked for.
 * @param candidates Instance ids of eligible members.
 * @param seed Job-derived seed (job name or fingerprint), never a leader identity.
 * @returns A new array: the distinct candidates, best first.
 *
 * @example
 * ```ts
 * import { rendezvousRank } from "@splitlease/splitlease/testing";
 * const ranking = rendezvousRank("split-7", ["w1", "w2", "w3"], "my-job");
 * const myRank = ranking.indexOf("w2"); // 0: w2 ranks first for this split
 * console.assert(myRank >= 0 && myRank < 3);
 * ```
 */
export function rendezvousRank(splitId: string, candidates: readonly string[], seed: string): string[] {
  const scored = [...new Set(candidates)].map((c) => ({ c, h: hashStrings([seed, splitId, c]) }));
  scored.sort((a, b) => (b.h - a.h) || (a.c < b.c ? -1 : a.c > b.c ? 1 : 0));
  return scored.map((s) => s.c);
}
