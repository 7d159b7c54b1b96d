/**
 * The leader's splits, compact (issue 39): per split only what its decisions
 * read — revision, epoch, status, owner, attempts, weight, its job run,
 * its place in the dealing order, the plan page it waits on, whether it was
 * quarantined by a permanent failure — in columns, about a hundred
 * bytes a split with its id, where a decoded record took 2.5–3 KB. A split
 * record's history (tenancies, failures), its progress and its descriptor
 * are not kept: what writes a split record over the leader's view (a
 * takeover, a fence) reads the record first, and an offer carries no
 * record (the member reads it, or, for a split not dealt yet, its page).
 *
 * `get` builds the slim record a decision reads; `set` keeps what of a
 * record the table holds. It reads like a `Map` of versioned records.
 *
 * @module
 */
import type { Owner, Residual, SplitRecord, SplitStatus } from "../../records.ts";
import type { Versioned } from "../versioned.ts";
import { permanentlyFailed } from "../../records/transitions.ts";

const STATUS: readonly SplitStatus[] = ["runnable", "completed", "quarantined", "cancelled"];
const STATUS_CODE: Record<SplitStatus, number> = { runnable: 0, completed: 1, quarantined: 2, cancelled: 3 };
const SPEC = 4;
const PERMANENT = 8;
/** Seen in the split watch's current snapshot (see `mark`): kept across `set`, cleared by `unmarkAll`. */
const MARK = 16;

/** What a few splits carry beyond the columns: their lineage and cuts. */
interface Extra {
  parent?: string;
  root?: string;
  cuts?: number;
  residuals?: Residual[];
}

/** The leader's split records, as columns (see the module doc). */
export class SplitTable implements Iterable<[string, Versioned<SplitRecord>]> {
  readonly #slots = new Map<string, number>();
  readonly #freeSlots: number[] = [];
  #used = 0;
  #cap = 0;
  #revision = new Float64Array(0);
  #weight = new Float64Array(0);
  #rank = new Float64Array(0);
  #epoch = new Int32Array(0);
  #owner = new Int32Array(0);
  #page = new Int32Array(0);
  #attempts = new Uint16Array(0);
  #run = new Uint16Array(0);
  #flags = new Uint8Array(0);
  readonly #extra = new Map<number, Extra>();
  /** Owners interned: every split of one session shares one object. */
  readonly #owners: Owner[] = [];
  readonly #ownerIndex = new Map<string, number>();

  /** Splits held. */
  get size(): number {
    return this.#slots.size;
  }

  /** Whether `id` is held. */
  has(id: string): boolean {
    return this.#slots.has(id);
  }

  /** The slim record of `id` (what decisions read) and its revision, or `undefined`. */
  get(id: string): Versioned<SplitRecord> | undefined {
    const s = this.#slots.get(id);
    return s === undefined ? undefined : { record: this.#record(s), revision: this.#revision[s] };
  }

  /** The revision of `id`'s record (0: planned, not dealt yet), or `undefined`. */
  revision(id: string): number | undefined {
    const s = this.#slots.get(id);
    return s === undefined ? undefined : this.#revision[s];
  }

  /** Whether `id` is quarantined by a permanent failure (its last failure said so). */
  permanent(id: string): boolean {
    const s = this.#slots.get(id);
    return s !== undefined && (this.#flags[s] & PERMANENT) !== 0;
  }

  /** The weight of `id`, or `undefined`. */
  weight(id: string): number | undefined {
    const s = this.#slots.get(id);
    return s === undefined ? undefined : this.#weight[s];
  }

  /** The epoch of `id`, or `undefined`. */
  epoch(id: string): number | undefined {
    const s = this.#slots.get(id);
    return s === undefined ? undefined : this.#epoch[s];
  }

  /** The page of the plan `id` waits on (a split not dealt yet), or `undefined`. */
  page(id: string): number | undefined {
    const s = this.#slots.get(id);
    return s === undefined || this.#page[s] < 0 ? undefined : this.#page[s];
  }

  /** The place of `id` in the dealing order among equal weights, or `undefined` when none was given. */
  rank(id: string): number | undefined {
    const s = this.#slots.get(id);
    return s === undefined || Number.isNaN(this.#rank[s]) ? undefined : this.#rank[s];
  }

  /** Gives `id` (held) its place in the dealing order. */
  setRank(id: string, rank: number): void {
    const s = this.#slots.get(id);
    if (s !== undefined) this.#rank[s] = rank;
  }

  /**
   * Holds `v` for `id` (what of it the table keeps), with the plan page it
   * waits on when it is a split not dealt yet (revision 0). Its rank stays.
   */
  set(id: string, v: Versioned<SplitRecord>, page = -1): void {
    let s = this.#slots.get(id);
    let mark = 0;
    if (s === undefined) {
      s = this.#freeSlots.pop() ?? this.#grow();
      this.#slots.set(id, s);
      this.#rank[s] = NaN;
    } else mark = this.#flags[s] & MARK;
    const r = v.record;
    this.#revision[s] = v.revision;
    this.#weight[s] = r.weight;
    this.#epoch[s] = r.epoch;
    this.#attempts[s] = Math.min(r.attempts, 0xffff);
    this.#run[s] = Math.min(r.run ?? 0, 0xffff);
    this.#flags[s] = STATUS_CODE[r.status] | (r.spec ? SPEC : 0) | (permanentlyFailed(r) ? PERMANENT : 0) | mark;
    this.#owner[s] = r.owner ? this.#intern(r.owner) : -1;
    this.#page[s] = v.revision === 0 ? page : -1;
    if (r.parent !== undefined || r.root !== undefined || r.cuts !== undefined || r.residuals !== undefined) {
      const x: Extra = {};
      if (r.parent !== undefined) x.parent = r.parent;
      if (r.root !== undefined) x.root = r.root;
      if (r.cuts !== undefined) x.cuts = r.cuts;
      if (r.residuals !== undefined) x.residuals = r.residuals;
      this.#extra.set(s, x);
    } else this.#extra.delete(s);
  }

  /**
   * Splits of job run `run` or later that a plan named (not residuals cut
   * from a split): what a publish counts as planned. Read from the columns,
   * no record built (a plan in parts counts at each part's publish).
   */
  planned(run: number): number {
    let n = 0;
    for (const s of this.#slots.values()) if (Math.max(this.#run[s], 1) >= run && this.#extra.get(s)?.parent === undefined) n++;
    return n;
  }

  /** Marks `id` (held) as seen in the split watch's snapshot now being replayed. */
  mark(id: string): void {
    const s = this.#slots.get(id);
    if (s !== undefined) this.#flags[s] |= MARK;
  }

  /** Clears every mark: a new snapshot begins. */
  unmarkAll(): void {
    for (let s = 0; s < this.#used; s++) this.#flags[s] &= ~MARK;
  }

  /** The ids with a record of their own (revision > 0) that no snapshot put marked since `unmarkAll`. */
  unmarked(): string[] {
    const out: string[] = [];
    for (const [id, s] of this.#slots) if (this.#revision[s] > 0 && (this.#flags[s] & MARK) === 0) out.push(id);
    return out;
  }

  /** Drops `id`; whether it was held. */
  delete(id: string): boolean {
    const s = this.#slots.get(id);
    if (s === undefined) return false;
    this.#slots.delete(id);
    this.#extra.delete(s);
    this.#freeSlots.push(s);
    return true;
  }

  /** Every id held. */
  keys(): IterableIterator<string> {
    return this.#slots.keys();
  }

  /** Every slim record held, with its revision. */
  *values(): IterableIterator<Versioned<SplitRecord>> {
    for (const s of this.#slots.values()) yield { record: this.#record(s), revision: this.#revision[s] };
  }

  /** Every id with its slim record. */
  *entries(): IterableIterator<[string, Versioned<SplitRecord>]> {
    for (const [id, s] of this.#slots) yield [id, { record: this.#record(s), revision: this.#revision[s] }];
  }

  [Symbol.iterator](): IterableIterator<[string, Versioned<SplitRecord>]> {
    return this.entries();
  }

  #record(s: number): SplitRecord {
    const o = this.#owner[s];
    const f = this.#flags[s];
    const r: SplitRecord = {
      v: 2,
      epoch: this.#epoch[s],
      status: STATUS[f & 3],
      owner: o < 0 ? null : this.#owners[o],
      attempts: this.#attempts[s],
      weight: this.#weight[s],
      progress: null,
    };
    if (f & SPEC) r.spec = true;
    if (this.#run[s] > 0) r.run = this.#run[s];
    const x = this.#extra.get(s);
    if (x) Object.assign(r, x);
    return r;
  }

  #intern(o: Owner): number {
    const k = o.instance + " " + o.session;
    let i = this.#ownerIndex.get(k);
    if (i === undefined) {
      i = this.#owners.length;
      this.#owners.push({ instance: o.instance, session: o.session });
      this.#ownerIndex.set(k, i);
    }
    return i;
  }

  /** One more slot, the columns doubled when full. */
  #grow(): number {
    const s = this.#used++;
    if (s >= this.#cap) {
      const cap = Math.max(1024, this.#cap * 2);
      const grow = <T extends Float64Array | Int32Array | Uint16Array | Uint8Array>(a: T, make: (n: number) => T): T => {
        const b = make(cap);
        b.set(a);
        return b;
      };
      this.#revision = grow(this.#revision, (n) => new Float64Array(n));
      this.#weight = grow(this.#weight, (n) => new Float64Array(n));
      this.#rank = grow(this.#rank, (n) => new Float64Array(n));
      this.#epoch = grow(this.#epoch, (n) => new Int32Array(n));
      this.#owner = grow(this.#owner, (n) => new Int32Array(n));
      this.#page = grow(this.#page, (n) => new Int32Array(n));
      this.#attempts = grow(this.#attempts, (n) => new Uint16Array(n));
      this.#run = grow(this.#run, (n) => new Uint16Array(n));
      this.#flags = grow(this.#flags, (n) => new Uint8Array(n));
      this.#cap = cap;
    }
    return s;
  }
}
