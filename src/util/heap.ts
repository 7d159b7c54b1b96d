/**
 * A binary max-heap of items ordered by a numeric key (ties: the lower
 * `tie`, by default insertion order). Entries may go stale; callers check
 * an item when they pop it.
 *
 * @module
 */

/** A max-heap keyed by `key(item)`. */
export class MaxHeap<T> {
  #items: { item: T; key: number; seq: number }[] = [];
  #seq = 0;

  /** Number of entries (stale ones included). */
  get size(): number {
    return this.#items.length;
  }

  /** Adds `item` with priority `key`; among equal keys the lower `tie` comes first (default: insertion order). */
  push(item: T, key: number, tie: number = this.#seq): void {
    const a = this.#items;
    this.#seq++;
    a.push({ item, key, seq: tie });
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.#before(a[i], a[p])) break;
      [a[i], a[p]] = [a[p], a[i]];
      i = p;
    }
  }

  /** The top entry without removing it, or `undefined` when empty. */
  peek(): { item: T; key: number; tie: number } | undefined {
    const top = this.#items[0];
    return top && { item: top.item, key: top.key, tie: top.seq };
  }

  /** Removes and returns the top item, or `undefined` when empty. */
  pop(): T | undefined {
    const a = this.#items;
    if (a.length === 0) return undefined;
    const top = a[0].item;
    const last = a.pop()!;
    if (a.length > 0) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        if (l < a.length && this.#before(a[l], a[m])) m = l;
        if (r < a.length && this.#before(a[r], a[m])) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m], a[i]];
        i = m;
      }
    }
    return top;
  }

  /**
   * The entries in order, top first, without removing any: the first `k`
   * cost O(k log k) (a second heap over the positions, as for a k-way
   * merge). The heap must not change while the entries are read.
   */
  *ordered(): Generator<{ item: T; key: number; tie: number }> {
    const a = this.#items;
    if (a.length === 0) return;
    const frontier = new MaxHeap<number>();
    frontier.push(0, a[0].key, a[0].seq);
    for (let i = frontier.pop(); i !== undefined; i = frontier.pop()) {
      yield { item: a[i].item, key: a[i].key, tie: a[i].seq };
      for (const c of [2 * i + 1, 2 * i + 2]) if (c < a.length) frontier.push(c, a[c].key, a[c].seq);
    }
  }

  /** Drops every entry. */
  clear(): void {
    this.#items = [];
  }

  #before(x: { key: number; seq: number }, y: { key: number; seq: number }): boolean {
    return x.key > y.key || (x.key === y.key && x.seq < y.seq);
  }
}
