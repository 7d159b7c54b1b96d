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
 * @module
 */
import type { AssignmentTracker } from "./assignment_tracker.ts";
import type { LeaderView } from "./leader_view.ts";
import type { MemberState } from "./member_state.ts";

/** Most offers one member holds (bounds the assignment record). */
export const MAX_OFFERS = 256;

/** Everything the offer decision reads and writes. */
export interface OfferBook {
  view: LeaderView;
  /** Live member sessions by instance. */
  states: ReadonlyMap<string, MemberState>;
  /** Who is promised what (offers included). */
  tracker: AssignmentTracker;
  /** Whether a free split must not be offered now (retry backoff, a takeover in flight). */
  withheld(id: string): boolean;
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

/** Tops up every member's offers from the free splits; returns whether any offer changed. */
export function refillOffers(b: OfferBook): boolean {
  const ms = claimers(b.states);
  if (ms.length === 0) return false;
  return distribute(b, ms);
}

function distribute(b: OfferBook, ms: MemberState[]): boolean {
  const { view } = b;
  // Most passes (one per watch event) find every member's offers topped up:
  // decide that in one cheap scan before weighing shares and sorting.
  const pool = view.free.size > b.tracker.offered;
  const anySpare = pool || ms.some((m) => m.spares.size > 0);
  if (!ms.some((m) => needsRefill(view, m, pool, anySpare))) return false;
  const share = view.runnableWeight / ms.length;
  const load = (m: MemberState) => view.loadOfKey(m.key) + m.offeredWeight;
  // Would another member below its share take a free split? If none can, the share no longer caps.
  const belowWithLanes = ms.filter((m) => load(m) < share && freeLanes(view, m) > m.plain).length;
  ms.sort((x, y) => load(x) / Math.max(1, x.maxInFlight) - load(y) / Math.max(1, y.maxInFlight));
  let changed = false;
  // Free lanes first, every member's: each gets the first split in dealing
  // order, whoever holds it as a spare, so lanes start splits in that order
  // whichever member frees one first.
  for (const m of ms) {
    const lanes = Math.min(MAX_OFFERS, freeLanes(view, m));
    if (m.plain > lanes) changed = trimLaneOffers(b, m, lanes) || changed;
    const capped = belowWithLanes > (load(m) < share && lanes > m.plain ? 1 : 0);
    let l = load(m);
    while (m.plain < lanes) {
      if (capped && l >= share) break;
      const id = nextForLane(b);
      if (id === undefined) break;
      const rec = view.splits.get(id)!;
      b.tracker.offer(m, id, rec.revision, rec.record.weight);
      l += rec.record.weight;
      changed = true;
    }
  }
  // Spares, from the other end of the order: what a member runs if the
  // leader is slow or gone, and the last splits a lane would get anyway.
  for (const m of ms) {
    const target = Math.min(MAX_OFFERS - m.plain, 2 * m.maxInFlight);
    if (m.spares.size > target / 2) continue;
    const capped = belowWithLanes > (load(m) < share && freeLanes(view, m) > m.plain ? 1 : 0);
    let l = load(m);
    while (m.spares.size < target) {
      if (capped && l >= share) break;
      const id = nextSpare(b);
      if (id === undefined) break;
      const rec = view.splits.get(id)!;
      b.tracker.offer(m, id, rec.revision, rec.record.weight, true);
      l += rec.record.weight;
      changed = true;
    }
  }
  return changed;
}

/** A lane without an offer, an offer without a lane, or spares to refill (half used). */
function needsRefill(view: LeaderView, m: MemberState, pool: boolean, anySpare: boolean): boolean {
  const lanes = Math.min(MAX_OFFERS, freeLanes(view, m));
  if (m.plain > lanes || (m.plain < lanes && anySpare)) return true;
  return pool && m.spares.size <= Math.min(MAX_OFFERS - m.plain, 2 * m.maxInFlight) / 2;
}

/** More offers for lanes than free lanes (a grant or a handoff filled one): the last ones go back to the pool. */
function trimLaneOffers(b: OfferBook, m: MemberState, lanes: number): boolean {
  const { view } = b;
  const plain = [...m.offers.keys()].filter((id) => !m.spares.has(id));
  for (let i = plain.length - 1; i >= 0 && m.plain > lanes; i--) {
    const id = plain[i];
    b.tracker.unoffer(id, view.splits.get(id)?.record.weight ?? 1, true);
  }
  m.touch();
  return true;
}

/** Whether heap entry `x` comes before `y` in dealing order. */
function before(x: { key: number; tie: number }, y: { key: number; tie: number }): boolean {
  return x.key > y.key || (x.key === y.key && x.tie < y.tie);
}

/**
 * The split a free lane gets: the first in dealing order among the free
 * splits nobody is offered and every member's spares (a spare taken from a
 * member leaves its offers), or `undefined`.
 */
function nextForLane(b: OfferBook): string | undefined {
  const { view } = b;
  const free = peekFree(b, view.heap);
  const spares = b.tracker.spareOrder;
  let spare = spares.peek();
  while (spare !== undefined) {
    const st = b.states.get(b.tracker.offeredTo(spare.item)?.instance ?? "");
    if (st?.spares.has(spare.item)) break;
    spares.pop(); // stale: claimed, moved, or no longer a spare
    spare = spares.peek();
  }
  if (spare !== undefined && (free === undefined || before(spare, free))) {
    spares.pop();
    const id = spare.item;
    b.tracker.unoffer(id, view.splits.get(id)?.record.weight ?? 1)!.touch();
    return id;
  }
  if (free === undefined) return undefined;
  view.heap.pop();
  return free.item;
}

/** The last free split in dealing order nobody is offered, or `undefined`. */
function nextSpare(b: OfferBook): string | undefined {
  const top = peekFree(b, b.view.tail);
  if (top !== undefined) b.view.tail.pop();
  return top?.item;
}

/**
 * The top of a dealing heap that is free, not offered and not withheld,
 * left on the heap. A withheld split leaves the heap; whoever withholds it
 * pushes it back when it may be offered (a retry backoff that ran out), so
 * a pass never scans the withheld ones again.
 */
function peekFree(b: OfferBook, heap: LeaderView["heap"]): { item: string; key: number; tie: number } | undefined {
  const { view } = b;
  for (let top = heap.peek(); top !== undefined; top = heap.peek()) {
    const id = top.item;
    if (view.free.has(id) && b.tracker.offeredTo(id) === undefined && !b.withheld(id)) return top;
    heap.pop(); // stale entry, or withheld
  }
  return undefined;
}
