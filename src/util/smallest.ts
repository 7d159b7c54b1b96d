/**
 * The `k` smallest strings of a collection, sorted, in O(n log k) time and
 * O(k) memory: what a view of a million splits lists the first few of
 * (the quarantined ids a leader's beat and `/status` name) without sorting
 * them all every time.
 *
 * @module
 */

/**
 * The `k` smallest of `items`, in ascending order (duplicates kept).
 *
 * @example
 * ```ts
 * import { smallest } from "./smallest.ts";
 * smallest(new Set(["c", "a", "d", "b"]), 2); // ["a", "b"]
 * ```
 */
export function smallest(items: Iterable<string>, k: number): string[] {
  const out: string[] = [];
  if (k <= 0) return out;
  for (const x of items) {
    if (out.length === k && x >= out[k - 1]) continue;
    let lo = 0, hi = out.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (out[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    out.splice(lo, 0, x);
    if (out.length > k) out.pop();
  }
  return out;
}
