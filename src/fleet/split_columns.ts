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
import { ColumnArrays } from "./column_arrays.ts";
import type { SplitFacts } from "./fleet_rate.ts";
import { IdOrder } from "./id_order.ts";
import { Names } from "./names.ts";
import { Slot } from "./slot.ts";

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

/** The columns (see the module doc). */
export class SplitColumns {
  /** The ids and their typed columns, a slot each. */
  readonly #a = new ColumnArrays();
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
  /** Slots in id order. */
  readonly #order = new IdOrder();

  /** `wallNow`: the clock completions count as lately by (the views' clock). */
  constructor(wallNow: () => number = Date.now) {
    this.#wallNow = wallNow;
  }

  /** Slots held (every id ever seen; a slot whose record went away is `Absent`). */
  get size(): number {
    return this.#a.ids.length;
  }

  /** The slot of `id`, or `undefined`. */
  slotOf(id: string): number | undefined {
    return this.#a.slotOf(id);
  }

  /** The slot of `id`, made (absent) when it has none. */
  slot(id: string): number {
    return this.#a.slot(id);
  }

  /** The id of a slot. */
  id(slot: number): string {
    return this.#a.ids[slot];
  }

  /** The slot's state (see {@linkcode Slot}). */
  state(slot: number): Slot {
    return this.#a.state[slot] as Slot;
  }

  /** Whether the slot holds a record of its own (dealt), and at which revision. */
  revision(slot: number): number | undefined {
    return this.#a.flags[slot] & DEALT ? this.#a.revision[slot] : undefined;
  }

  /** Whether its record is unreadable (then it counts as no split, only as an unreadable record). */
  invalid(slot: number): boolean {
    return (this.#a.flags[slot] & INVALID) !== 0;
  }

  /** The plan page it is on (-1: none read). */
  page(slot: number): number {
    return this.#a.page[slot];
  }

  /** Whether its descriptor may differ from its page's (cut, a residual, on no page), so a search reads its own. */
  ownDescriptor(slot: number): boolean {
    return (this.#a.flags[slot] & OWN_DESCRIPTOR) !== 0;
  }

  /** Its owner as `instance/session`, or `null`. */
  owner(slot: number): string | null {
    return this.names.name(this.#a.owner[slot]);
  }

  /** Its owner's interned index (-1: none): equal indexes, equal owners. */
  ownerIndex(slot: number): number {
    return this.#a.owner[slot];
  }

  /** Sets a slot from the facts of its readable record at `revision`. */
  setRecord(slot: number, f: SplitFacts, revision: number, ownDescriptor: boolean): void {
    this.#countOut(slot);
    this.#set(slot, f);
    let flags = (this.#a.flags[slot] & PAGED) | DEALT;
    if (f.permanent) flags |= PERMANENT;
    if (ownDescriptor) flags |= OWN_DESCRIPTOR;
    this.#a.flags[slot] = flags;
    this.#a.revision[slot] = revision;
    this.#countIn(slot);
  }

  /** Marks a slot's record unreadable at `revision` (it counts as no split; its page entry is hidden, as a full read hides it). */
  setInvalid(slot: number, revision: number): void {
    this.#countOut(slot);
    this.#a.state[slot] = Slot.Absent;
    this.#a.flags[slot] = (this.#a.flags[slot] & PAGED) | DEALT | INVALID;
    this.#a.revision[slot] = revision;
  }

  /** A slot's record went away: it is its page's planned split again, or absent. */
  clearRecord(slot: number): void {
    this.#countOut(slot);
    this.#a.flags[slot] &= PAGED;
    this.#a.revision[slot] = 0;
    if (this.#a.flags[slot] & PAGED) this.#setPaged(slot);
    else this.#a.state[slot] = Slot.Absent;
    this.#countIn(slot);
  }

  /** Notes that a slot is on plan page `page` with this weight: a planned split, unclaimed until it has a record. */
  setPage(slot: number, page: number, weight: number): void {
    this.#a.page[slot] = page;
    this.#a.pageWeight[slot] = weight;
    const dealt = (this.#a.flags[slot] & DEALT) !== 0;
    this.#a.flags[slot] |= PAGED;
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
    const st = this.#a.state[slot];
    if (st === Slot.Absent) return;
    const x = this.sums, w = this.#a.weight[slot];
    x.count[st] += sign;
    x.weight[st] += sign * w;
    if (this.#a.flags[slot] & PERMANENT) x.permanent += sign;
    x.failures += sign * this.#a.failures[slot];
    x.lost += sign * this.#a.lost[slot];
    x.retries += sign * this.#a.retries[slot];
    x.cuts += sign * this.#a.cuts[slot];
    const records = this.#a.records[slot];
    if (!Number.isNaN(records)) (x.records += sign * records, x.splitsWithRecords += sign);
    if (st === Slot.Unclaimed || st === Slot.Owned) {
      const f = Number.isNaN(this.#a.fraction[slot]) ? 0 : this.#a.fraction[slot];
      x.remaining += sign * w * (1 - f);
      x.partial += sign * w * f;
    }
    if (st === Slot.Owned) {
      const o = this.#a.owner[slot], n = (this.ownedBy.get(o) ?? 0) + sign;
      if (n) this.ownedBy.set(o, n);
      else this.ownedBy.delete(o);
    }
    const started = this.#a.started[slot];
    if (!Number.isNaN(started)) {
      if (sign > 0 && started < this.#startedMin) this.#startedMin = started;
      else if (sign < 0 && started === this.#startedMin) this.#startedStale = true;
    }
    if (st !== Slot.Completed) return;
    const at = this.#a.doneAt[slot];
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
      for (let s = 0; s < this.#a.ids.length; s++) {
        if (this.#a.state[s] !== Slot.Absent && this.#a.started[s] < this.#startedMin) this.#startedMin = this.#a.started[s];
      }
    }
    return this.#startedMin === Infinity ? null : this.#startedMin;
  }

  /** The latest completion time of any split, or `null` (scanned again only after the split that held it changed). */
  lastCompleted(): number | null {
    if (this.#lastStale) {
      this.#lastStale = false;
      this.#lastMax = -Infinity;
      for (let s = 0; s < this.#a.ids.length; s++) {
        if (this.#a.state[s] === Slot.Completed && this.#a.doneAt[s] > this.#lastMax) this.#lastMax = this.#a.doneAt[s];
      }
    }
    return this.#lastMax === -Infinity ? null : this.#lastMax;
  }

  /** Its weight. */
  weight(slot: number): number {
    return this.#a.weight[slot];
  }

  /** Its fraction done by its record's estimate, or `null`. */
  fraction(slot: number): number | null {
    const x = this.#a.fraction[slot];
    return Number.isNaN(x) ? null : x;
  }

  /** When it completed, or `null`. */
  completedAt(slot: number): number | null {
    const at = this.#a.doneAt[slot];
    return Number.isNaN(at) ? null : at;
  }

  /** Who completed it, or `null`. */
  completedBy(slot: number): string | null {
    return this.names.name(this.#a.doneBy[slot]);
  }

  /**
   * The `k` latest completions of every split, newest first (equal times
   * by id), by a scan: for when fewer than `k` completed lately.
   */
  latest(k: number): number[] {
    const out: number[] = [];
    for (let s = 0; s < this.#a.ids.length; s++) {
      if (this.#a.state[s] !== Slot.Completed || Number.isNaN(this.#a.doneAt[s])) continue;
      insertLatest(out, s, k, this.#a.doneAt, this.#a.ids);
    }
    return out;
  }

  /** The `k` latest of some slots, newest first (equal times by id). */
  latestOf(slots: Iterable<number>, k: number): number[] {
    const out: number[] = [];
    for (const s of slots) insertLatest(out, s, k, this.#a.doneAt, this.#a.ids);
    return out;
  }

  #setPaged(slot: number): void {
    this.#a.state[slot] = Slot.Unclaimed;
    this.#a.weight[slot] = this.#a.pageWeight[slot];
    this.#a.fraction[slot] = NaN;
    this.#a.doneAt[slot] = NaN;
    this.#a.doneBy[slot] = -1;
    this.#a.owner[slot] = -1;
    this.#a.started[slot] = NaN;
    this.#a.failures[slot] = this.#a.lost[slot] = this.#a.retries[slot] = 0;
    this.#a.cuts[slot] = 0;
    this.#a.records[slot] = NaN;
  }

  #set(slot: number, f: SplitFacts): void {
    this.#a.state[slot] = f.status === "runnable" ? (f.owner !== null ? Slot.Owned : Slot.Unclaimed)
      : f.status === "completed" ? Slot.Completed : f.status === "quarantined" ? Slot.Quarantined : Slot.Cancelled;
    this.#a.weight[slot] = f.weight;
    this.#a.fraction[slot] = f.fraction ?? NaN;
    this.#a.doneAt[slot] = f.completedAt ?? NaN;
    this.#a.doneBy[slot] = this.names.of(f.completedBy);
    this.#a.owner[slot] = this.names.of(f.owner);
    this.#a.started[slot] = f.started ?? NaN;
    this.#a.failures[slot] = Math.min(0xffff, f.failures);
    this.#a.lost[slot] = Math.min(0xffff, f.lost);
    this.#a.retries[slot] = Math.min(0xffff, f.retries);
    this.#a.cuts[slot] = Math.min(0xffffffff, f.cuts);
    this.#a.records[slot] = f.records ?? NaN;
  }

  /** The facts of a slot that is not absent, written into `f`. */
  facts(slot: number, f: SplitFacts): SplitFacts {
    const st = this.#a.state[slot];
    f.status = STATUS_OF[st]!;
    f.owner = this.names.name(this.#a.owner[slot]);
    f.weight = this.#a.weight[slot];
    f.permanent = (this.#a.flags[slot] & PERMANENT) !== 0;
    const x = this.#a.fraction[slot];
    f.fraction = Number.isNaN(x) ? null : x;
    const at = this.#a.doneAt[slot];
    f.completedAt = Number.isNaN(at) ? null : at;
    f.completedBy = this.names.name(this.#a.doneBy[slot]);
    const started = this.#a.started[slot];
    f.started = Number.isNaN(started) ? null : started;
    f.failures = this.#a.failures[slot];
    f.lost = this.#a.lost[slot];
    f.retries = this.#a.retries[slot];
    f.cuts = this.#a.cuts[slot];
    const rec = this.#a.records[slot];
    f.records = Number.isNaN(rec) ? undefined : rec;
    return f;
  }

  /** Every slot in id order (new ids merged in first). */
  order(): Int32Array {
    return this.#order.of(this.#a.ids);
  }

  /** The position in `order()` of the first id after `after` (binary search). */
  after(order: Int32Array, after: string): number {
    return IdOrder.after(order, after, this.#a.ids);
  }

  /** Every dealt slot (holding a record of its own, readable or not). */
  *dealt(): Iterable<number> {
    for (let s = 0; s < this.#a.ids.length; s++) if (this.#a.flags[s] & DEALT) yield s;
  }
}
