/**
 * The offer decision's overlay (`decideOffers` in `offers.ts`): what the decision has dealt and taken back so far, over the
 * tracker's offers and dealing order, which it reads and never changes.
 * Dealing from it, in one pass, decides exactly what dealing one offer at a
 * time from the tracker did.
 *
 * @module
 */
import { MaxHeap } from "../../util/heap.ts";
import type { Assignments } from "./directives.ts";
import type { DealingEntry } from "./dealing_order.ts";
import type { OfferIntent, PruneIntent, UnofferIntent } from "./intents.ts";
import type { LeaderView } from "./leader_view.ts";
import type { MemberState } from "./member_state.ts";

type Entry = DealingEntry;

/** Whether heap entry `x` comes before `y` in dealing order. */
function before(x: Entry, y: Entry): boolean {
  return x.key > y.key || (x.key === y.key && x.tie < y.tie);
}

/** Reads an order's entries, one at a time, without consuming it: `peek` the current one, `skip` past it. */
class Cursor {
  readonly #it: Iterator<Entry>;
  #cur: Entry | undefined;
  #done = false;

  constructor(it: Iterator<Entry>) {
    this.#it = it;
  }

  peek(): Entry | undefined {
    if (this.#cur === undefined && !this.#done) {
      const r = this.#it.next();
      if (r.done) this.#done = true;
      else this.#cur = r.value;
    }
    return this.#cur;
  }

  skip(): void {
    this.peek();
    this.#cur = undefined;
  }
}

/** One member's offers as the decision has changed them so far. */
interface Counts {
  offers: number;
  spares: Set<string>;
  weight: number;
  /** The weight of its spares. */
  spareWeight: number;
}

/** What the overlay reads: the view, the live members, the tracker (read only) and what must not be dealt now. */
export interface OverlayInput {
  view: LeaderView;
  states: ReadonlyMap<string, MemberState>;
  tracker: Assignments;
  withheld(id: string): boolean;
}

/**
 * The offer decision's view of the promises: the tracker's as they are,
 * plus what this decision dealt or took back, and the dealing order as
 * dealing one at a time would have left it (entries passed over skipped,
 * splits taken back merged in). Its intents, applied in order, make the
 * tracker what the overlay shows.
 *
 * @example
 * ```ts ignore
 * const o = new Overlay(book, (m) => freeLanes(view, tracker, m));
 * const id = o.nextForLane();
 * if (id !== undefined) o.offer(member, id, rev, weight, false);
 * ```
 */
export class Overlay {
  readonly intents: (OfferIntent | UnofferIntent | PruneIntent)[] = [];
  readonly #b: OverlayInput;
  readonly #freeLanes: (m: MemberState) => number;
  readonly #counts = new Map<MemberState, Counts>();
  /** Split id → member, for what this decision offered (`null`: it took the offer back). */
  readonly #offeredTo = new Map<string, MemberState | null>();
  readonly #front: Cursor;
  readonly #tail: Cursor;
  readonly #spares: Cursor;
  /** Splits this decision took back to the pool, in both dealing orders. */
  readonly #backFront = new MaxHeap<string>();
  readonly #backTail = new MaxHeap<string>();

  /** `freeLanes`: a member's free lanes as the tracker counts them (offers.ts's `freeLanes`). */
  constructor(b: OverlayInput, freeLanes: (m: MemberState) => number) {
    this.#b = b;
    this.#freeLanes = freeLanes;
    const { dealing } = b.tracker;
    this.#front = new Cursor(dealing.front());
    this.#tail = new Cursor(dealing.tail());
    this.#spares = new Cursor(dealing.spares());
  }

  #of(m: MemberState): Counts {
    let c = this.#counts.get(m);
    if (!c) {
      const d = this.#b.tracker.of(m);
      let spareWeight = 0;
      for (const id of d.spares) spareWeight += this.#b.view.splits.get(id)?.record.weight ?? 1;
      this.#counts.set(m, (c = { offers: d.offers.size, spares: new Set(d.spares), weight: d.offeredWeight, spareWeight }));
    }
    return c;
  }

  spareWeight(m: MemberState): number {
    return this.#of(m).spareWeight;
  }

  plain(m: MemberState): number {
    const c = this.#of(m);
    return c.offers - c.spares.size;
  }

  spares(m: MemberState): number {
    return this.#of(m).spares.size;
  }

  weight(m: MemberState): number {
    return this.#counts.get(m)?.weight ?? this.#b.tracker.of(m).offeredWeight;
  }

  offeredTo(id: string): MemberState | undefined {
    const o = this.#offeredTo.get(id);
    return o === null ? undefined : o ?? this.#b.tracker.offeredTo(id);
  }

  offer(m: MemberState, id: string, rev: number, weight: number, spare: boolean): void {
    const c = this.#of(m);
    c.offers++;
    if (spare) (c.spares.add(id), (c.spareWeight += weight));
    c.weight += weight;
    this.#offeredTo.set(id, m);
    this.intents.push({ kind: "offer", member: m, id, rev, weight, spare });
  }

  #unoffer(m: MemberState, id: string, weight: number, requeue: boolean, tell = true): void {
    const c = this.#of(m);
    if (c.spares.delete(id)) c.spareWeight = Math.max(0, c.spareWeight - weight);
    c.offers--;
    c.weight = c.offers === 0 ? 0 : Math.max(0, c.weight - weight);
    this.#offeredTo.set(id, null);
    this.intents.push({ kind: "unoffer", member: m, id, weight, requeue, tell });
  }

  /** More offers for lanes than free lanes (a grant or a handoff filled one): the last ones go back to the pool. */
  trim(m: MemberState, lanes: number): void {
    const { view } = this.#b;
    const c = this.#of(m);
    // Its lane offers as dealing one at a time left them: not taken back, not spares.
    const plain = [...this.#b.tracker.of(m).offers.keys()].filter((id) => this.offeredTo(id) === m && !c.spares.has(id));
    for (let i = plain.length - 1; i >= 0 && this.plain(m) > lanes; i--) {
      const id = plain[i];
      this.#unoffer(m, id, view.splits.get(id)?.record.weight ?? 1, true);
      if (view.free.has(id) && view.splits.has(id)) {
        const w = view.splits.get(id)!.record.weight, r = view.rank(id);
        this.#backFront.push(id, w, r);
        this.#backTail.push(id, -w, -r);
      }
    }
  }

  #dealable(id: string): boolean {
    return this.#b.view.free.has(id) && this.offeredTo(id) === undefined && !this.#b.withheld(id);
  }

  /** The first dealable entry of a dealing order merged with the splits taken back (peeked, not taken). */
  #first(cursor: Cursor, back: MaxHeap<string>): { e: Entry; from: Cursor | MaxHeap<string> } | undefined {
    let c = cursor.peek();
    while (c !== undefined && !this.#dealable(c.item)) (cursor.skip(), (c = cursor.peek()));
    let r = back.peek();
    while (r !== undefined && !this.#dealable(r.item)) (back.pop(), (r = back.peek()));
    if (c === undefined) return r && { e: r, from: back };
    if (r !== undefined && before(r, c)) return { e: r, from: back };
    return { e: c, from: cursor };
  }

  /**
   * The split a free lane gets: the first in dealing order among the free
   * splits nobody is offered and every member's spares (a spare taken from
   * its member leaves its offers), or `undefined`.
   */
  nextForLane(lane?: { m: MemberState; ms: readonly MemberState[] }): string | undefined {
    const free = this.#first(this.#front, this.#backFront);
    // A free lane also takes a split another member holds prefetched for a busy lane, when it comes first:
    // a prefetched split must not wait behind a lane that may not free soon while a lane elsewhere is idle.
    const pre = lane && this.#prefetched(lane.m, lane.ms);
    if (pre) {
      const spare = this.#spares.peek();
      if ((free === undefined || before(pre.e, free.e)) && (spare === undefined || before(pre.e, spare))) {
        this.#unoffer(pre.from, pre.e.item, pre.e.key, false);
        return pre.e.item;
      }
    }
    let spare = this.#spares.peek();
    while (spare !== undefined) {
      const st = this.#b.states.get(this.offeredTo(spare.item)?.instance ?? "");
      if (st && this.#of(st).spares.has(spare.item)) break;
      this.#spares.skip(); // stale: claimed, moved, or no longer a spare
      spare = this.#spares.peek();
    }
    if (spare !== undefined && (free === undefined || before(spare, free.e))) {
      this.#spares.skip();
      const id = spare.item;
      const st = this.#b.states.get(this.offeredTo(id)!.instance)!;
      // Its record is not rewritten for this: it lists the spare until its
      // next write, and a claim of it then (no leader) loses its CAS.
      this.#unoffer(st, id, this.#b.view.splits.get(id)?.record.weight ?? 1, false, false);
      return id;
    }
    if (free === undefined) return undefined;
    if (free.from instanceof Cursor) free.from.skip();
    else free.from.pop();
    return free.e.item;
  }

  /**
   * The first split in dealing order that a member other than `m` holds
   * prefetched (a lane offer beyond its free lanes), as a heap entry, and
   * who holds it; `undefined` when none does.
   */
  #prefetched(m: MemberState, ms: readonly MemberState[]): { e: Entry; from: MemberState } | undefined {
    const { view } = this.#b;
    let best: { e: Entry; from: MemberState } | undefined;
    for (const x of ms) {
      if (x === m || this.plain(x) <= this.#freeLanes(x)) continue;
      const c = this.#of(x);
      for (const id of this.#b.tracker.of(x).offers.keys()) {
        if (this.offeredTo(id) !== x || c.spares.has(id) || !view.free.has(id)) continue;
        const e = { item: id, key: view.splits.get(id)?.record.weight ?? 1, tie: view.rank(id) };
        if (!best || before(e, best.e)) best = { e, from: x };
      }
    }
    return best;
  }

  /** The last free split in dealing order nobody is offered, or `undefined`. */
  nextSpare(): string | undefined {
    const top = this.#first(this.#tail, this.#backTail);
    if (top === undefined) return undefined;
    if (top.from instanceof Cursor) top.from.skip();
    else top.from.pop();
    return top.e.item;
  }
}
