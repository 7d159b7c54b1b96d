/**
 * The storage of the fleet index's columns (`split_columns.ts`): the ids,
 * a slot each, and one typed array per fact, grown together (doubling from
 * 1024). What the values mean, and the sums kept of them, is
 * `SplitColumns`'s; this only holds them.
 *
 * @module
 */

/** The ids and their typed columns (see the module doc). */
export class ColumnArrays {
  readonly #slots = new Map<string, number>();
  /** The id of each slot. */
  readonly ids: string[] = [];
  #cap = 0;
  state = new Uint8Array(0);
  flags = new Uint8Array(0);
  weight = new Float64Array(0);
  fraction = new Float64Array(0);
  doneAt = new Float64Array(0);
  doneBy = new Int32Array(0);
  owner = new Int32Array(0);
  started = new Float64Array(0);
  failures = new Uint16Array(0);
  lost = new Uint16Array(0);
  retries = new Uint16Array(0);
  cuts = new Uint32Array(0);
  records = new Float64Array(0);
  revision = new Float64Array(0);
  page = new Int32Array(0);
  pageWeight = new Float64Array(0);

  /** The slot of `id`, or `undefined`. */
  slotOf(id: string): number | undefined {
    return this.#slots.get(id);
  }

  /** The slot of `id`, made (absent) when it has none. */
  slot(id: string): number {
    let s = this.#slots.get(id);
    if (s !== undefined) return s;
    s = this.ids.length;
    if (s === this.#cap) this.#grow();
    this.ids.push(id);
    this.#slots.set(id, s);
    this.owner[s] = -1;
    this.doneBy[s] = -1;
    this.page[s] = -1;
    return s;
  }

  #grow(): void {
    const cap = Math.max(1024, this.#cap * 2);
    const grow = <T extends Uint8Array | Uint16Array | Uint32Array | Int32Array | Float64Array>(a: T, make: (n: number) => T): T => {
      const b = make(cap);
      b.set(a);
      return b;
    };
    this.state = grow(this.state, (n) => new Uint8Array(n));
    this.flags = grow(this.flags, (n) => new Uint8Array(n));
    this.weight = grow(this.weight, (n) => new Float64Array(n));
    this.fraction = grow(this.fraction, (n) => new Float64Array(n));
    this.doneAt = grow(this.doneAt, (n) => new Float64Array(n));
    this.doneBy = grow(this.doneBy, (n) => new Int32Array(n));
    this.owner = grow(this.owner, (n) => new Int32Array(n));
    this.started = grow(this.started, (n) => new Float64Array(n));
    this.failures = grow(this.failures, (n) => new Uint16Array(n));
    this.lost = grow(this.lost, (n) => new Uint16Array(n));
    this.retries = grow(this.retries, (n) => new Uint16Array(n));
    this.cuts = grow(this.cuts, (n) => new Uint32Array(n));
    this.records = grow(this.records, (n) => new Float64Array(n));
    this.revision = grow(this.revision, (n) => new Float64Array(n));
    this.page = grow(this.page, (n) => new Int32Array(n));
    this.pageWeight = grow(this.pageWeight, (n) => new Float64Array(n));
    this.#cap = cap;
  }
}
