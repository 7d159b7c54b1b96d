/**
 * How the leader hands out free splits (docs/DESIGN.md, "How a split reaches
 * a worker without races"): every free lane of a live member gets an offer,
 * the first split in dealing order (heaviest first, equal weights in the
 * planner's order) — free, or a spare of any member; besides, each member
 * holds up to twice its `maxInFlight` spares, dealt from the other end of
 * the order and refilled once half are used, which it claims only when the
 * leader has not answered a free lane for `spareClaimAfterMs`. Least-loaded
 * members first, within fair share of the runnable weight unless no other
 * member below its share has a free lane. Each free split is offered to one
 * member at a time.
 *
 * {@linkcode decideOffers} decides, purely: it reads the dealing order
 * without consuming it and returns offer intents; the role applies them
 * through the tracker, then {@linkcode pruneDealing} drops the entries the
 * decision passed over for good.
 *
 * @module
 */
import { MaxHeap } from "../../util/heap.ts";
import type { AssignmentTracker } from "./assignment_tracker.ts";
import type { OfferIntent, UnofferIntent } from "./intents.ts";
import type { LeaderView } from "./leader_view.ts";
import type { MemberState } from "./member_state.ts";

/** Most offers one member holds (bounds the assignment record). */
export const MAX_OFFERS = 256;

/** Most spares dealt to cover a leaderless interval, per lane (tiny splits would otherwise ask for hundreds). */
export const SPARES_PER_LANE = 16;

/**
 * Beyond two per lane, one spare per this many ms of the observed split
 * duration (16 per lane from splits of 1 s on). Every rewrite of a member's
 * assignment record lists all its spares, and a lane's record is rewritten
 * about once per split it finishes, so this bounds what spares cost per
 * second (16 entries per lane) whatever the split size: tiny tasks asked
 * for the cap, 128 entries (5.7 KB) in every rewrite at 8 lanes, where 16
 * per lane covers milliseconds of a leaderless interval anyway.
 */
export const SPARE_PER_SPLIT_MS = 62.5;

/**
 * Splits shorter than this (the observed duration of a tenancy) are
 * prefetched: each busy lane holds its next split as an offer, which its
 * member claims the moment the lane frees instead of waiting for the
 * leader's next write (a round trip of a few ms: half the life of a tiny
 * task), and the leader refills once half of them are used, so one
 * assignment write serves many splits. Longer splits wait for the leader:
 * its round trip is nothing next to them, and a prefetched split waits
 * behind its lane's current one while a lane elsewhere may free first
 * (the start-order inversions of DESIGN "Why not a prefetch claimed at
 * once").
 */
export const PREFETCH_BELOW_MS = 250;

/**
 * Offers beyond its free lanes a member holds for its busy lanes (see
 * {@linkcode PREFETCH_BELOW_MS}): one for each lane whose split started
 * less than that ago — a lane that has run one split for longer (a
 * straggler among tiny splits) is not expected to free soon, and its next
 * split is better dealt to whichever lane frees first.
 */
export function prefetchTarget(view: LeaderView, m: MemberState): number {
  if (view.splitMs === undefined || view.splitMs >= PREFETCH_BELOW_MS) return 0;
  return Math.min(m.maxInFlight, view.heldLately(m.key, PREFETCH_BELOW_MS));
}

/** What the offer decision reads. */
export interface OfferBook {
  view: LeaderView;
  /** Live member sessions by instance. */
  states: ReadonlyMap<string, MemberState>;
  /** Who is promised what (offers included); only read by the decision. */
  tracker: AssignmentTracker;
  /** Whether a free split must not be offered now (retry backoff, a takeover in flight). */
  withheld(id: string): boolean;
  /** The leader's own instance: dealt last among equals, so the heaviest splits go elsewhere. */
  own?: string;
  /** How long a leaderless interval lasts (a lease and an election, `1.5 × leaseMs`): spares cover it. */
  coverMs?: number;
}

/**
 * Spares a member holds: enough to keep its lanes busy through a
 * leaderless interval (`coverMs`, at the observed split duration), at least
 * twice its lanes, at most {@linkcode SPARES_PER_LANE} per lane and one per
 * {@linkcode SPARE_PER_SPLIT_MS} of the split duration, within
 * {@linkcode MAX_OFFERS} with its lane offers.
 *
 * @example
 * ```ts ignore
 * spareTarget(member, plainOffers, view.splitMs, 1.5 * leaseMs);
 * ```
 */
export function spareTarget(m: MemberState, plain: number, splitMs: number | undefined, coverMs: number | undefined): number {
  const lanes = m.maxInFlight;
  if (!splitMs || !coverMs) return Math.min(MAX_OFFERS - plain, 2 * lanes);
  const perLane = Math.min(SPARES_PER_LANE, Math.floor(splitMs / SPARE_PER_SPLIT_MS));
  const cover = Math.min(perLane * lanes, Math.ceil((lanes * coverMs) / splitMs));
  return Math.min(MAX_OFFERS - plain, Math.max(2 * lanes, cover));
}

/**
 * Lanes a member has for new work: maxInFlight minus what it holds and what
 * is on its way to it (`taken`: releases a decision in progress has named
 * it for, not applied yet).
 */
export function freeLanes(view: LeaderView, m: MemberState, taken = 0): number {
  return Math.max(0, m.maxInFlight - view.heldByKey(m.key) - m.incoming - taken);
}

/** Members that take new work: live, not draining, with lanes. */
export function claimers(states: ReadonlyMap<string, MemberState>): MemberState[] {
  const out: MemberState[] = [];
  for (const m of states.values()) if (!m.draining && m.maxInFlight > 0) out.push(m);
  return out;
}

/**
 * Tops up every member's offers from the free splits, applied at once (the
 * decision, its application through the tracker and the pruning of the
 * dealing order); returns whether any offer changed.
 *
 * @example
 * ```ts ignore
 * refillOffers({ view, states, tracker, withheld: (id) => retry.has(id) });
 * ```
 */
export function refillOffers(b: OfferBook): boolean {
  const intents = decideOffers(b);
  for (const i of intents) applyOffer(b.tracker, i);
  pruneDealing(b);
  return intents.length > 0;
}

/**
 * Applies one offer intent through the tracker: an offer, or an offer
 * taken back (to the dealing order when `requeue`), its member told.
 *
 * @example
 * ```ts ignore
 * for (const i of decideOffers(book)) applyOffer(tracker, i);
 * ```
 */
export function applyOffer(tracker: AssignmentTracker, i: OfferIntent | UnofferIntent): void {
  if (i.kind === "offer") tracker.offer(i.member, i.id, i.rev, i.weight, i.spare);
  else {
    tracker.unoffer(i.id, i.weight, i.requeue);
    if (i.tell) i.member.touch();
  }
}

/**
 * What every member's offers need now, as intents in the order they
 * apply: lane offers trimmed to free lanes, each free lane offered the
 * first split in dealing order (a spare taken from its member when it comes
 * first), then spares refilled from the other end. Pure: the dealing order
 * is read, not consumed; what this decision deals or takes back is kept in
 * an overlay so that it decides exactly as dealing one offer at a time did.
 *
 * @example
 * ```ts ignore
 * const intents = decideOffers({ view, states, tracker, withheld });
 * ```
 */
export function decideOffers(b: OfferBook): (OfferIntent | UnofferIntent)[] {
  const ms = claimers(b.states);
  if (ms.length === 0) return [];
  const { view } = b;
  // Most passes (one per watch event) find every member's offers topped up:
  // decide that in one cheap scan before weighing shares and sorting.
  const pool = view.free.size > b.tracker.offered;
  // Something a free lane could take: the pool, a spare, or a split prefetched for a busy lane.
  const anySpare = pool || ms.some((m) => m.spares.size > 0 || m.plain > freeLanes(view, m));
  if (!ms.some((m) => needsRefill(view, m, pool, anySpare, b.coverMs))) return [];
  const o = new Overlay(b);
  const share = view.runnableWeight / ms.length;
  // What a member holds and is dealt for its lanes (its spares steer nothing).
  const load = (m: MemberState) => view.loadOfKey(m.key) + o.weight(m) - o.spareWeight(m);
  // Would another member below its share take a free split? If none can, the share no longer caps.
  const belowWithLanes = ms.filter((m) => load(m) < share && freeLanes(view, m) > m.plain).length;
  // Least loaded first; among equals the leader's own member last: the
  // heaviest splits, dealt first, go to members whose death is no election.
  const mine = (m: MemberState) => (m.instance === b.own ? 1 : 0);
  ms.sort((x, y) => load(x) / Math.max(1, x.maxInFlight) - load(y) / Math.max(1, y.maxInFlight) || mine(x) - mine(y));
  // Free lanes first, every member's: each gets the first split in dealing
  // order, whoever holds it as a spare, so lanes start splits in that order
  // whichever member frees one first.
  for (const m of ms) {
    const free = freeLanes(view, m), prefetch = prefetchTarget(view, m);
    if (o.plain(m) > Math.min(MAX_OFFERS, free + prefetch)) o.trim(m, Math.min(MAX_OFFERS, free + prefetch));
    // A prefetch more than half full waits for its refill: one write tops up several lanes' next splits.
    const held = o.plain(m) - free;
    const lanes = Math.min(MAX_OFFERS, free + (prefetch > 0 && held > prefetch / 2 ? held : prefetch));
    const capped = belowWithLanes > (load(m) < share && lanes > o.plain(m) ? 1 : 0);
    let l = load(m);
    while (o.plain(m) < lanes) {
      if (capped && l >= share) break;
      // A free lane (not a prefetch of this member's) may take a split another member holds prefetched.
      const id = o.nextForLane(o.plain(m) < free ? { m, ms } : undefined);
      if (id === undefined) break;
      const rec = view.splits.get(id)!;
      o.offer(m, id, rec.revision, rec.record.weight, false);
      l += rec.record.weight;
    }
  }
  // Spares, from the other end of the order: what a member runs if the
  // leader is slow or gone (enough for a leaderless interval), and the last
  // splits a lane would get anyway. Not capped by the fair share: with a
  // live leader a spare is dealt to whichever lane comes first, so spares
  // steer nothing (with the cap, members above their share of a skewed
  // plan held none, and their lanes idled while no leader dealt).
  for (const m of ms) {
    const target = spareTarget(m, o.plain(m), view.splitMs, b.coverMs);
    if (o.spares(m) > target / 2) continue;
    while (o.spares(m) < target) {
      const id = o.nextSpare();
      if (id === undefined) break;
      const rec = view.splits.get(id)!;
      o.offer(m, id, rec.revision, rec.record.weight, true);
    }
  }
  return o.intents;
}

/**
 * Drops from the tops of the dealing heaps the entries no deal can take
 * (dealt, claimed, gone, or withheld: whoever withholds a split puts it
 * back when it may be offered), so the next decision does not read them
 * again. What it leaves is what dealing one offer at a time left on top.
 *
 * @example
 * ```ts ignore
 * pruneDealing({ view, states, tracker, withheld });
 * ```
 */
export function pruneDealing(b: OfferBook): void {
  const { view, tracker } = b;
  const dealable = (id: string) => view.free.has(id) && tracker.offeredTo(id) === undefined && !b.withheld(id);
  for (const heap of [view.heap, view.tail]) {
    for (let top = heap.peek(); top !== undefined && !dealable(top.item); top = heap.peek()) heap.pop();
  }
  const spares = tracker.spareOrder;
  for (let top = spares.peek(); top !== undefined && !tracker.offeredTo(top.item)?.spares.has(top.item); top = spares.peek()) spares.pop();
}

/**
 * A free lane without an offer, an offer beyond its lanes and prefetch, a
 * prefetch half used, or spares to refill (half used).
 */
function needsRefill(view: LeaderView, m: MemberState, pool: boolean, anySpare: boolean, coverMs: number | undefined): boolean {
  const free = freeLanes(view, m);
  const prefetch = prefetchTarget(view, m);
  const lanes = Math.min(MAX_OFFERS, free + prefetch);
  if (m.plain > lanes || (m.plain < Math.min(MAX_OFFERS, free) && anySpare)) return true;
  // The prefetch refills once half of it is used: one assignment write per several splits.
  if (prefetch > 0 && anySpare && m.plain - free <= prefetch / 2) return true;
  return pool && m.spares.size <= spareTarget(m, m.plain, view.splitMs, coverMs) / 2;
}

type Entry = { item: string; key: number; tie: number };

/** Whether heap entry `x` comes before `y` in dealing order. */
function before(x: Entry, y: Entry): boolean {
  return x.key > y.key || (x.key === y.key && x.tie < y.tie);
}

/** Reads a heap's entries in order, one at a time, without consuming it: `peek` the current one, `skip` past it. */
class Cursor {
  readonly #it: Iterator<Entry>;
  #cur: Entry | undefined;
  #done = false;

  constructor(heap: MaxHeap<string>) {
    this.#it = heap.ordered();
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

/**
 * The decision's view of the promises: the tracker's as they are, plus what
 * this decision dealt or took back, and the dealing order as dealing one at
 * a time would have left it (entries passed over skipped, splits taken back
 * merged in).
 */
class Overlay {
  readonly intents: (OfferIntent | UnofferIntent)[] = [];
  readonly #b: OfferBook;
  readonly #counts = new Map<MemberState, Counts>();
  /** Split id → member, for what this decision offered (`null`: it took the offer back). */
  readonly #offeredTo = new Map<string, MemberState | null>();
  readonly #front: Cursor;
  readonly #tail: Cursor;
  readonly #spares: Cursor;
  /** Splits this decision took back to the pool, in both dealing orders. */
  readonly #backFront = new MaxHeap<string>();
  readonly #backTail = new MaxHeap<string>();

  constructor(b: OfferBook) {
    this.#b = b;
    this.#front = new Cursor(b.view.heap);
    this.#tail = new Cursor(b.view.tail);
    this.#spares = new Cursor(b.tracker.spareOrder);
  }

  #of(m: MemberState): Counts {
    let c = this.#counts.get(m);
    if (!c) {
      let spareWeight = 0;
      for (const id of m.spares) spareWeight += this.#b.view.splits.get(id)?.record.weight ?? 1;
      this.#counts.set(m, (c = { offers: m.offers.size, spares: new Set(m.spares), weight: m.offeredWeight, spareWeight }));
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
    return this.#counts.get(m)?.weight ?? m.offeredWeight;
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
    const plain = [...m.offers.keys()].filter((id) => this.offeredTo(id) === m && !c.spares.has(id));
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
      if (x === m || this.plain(x) <= freeLanes(view, x)) continue;
      const c = this.#of(x);
      for (const id of x.offers.keys()) {
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
