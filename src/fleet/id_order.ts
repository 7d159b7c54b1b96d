/**
 * The fleet index's slots in id order (`split_columns.ts`), merged lazily:
 * the ids that came since the last call are sorted and merged in, so paging
 * by id is a walk from a cursor found by binary search.
 *
 * @module
 */

/** Slots in id order (see the module doc). */
export class IdOrder {
  /** Slots in id order, and how many of the slots it holds (those after it are merged in at the next `of`). */
  #order = new Int32Array(0);
  #ordered = 0;

  /** Every slot of `ids` in id order (new ids merged in first). */
  of(ids: readonly string[]): Int32Array {
    const n = ids.length;
    if (this.#ordered === n) return this.#order.length === n ? this.#order : (this.#order = this.#order.subarray(0, n));
    const fresh = Int32Array.from({ length: n - this.#ordered }, (_, i) => this.#ordered + i);
    fresh.sort((a, b) => (ids[a] < ids[b] ? -1 : ids[a] > ids[b] ? 1 : 0));
    const old = this.#order.subarray(0, this.#ordered);
    const out = new Int32Array(n);
    let i = 0, j = 0, k = 0;
    while (i < old.length && j < fresh.length) out[k++] = ids[old[i]] <= ids[fresh[j]] ? old[i++] : fresh[j++];
    while (i < old.length) out[k++] = old[i++];
    while (j < fresh.length) out[k++] = fresh[j++];
    this.#order = out;
    this.#ordered = n;
    return out;
  }

  /** The position in `order` of the first id after `after` (binary search). */
  static after(order: Int32Array, after: string, ids: readonly string[]): number {
    let lo = 0, hi = order.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (ids[order[mid]] <= after) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
