/**
 * How the leader hands out free splits (docs/DESIGN.md, "How a split reaches
 * a worker without races"): each live member's offers are kept at its free
 * lanes plus a prefetch of twice its `maxInFlight`, refilled once half are used,
 * heaviest splits first, least-loaded members first, within fair share of
 * the runnable weight unless no other member below its share has a free
 * lane. Each free split is offered to one member at a time.
 *
 * @module
 */
import type { LeaderView } from "./leader_view.ts";
import type { MemberState } from "./member_state.ts";

/** Most offers one member holds (bounds the assignment record). */
export const MAX_OFFERS = 256;

/** Everything the offer decision reads and writes. */
export interface OfferBook {
  view: LeaderView;
  /** Live member sessions by instance. */
  states: ReadonlyMap<string, MemberState>;
  /** Split id → instance it is offered to. */
  offeredTo: Map<string, string>;
  /** Whether a free split must not be offered now (retry backoff, a takeover in flight). */
  withheld(id: string): boolean;
}

/** Lanes a member has for new work: maxInFlight minus what it holds and what is on its way to it. */
export function freeLanes(view: LeaderView, m: MemberState): number {
  return Math.max(0, m.maxInFlight - view.heldByKey(m.key) - m.incoming);
}

/** Members that take new work: live, not draining, with lanes. */
export function claimers(states: ReadonlyMap<string, MemberState>): MemberState[] {
  const out: MemberState[] = [];
  for (const m of states.values()) if (!m.draining && m.maxInFlight > 0) out.push(m);
  return out;
}

/** Tops up every member's offers from the free splits; returns whether any offer changed. */
export function refillOffers(b: OfferBook): boolean {
  const { view } = b;
  const ms = claimers(b.states);
  if (ms.length === 0) return false;
  let changed = false;
  if (view.free.size > b.offeredTo.size) changed = distribute(b, ms);
  // Nothing left to hand out: move surplus offers to members with idle lanes.
  if (view.free.size <= b.offeredTo.size) changed = rebalanceOffers(b, ms) || changed;
  return changed;
}

function distribute(b: OfferBook, ms: MemberState[]): boolean {
  const { view } = b;
  // Most passes (one per watch event) find every member's offers topped up:
  // decide that in one cheap scan before weighing shares and sorting.
  if (!ms.some((m) => needsRefill(view, m))) return false;
  const share = view.runnableWeight / ms.length;
  const load = (m: MemberState) => view.loadOfKey(m.key) + m.offeredWeight;
  // Would another member below its share take a free split? If none can, the share no longer caps.
  const belowWithLanes = ms.filter((m) => load(m) < share && freeLanes(view, m) > m.offers.size).length;
  ms.sort((x, y) => load(x) / Math.max(1, x.maxInFlight) - load(y) / Math.max(1, y.maxInFlight));
  let changed = false;
  for (const m of ms) {
    if (!needsRefill(view, m)) continue;
    const lanes = freeLanes(view, m);
    const target = Math.min(MAX_OFFERS, lanes + 2 * m.maxInFlight);
    const have = m.offers.size;
    const capped = belowWithLanes > (load(m) < share && lanes > have ? 1 : 0);
    let l = load(m);
    for (let n = have; n < target; n++) {
      if (capped && l >= share) break;
      const id = nextFree(b);
      if (id === undefined) return changed;
      const rec = view.splits.get(id)!;
      m.offer(id, rec.revision, rec.record.weight);
      b.offeredTo.set(id, m.instance);
      l += rec.record.weight;
      changed = true;
    }
  }
  return changed;
}

/** Refill once half the offers are used, or at once when a lane would idle. */
function needsRefill(view: LeaderView, m: MemberState): boolean {
  const lanes = freeLanes(view, m);
  const have = m.offers.size;
  return have < lanes || have <= Math.min(MAX_OFFERS, lanes + 2 * m.maxInFlight) / 2;
}

/**
 * The heaviest free split not offered or withheld, or `undefined`. A
 * withheld split leaves the heap; whoever withholds it pushes it back when
 * it may be offered (a retry backoff that ran out), so a pass never scans
 * the withheld ones again.
 */
function nextFree(b: OfferBook): string | undefined {
  const { view } = b;
  while (view.heap.size > 0) {
    const id = view.heap.pop()!;
    if (!view.free.has(id) || b.offeredTo.has(id)) continue; // stale entry
    if (b.withheld(id)) continue;
    return id;
  }
  return undefined;
}

/**
 * Once every free split is offered, members with idle lanes and no offers
 * take the surplus of members holding more offers than lanes (the end of a
 * job would otherwise wait on a slow member's prefetch).
 */
function rebalanceOffers(b: OfferBook, ms: MemberState[]): boolean {
  const { view } = b;
  const hungry = ms.filter((m) => m.offers.size === 0 && freeLanes(view, m) > 0);
  if (hungry.length === 0) return false;
  let changed = false;
  for (const donor of ms) {
    let surplus = donor.offers.size - freeLanes(view, donor);
    if (surplus <= 0) continue;
    for (const [id, rev] of [...donor.offers].reverse()) {
      if (surplus <= 0 || hungry.length === 0) break;
      const to = hungry[0];
      const w = view.splits.get(id)?.record.weight ?? 1;
      donor.unoffer(id, w);
      donor.touch();
      to.offer(id, rev, w);
      b.offeredTo.set(id, to.instance);
      surplus--;
      changed = true;
      if (to.offers.size >= freeLanes(view, to)) hungry.shift();
    }
  }
  return changed;
}
