/**
 * A binary max-heap of items ordered by a numeric key (ties: the lower
 * `tie`, by default insertion order). Entries may go stale; callers check
 * an item when they pop it.
 *
 * @module
 */

/**
 * A max-heap keyed by `key(item)`. Its entries are columns — the items in
 * one array, their keys and ties in typed arrays — not an object each: the
 * leader's dealing order holds one entry per split not dealt yet (a
 * million, planned at once), and an object per entry with two boxed
 * numbers was about 90 bytes of live heap a split, where the columns take 24.
 */
export class MaxHeap<T> {
  #items: T[] = [];
  #keys = new Float64Array(16);
  #ties = new Float64Array(16);
  #seq = 0;

  /** Number of entries (stale ones included). */
  get size(): number {
    return this.#items.length;
  }

  /** Adds `item` with priority `key`; among equal keys the lower `tie` comes first (default: insertion order). */
  push(item: T, key: number, tie: number = this.#seq): void {
    const a = this.#items;
    this.#seq++;
    let i = a.length;
    if (i === this.#keys.length) this.#grow();
    const keys = this.#keys, ties = this.#ties;
    a.push(item);
    // Sift up: parents move down into the hole until the new entry's place is found.
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!(key > keys[p] || (key === keys[p] && tie < ties[p]))) break;
      a[i] = a[p], keys[i] = keys[p], ties[i] = ties[p];
      i = p;
    }
    a[i] = item, keys[i] = key, ties[i] = tie;
  }

  /** The top entry without removing it, or `undefined` when empty. */
  peek(): { item: T; key: number; tie: number } | undefined {
    return this.#items.length === 0 ? undefined : { item: this.#items[0], key: this.#keys[0], tie: this.#ties[0] };
  }

  /** Removes and returns the top item, or `undefined` when empty. */
  pop(): T | undefined {
    const a = this.#items;
    if (a.length === 0) return undefined;
    const keys = this.#keys, ties = this.#ties;
    const top = a[0];
    const n = a.length - 1;
    const item = a[n], key = keys[n], tie = ties[n];
    a.length = n;
    if (n > 0) {
      // Sift down the last entry from the root: the larger child moves up into the hole.
      let i = 0;
      for (;;) {
        const l = 2 * i + 1, r = l + 1;
        let m = -1, mk = key, mt = tie;
        if (l < n && (keys[l] > mk || (keys[l] === mk && ties[l] < mt))) (m = l), (mk = keys[l]), (mt = ties[l]);
        if (r < n && (keys[r] > mk || (keys[r] === mk && ties[r] < mt))) m = r;
        if (m < 0) break;
        a[i] = a[m], keys[i] = keys[m], ties[i] = ties[m];
        i = m;
      }
      a[i] = item, keys[i] = key, ties[i] = tie;
    }
    return top;
  }

  /**
   * The entries in order, top first, without removing any: the first `k`
   * cost O(k log k) (a second heap over the positions, as for a k-way
   * merge). The heap must not change while the entries are read.
   */
  *ordered(): Generator<{ item: T; key: number; tie: number }> {
    const a = this.#items, keys = this.#keys, ties = this.#ties;
    if (a.length === 0) return;
    const frontier = new MaxHeap<number>();
    frontier.push(0, keys[0], ties[0]);
    for (let i = frontier.pop(); i !== undefined; i = frontier.pop()) {
      yield { item: a[i], key: keys[i], tie: ties[i] };
      for (const c of [2 * i + 1, 2 * i + 2]) if (c < a.length) frontier.push(c, keys[c], ties[c]);
    }
  }

  /** Drops every entry. */
  clear(): void {
    this.#items = [];
    this.#keys = new Float64Array(16);
    this.#ties = new Float64Array(16);
  }

  #grow(): void {
    const keys = new Float64Array(this.#keys.length * 2), ties = new Float64Array(this.#ties.length * 2);
    keys.set(this.#keys), ties.set(this.#ties);
    this.#keys = keys, this.#ties = ties;
  }
}
