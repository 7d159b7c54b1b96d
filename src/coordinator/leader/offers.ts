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
 * {@linkcode decideOffers} decides, purely: it reads the tracker's offers
 * and dealing order without consuming it and returns offer intents, the
 * last one a prune of the entries it passed over for good; the role applies
 * them into the tracker's draft.
 *
 * @module
 */
import type { AssignmentTracker } from "./assignment_tracker.ts";
import type { AssignmentDraft, Assignments } from "./directives.ts";
import type { OfferIntent, PruneIntent, UnofferIntent } from "./intents.ts";
import type { LeaderView } from "./leader_view.ts";
import type { MemberState } from "./member_state.ts";
import { Overlay } from "./offer_overlay.ts";

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
  /** Who is promised what (offers and the dealing order included); only read by the decision. */
  tracker: Assignments;
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
 *
 * @example
 * ```ts ignore
 * const lanes = freeLanes(view, tracker, member) - tracker.of(member).plain; // lanes no offer fills
 * ```
 */
export function freeLanes(view: LeaderView, t: Assignments, m: MemberState, taken = 0): number {
  return Math.max(0, m.maxInFlight - view.heldByKey(m.key) - t.of(m).incoming - taken);
}

/** Members that take new work: live, not draining, with lanes. */
export function claimers(states: ReadonlyMap<string, MemberState>): MemberState[] {
  const out: MemberState[] = [];
  for (const m of states.values()) if (!m.draining && m.maxInFlight > 0) out.push(m);
  return out;
}

/**
 * Tops up every member's offers from the free splits, applied at once (the
 * decision and its application in one draft of the tracker); returns
 * whether any offer changed.
 *
 * @example
 * ```ts ignore
 * refillOffers({ view, states, tracker, withheld: (id) => retry.has(id) });
 * ```
 */
export function refillOffers(b: OfferBook & { tracker: AssignmentTracker }): boolean {
  return b.tracker.edit((d) => {
    const intents = decideOffers(b);
    for (const i of intents) applyOffer(d, i);
    return intents.length > 1; // the last one prunes the dealing order
  });
}

/**
 * Applies one offer intent to a draft of the tracker: an offer, an offer
 * taken back (to the dealing order when `requeue`; its member's record
 * rewritten when `tell`), or the prune of the dealing order.
 *
 * @example
 * ```ts ignore
 * tracker.edit((d) => { for (const i of decideOffers(book)) applyOffer(d, i); });
 * ```
 */
export function applyOffer(d: AssignmentDraft, i: OfferIntent | UnofferIntent | PruneIntent): void {
  if (i.kind === "offer") d.offer(i.member, i.id, i.rev, i.weight, i.spare);
  else if (i.kind === "prune") d.prune(i.withheld);
  else {
    d.unoffer(i.id, i.weight, i.requeue);
    if (i.tell) d.touch(i.member);
  }
}

/**
 * What every member's offers need now, as intents in the order they
 * apply: lane offers trimmed to free lanes, each free lane offered the
 * first split in dealing order (a spare taken from its member when it comes
 * first), then spares refilled from the other end, and last the prune of
 * what the dealing order holds that no deal can take (always: an earlier
 * pass's deals and claims leave stale entries on top). Pure: the dealing
 * order is read, not consumed; what this decision deals or takes back is
 * kept in an overlay so that it decides exactly as dealing one offer at a
 * time did.
 *
 * @example
 * ```ts ignore
 * const intents = decideOffers({ view, states, tracker, withheld });
 * ```
 */
export function decideOffers(b: OfferBook): (OfferIntent | UnofferIntent | PruneIntent)[] {
  const prune: PruneIntent = { kind: "prune", withheld: b.withheld };
  const ms = claimers(b.states);
  const { view, tracker: t } = b;
  // Members left with no lanes here while they hold lane offers (a sharded job's member, whose
  // other shards took its lanes): their offers go back, or they would wait on them for ever.
  const laneless: MemberState[] = [];
  for (const m of b.states.values()) if (!m.draining && m.maxInFlight === 0 && t.of(m).plain > 0) laneless.push(m);
  if (ms.length === 0 && laneless.length === 0) return [prune];
  // Most passes (one per watch event) find every member's offers topped up:
  // decide that in one cheap scan before weighing shares and sorting.
  const pool = view.free.size > t.offered;
  // Something a free lane could take: the pool, a spare, or a split prefetched for a busy lane.
  const anySpare = pool || ms.some((m) => t.of(m).spares.size > 0 || t.of(m).plain > freeLanes(view, t, m));
  if (laneless.length === 0 && !ms.some((m) => needsRefill(view, t, m, pool, anySpare, b.coverMs))) return [prune];
  const o = new Overlay(b, (m) => freeLanes(view, t, m));
  for (const m of laneless) o.trim(m, 0);
  const share = view.runnableWeight / ms.length;
  // What a member holds and is dealt for its lanes (its spares steer nothing).
  const load = (m: MemberState) => view.loadOfKey(m.key) + o.weight(m) - o.spareWeight(m);
  // Would another member below its share take a free split? If none can, the share no longer caps.
  const belowWithLanes = ms.filter((m) => load(m) < share && freeLanes(view, t, m) > t.of(m).plain).length;
  // Least loaded first; among equals the leader's own member last: the
  // heaviest splits, dealt first, go to members whose death is no election.
  const mine = (m: MemberState) => (m.instance === b.own ? 1 : 0);
  ms.sort((x, y) => load(x) / Math.max(1, x.maxInFlight) - load(y) / Math.max(1, y.maxInFlight) || mine(x) - mine(y));
  // Free lanes first, every member's: each gets the first split in dealing
  // order, whoever holds it as a spare, so lanes start splits in that order
  // whichever member frees one first.
  for (const m of ms) {
    const free = freeLanes(view, t, m), prefetch = prefetchTarget(view, m);
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
  o.intents.push(prune);
  return o.intents;
}

/**
 * A free lane without an offer, an offer beyond its lanes and prefetch, a
 * prefetch half used, or spares to refill (half used).
 */
function needsRefill(view: LeaderView, t: Assignments, m: MemberState, pool: boolean, anySpare: boolean, coverMs: number | undefined): boolean {
  const free = freeLanes(view, t, m);
  const prefetch = prefetchTarget(view, m);
  const lanes = Math.min(MAX_OFFERS, free + prefetch);
  const { plain, spares } = t.of(m);
  if (plain > lanes || (plain < Math.min(MAX_OFFERS, free) && anySpare)) return true;
  // The prefetch refills once half of it is used: one assignment write per several splits.
  if (prefetch > 0 && anySpare && plain - free <= prefetch / 2) return true;
  return pool && spares.size <= spareTarget(m, plain, view.splitMs, coverMs) / 2;
}
