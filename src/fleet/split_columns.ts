/**
 * The splits of a live fleet index (`fleet_index.ts`), compact: per split
 * its id and, in typed columns, the {@linkcode SplitFacts} a view folds
 * (state, owner, weight, fraction done, completion time and who completed
 * it, the earliest tenancy start, failures, lost runs, retries, cuts,
 * records), its record's revision and the plan page it is on — about 150
 * bytes a split with its id (measured at a million), where the decoded
 * record took 2-3 KB. The columns keep the sums a view folds up to date
 * as they change (`sums`, `ownedBy`, `lately`). A
 * split's descriptor, history and progress are not kept: the rows a view
 * lists are read when asked. Ids are kept in id order (`order`), merged
 * lazily as new ones come, so paging by id is a walk from the cursor.
 *
 * @module
 */
import type { SplitStatus } from "../records.ts";
import type { SplitFacts } from "./fleet_rate.ts";

/** A slot's state: absent (no record, on no page read), or one of a view's states. */
export const Slot = { Absent: 0, Unclaimed: 1, Owned: 2, Completed: 3, Quarantined: 4, Cancelled: 5 } as const;
/** One of the {@linkcode Slot} states. */
export type Slot = (typeof Slot)[keyof typeof Slot];

const STATUS_OF: readonly (SplitStatus | undefined)[] = [undefined, "runnable", "runnable", "completed", "quarantined", "cancelled"];

/** How recent a completion is kept among the lately completed: the sparkline's span, and a minute of clock skew. */
export const LATELY_MS = 11 * 60_000;

/** Inserts slot `s` into `out` (at most `k`, newest completion first, equal times by id). */
function insertLatest(out: number[], s: number, k: number, at: Float64Array, ids: readonly string[]): void {
  const newer = (a: number, b: number) => at[a] > at[b] || (at[a] === at[b] && ids[a] < ids[b]);
  if (out.length === k && !newer(s, out[k - 1])) return;
  let i = out.length;
  while (i > 0 && newer(s, out[i - 1])) i--;
  out.splice(i, 0, s);
  if (out.length > k) out.pop();
}

/** Flags of a slot. */
const PERMANENT = 1, DEALT = 2, INVALID = 4, PAGED = 8, OWN_DESCRIPTOR = 16;

/** Interned strings (owners as `instance/session`, completers as instances). */
class Names {
  readonly list: string[] = [];
  readonly #index = new Map<string, number>();
  of(name: string | null): number {
    if (name === null) return -1;
    let i = this.#index.get(name);
    if (i === undefined) this.#index.set(name, (i = this.list.push(name) - 1));
    return i;
  }
  name(i: number): string | null {
    return i < 0 ? null : this.list[i];
  }
}

/** The columns (see the module doc). */
export class SplitColumns {
  readonly #slots = new Map<string, number>();
  readonly #ids: string[] = [];
  #cap = 0;
  #state = new Uint8Array(0);
  #flags = new Uint8Array(0);
  #weight = new Float64Array(0);
  #fraction = new Float64Array(0);
  #doneAt = new Float64Array(0);
  #doneBy = new Int32Array(0);
  #owner = new Int32Array(0);
  #started = new Float64Array(0);
  #failures = new Uint16Array(0);
  #lost = new Uint16Array(0);
  #retries = new Uint16Array(0);
  #cuts = new Uint32Array(0);
  #records = new Float64Array(0);
  #revision = new Float64Array(0);
  #page = new Int32Array(0);
  #pageWeight = new Float64Array(0);
  /** Owners (`instance/session`) and completers (instances), interned. */
  readonly names: Names = new Names();
  /**
   * What a view folds, kept up to date by every change (each slot counted
   * in as it is set, out before it changes): by state (indexed by
   * {@linkcode Slot}) the splits and their weight, and job-wide sums.
   */
  readonly sums = {
    count: new Float64Array(6),
    weight: new Float64Array(6),
    permanent: 0,
    failures: 0,
    lost: 0,
    retries: 0,
    cuts: 0,
    records: 0,
    splitsWithRecords: 0,
    timed: 0,
    untimed: 0,
    /** Runnable weight left by the records' estimates, and the part they count done. */
    remaining: 0,
    partial: 0,
  };
  /** Owned splits by owner (interned index). */
  readonly ownedBy: Map<number, number> = new Map();
  /** Slots completed lately (within {@linkcode LATELY_MS} of when they were counted in), with their completion time. */
  readonly lately: Map<number, number> = new Map();
  #startedMin = Infinity;
  #startedStale = false;
  #lastMax = -Infinity;
  #lastStale = false;
  readonly #wallNow: () => number;
  /** Slots in id order, and how many of the slots it holds (those after it are merged in at the next `order`). */
  #order = new Int32Array(0);
  #ordered = 0;

  /** `wallNow`: the clock completions count as lately by (the views' clock). */
  constructor(wallNow: () => number = Date.now) {
    this.#wallNow = wallNow;
  }

  /** Slots held (every id ever seen; a slot whose record went away is `Absent`). */
  get size(): number {
    return this.#ids.length;
  }

  /** The slot of `id`, or `undefined`. */
  slotOf(id: string): number | undefined {
    return this.#slots.get(id);
  }

  /** The slot of `id`, made (absent) when it has none. */
  slot(id: string): number {
    let s = this.#slots.get(id);
    if (s !== undefined) return s;
    s = this.#ids.length;
    if (s === this.#cap) this.#grow();
    this.#ids.push(id);
    this.#slots.set(id, s);
    this.#owner[s] = -1;
    this.#doneBy[s] = -1;
    this.#page[s] = -1;
    return s;
  }

  /** The id of a slot. */
  id(slot: number): string {
    return this.#ids[slot];
  }

  #grow(): void {
    const cap = Math.max(1024, this.#cap * 2);
    const grow = <T extends Uint8Array | Uint16Array | Uint32Array | Int32Array | Float64Array>(a: T, make: (n: number) => T): T => {
      const b = make(cap);
      b.set(a);
      return b;
    };
    this.#state = grow(this.#state, (n) => new Uint8Array(n));
    this.#flags = grow(this.#flags, (n) => new Uint8Array(n));
    this.#weight = grow(this.#weight, (n) => new Float64Array(n));
    this.#fraction = grow(this.#fraction, (n) => new Float64Array(n));
    this.#doneAt = grow(this.#doneAt, (n) => new Float64Array(n));
    this.#doneBy = grow(this.#doneBy, (n) => new Int32Array(n));
    this.#owner = grow(this.#owner, (n) => new Int32Array(n));
    this.#started = grow(this.#started, (n) => new Float64Array(n));
    this.#failures = grow(this.#failures, (n) => new Uint16Array(n));
    this.#lost = grow(this.#lost, (n) => new Uint16Array(n));
    this.#retries = grow(this.#retries, (n) => new Uint16Array(n));
    this.#cuts = grow(this.#cuts, (n) => new Uint32Array(n));
    this.#records = grow(this.#records, (n) => new Float64Array(n));
    this.#revision = grow(this.#revision, (n) => new Float64Array(n));
    this.#page = grow(this.#page, (n) => new Int32Array(n));
    this.#pageWeight = grow(this.#pageWeight, (n) => new Float64Array(n));
    this.#cap = cap;
  }

  /** The slot's state (see {@linkcode Slot}). */
  state(slot: number): Slot {
    return this.#state[slot] as Slot;
  }

  /** Whether the slot holds a record of its own (dealt), and at which revision. */
  revision(slot: number): number | undefined {
    return this.#flags[slot] & DEALT ? this.#revision[slot] : undefined;
  }

  /** Whether its record is unreadable (then it counts as no split, only as an unreadable record). */
  invalid(slot: number): boolean {
    return (this.#flags[slot] & INVALID) !== 0;
  }

  /** The plan page it is on (-1: none read). */
  page(slot: number): number {
    return this.#page[slot];
  }

  /** Whether its descriptor may differ from its page's (cut, a residual, on no page), so a search reads its own. */
  ownDescriptor(slot: number): boolean {
    return (this.#flags[slot] & OWN_DESCRIPTOR) !== 0;
  }

  /** Its owner as `instance/session`, or `null`. */
  owner(slot: number): string | null {
    return this.names.name(this.#owner[slot]);
  }

  /** Its owner's interned index (-1: none): equal indexes, equal owners. */
  ownerIndex(slot: number): number {
    return this.#owner[slot];
  }

  /** Sets a slot from the facts of its readable record at `revision`. */
  setRecord(slot: number, f: SplitFacts, revision: number, ownDescriptor: boolean): void {
    this.#countOut(slot);
    this.#set(slot, f);
    let flags = (this.#flags[slot] & PAGED) | DEALT;
    if (f.permanent) flags |= PERMANENT;
    if (ownDescriptor) flags |= OWN_DESCRIPTOR;
    this.#flags[slot] = flags;
    this.#revision[slot] = revision;
    this.#countIn(slot);
  }

  /** Marks a slot's record unreadable at `revision` (it counts as no split; its page entry is hidden, as a full read hides it). */
  setInvalid(slot: number, revision: number): void {
    this.#countOut(slot);
    this.#state[slot] = Slot.Absent;
    this.#flags[slot] = (this.#flags[slot] & PAGED) | DEALT | INVALID;
    this.#revision[slot] = revision;
  }

  /** A slot's record went away: it is its page's planned split again, or absent. */
  clearRecord(slot: number): void {
    this.#countOut(slot);
    this.#flags[slot] &= PAGED;
    this.#revision[slot] = 0;
    if (this.#flags[slot] & PAGED) this.#setPaged(slot);
    else this.#state[slot] = Slot.Absent;
    this.#countIn(slot);
  }

  /** Notes that a slot is on plan page `page` with this weight: a planned split, unclaimed until it has a record. */
  setPage(slot: number, page: number, weight: number): void {
    this.#page[slot] = page;
    this.#pageWeight[slot] = weight;
    const dealt = (this.#flags[slot] & DEALT) !== 0;
    this.#flags[slot] |= PAGED;
    if (dealt) return;
    this.#countOut(slot);
    this.#setPaged(slot);
    this.#countIn(slot);
  }

  /** Counts a slot into the sums (as it is now). */
  #countIn(slot: number): void {
    this.#count(slot, 1);
  }

  /** Counts a slot out of the sums (before it changes). */
  #countOut(slot: number): void {
    this.#count(slot, -1);
  }

  #count(slot: number, sign: 1 | -1): void {
    const st = this.#state[slot];
    if (st === Slot.Absent) return;
    const x = this.sums, w = this.#weight[slot];
    x.count[st] += sign;
    x.weight[st] += sign * w;
    if (this.#flags[slot] & PERMANENT) x.permanent += sign;
    x.failures += sign * this.#failures[slot];
    x.lost += sign * this.#lost[slot];
    x.retries += sign * this.#retries[slot];
    x.cuts += sign * this.#cuts[slot];
    const records = this.#records[slot];
    if (!Number.isNaN(records)) (x.records += sign * records, x.splitsWithRecords += sign);
    if (st === Slot.Unclaimed || st === Slot.Owned) {
      const f = Number.isNaN(this.#fraction[slot]) ? 0 : this.#fraction[slot];
      x.remaining += sign * w * (1 - f);
      x.partial += sign * w * f;
    }
    if (st === Slot.Owned) {
      const o = this.#owner[slot], n = (this.ownedBy.get(o) ?? 0) + sign;
      if (n) this.ownedBy.set(o, n);
      else this.ownedBy.delete(o);
    }
    const started = this.#started[slot];
    if (!Number.isNaN(started)) {
      if (sign > 0 && started < this.#startedMin) this.#startedMin = started;
      else if (sign < 0 && started === this.#startedMin) this.#startedStale = true;
    }
    if (st !== Slot.Completed) return;
    const at = this.#doneAt[slot];
    if (Number.isNaN(at)) return void (x.untimed += sign);
    x.timed += sign;
    if (sign < 0) {
      this.lately.delete(slot);
      if (at === this.#lastMax) this.#lastStale = true;
      return;
    }
    if (at > this.#lastMax) this.#lastMax = at;
    if (at >= this.#wallNow() - LATELY_MS) this.lately.set(slot, at);
  }

  /** The earliest tenancy start of any split, or `null` (scanned again only after the split that held it changed). */
  started(): number | null {
    if (this.#startedStale) {
      this.#startedStale = false;
      this.#startedMin = Infinity;
      for (let s = 0; s < this.#ids.length; s++) {
        if (this.#state[s] !== Slot.Absent && this.#started[s] < this.#startedMin) this.#startedMin = this.#started[s];
      }
    }
    return this.#startedMin === Infinity ? null : this.#startedMin;
  }

  /** The latest completion time of any split, or `null` (scanned again only after the split that held it changed). */
  lastCompleted(): number | null {
    if (this.#lastStale) {
      this.#lastStale = false;
      this.#lastMax = -Infinity;
      for (let s = 0; s < this.#ids.length; s++) {
        if (this.#state[s] === Slot.Completed && this.#doneAt[s] > this.#lastMax) this.#lastMax = this.#doneAt[s];
      }
    }
    return this.#lastMax === -Infinity ? null : this.#lastMax;
  }

  /** Its weight. */
  weight(slot: number): number {
    return this.#weight[slot];
  }

  /** Its fraction done by its record's estimate, or `null`. */
  fraction(slot: number): number | null {
    const x = this.#fraction[slot];
    return Number.isNaN(x) ? null : x;
  }

  /** When it completed, or `null`. */
  completedAt(slot: number): number | null {
    const at = this.#doneAt[slot];
    return Number.isNaN(at) ? null : at;
  }

  /** Who completed it, or `null`. */
  completedBy(slot: number): string | null {
    return this.names.name(this.#doneBy[slot]);
  }

  /**
   * The `k` latest completions of every split, newest first (equal times
   * by id), by a scan: for when fewer than `k` completed lately.
   */
  latest(k: number): number[] {
    const out: number[] = [];
    for (let s = 0; s < this.#ids.length; s++) {
      if (this.#state[s] !== Slot.Completed || Number.isNaN(this.#doneAt[s])) continue;
      insertLatest(out, s, k, this.#doneAt, this.#ids);
    }
    return out;
  }

  /** The `k` latest of some slots, newest first (equal times by id). */
  latestOf(slots: Iterable<number>, k: number): number[] {
    const out: number[] = [];
    for (const s of slots) insertLatest(out, s, k, this.#doneAt, this.#ids);
    return out;
  }

  #setPaged(slot: number): void {
    this.#state[slot] = Slot.Unclaimed;
    this.#weight[slot] = this.#pageWeight[slot];
    this.#fraction[slot] = NaN;
    this.#doneAt[slot] = NaN;
    this.#doneBy[slot] = -1;
    this.#owner[slot] = -1;
    this.#started[slot] = NaN;
    this.#failures[slot] = this.#lost[slot] = this.#retries[slot] = 0;
    this.#cuts[slot] = 0;
    this.#records[slot] = NaN;
  }

  #set(slot: number, f: SplitFacts): void {
    this.#state[slot] = f.status === "runnable" ? (f.owner !== null ? Slot.Owned : Slot.Unclaimed)
      : f.status === "completed" ? Slot.Completed : f.status === "quarantined" ? Slot.Quarantined : Slot.Cancelled;
    this.#weight[slot] = f.weight;
    this.#fraction[slot] = f.fraction ?? NaN;
    this.#doneAt[slot] = f.completedAt ?? NaN;
    this.#doneBy[slot] = this.names.of(f.completedBy);
    this.#owner[slot] = this.names.of(f.owner);
    this.#started[slot] = f.started ?? NaN;
    this.#failures[slot] = Math.min(0xffff, f.failures);
    this.#lost[slot] = Math.min(0xffff, f.lost);
    this.#retries[slot] = Math.min(0xffff, f.retries);
    this.#cuts[slot] = Math.min(0xffffffff, f.cuts);
    this.#records[slot] = f.records ?? NaN;
  }

  /** The facts of a slot that is not absent, written into `f`. */
  facts(slot: number, f: SplitFacts): SplitFacts {
    const st = this.#state[slot];
    f.status = STATUS_OF[st]!;
    f.owner = this.names.name(this.#owner[slot]);
    f.weight = this.#weight[slot];
    f.permanent = (this.#flags[slot] & PERMANENT) !== 0;
    const x = this.#fraction[slot];
    f.fraction = Number.isNaN(x) ? null : x;
    const at = this.#doneAt[slot];
    f.completedAt = Number.isNaN(at) ? null : at;
    f.completedBy = this.names.name(this.#doneBy[slot]);
    const started = this.#started[slot];
    f.started = Number.isNaN(started) ? null : started;
    f.failures = this.#failures[slot];
    f.lost = this.#lost[slot];
    f.retries = this.#retries[slot];
    f.cuts = this.#cuts[slot];
    const rec = this.#records[slot];
    f.records = Number.isNaN(rec) ? undefined : rec;
    return f;
  }

  /** Every slot in id order (new ids merged in first). */
  order(): Int32Array {
    const n = this.#ids.length;
    if (this.#ordered === n) return this.#order.length === n ? this.#order : (this.#order = this.#order.subarray(0, n));
    const ids = this.#ids;
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

  /** The position in `order()` of the first id after `after` (binary search). */
  after(order: Int32Array, after: string): number {
    let lo = 0, hi = order.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#ids[order[mid]] <= after) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Every dealt slot (holding a record of its own, readable or not). */
  *dealt(): Iterable<number> {
    for (let s = 0; s < this.#ids.length; s++) if (this.#flags[s] & DEALT) yield s;
  }
}
