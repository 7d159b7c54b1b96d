// The leader's offers (src/coordinator/leader/offers.ts), the rules of
// docs/DESIGN.md "How a split reaches a worker": a member's offers are one
// per free lane (the first splits in dealing order, another member's spares
// included) plus twice its maxInFlight spares from the other end (at most
// 256 in all), refilled when half are used; each free split is offered to
// one member at a time; offers are capped at a member's fair share of the
// runnable weight.
import assert from "node:assert/strict";
import { LeaderView } from "../../src/coordinator/leader/leader_view.ts";
import type { MemberState } from "../../src/coordinator/leader/member_state.ts";
import { AssignmentTracker } from "../../src/coordinator/leader/assignment_tracker.ts";
import { MAX_OFFERS, type OfferBook, refillOffers, spareTarget } from "../../src/coordinator/leader/offers.ts";
import { pickSeedMember } from "../../src/coordinator/leader/seed_runs.ts";
import type { SplitRecord } from "../../admin.ts";
import { encodeRecord } from "../../src/records.ts";

/** The tracker each member's directives are kept by (a test may hold several fleets). */
const trackers = new WeakMap<MemberState, AssignmentTracker>();
/** What `m` is told and promised. */
const of = (m: MemberState) => trackers.get(m)!.of(m);

function book(free: number) {
  const view = new LeaderView(() => {}, () => {});
  const revs = new Map<string, number>();
  let rev = 0;
  /** Writes split `id` into the view at a new revision. */
  const put = (id: string, patch: Partial<SplitRecord> = {}) => {
    const rec: SplitRecord = { v: 2, epoch: 0, status: "runnable", owner: null, attempts: 0, weight: 1, progress: null, ...patch };
    revs.set(id, ++rev);
    view.put(`split.${id}`, encodeRecord(rec), rev);
  };
  for (let i = 0; i < free; i++) put(`s${String(i).padStart(4, "0")}`);
  const states = new Map<string, MemberState>();
  const tracker = new AssignmentTracker(view, states);
  const b: OfferBook & { tracker: AssignmentTracker } = { view, states, tracker, withheld: () => false };
  const join = (instance: string, maxInFlight: number) => {
    const m = tracker.member(instance, `${instance}-session`, maxInFlight, false, false);
    trackers.set(m, tracker);
    states.set(instance, m);
    return m;
  };
  /** `m` claims its offer `id` (the split is then owned by it, epoch 1). */
  const claim = (m: MemberState, id: string) => {
    assert.equal(tracker.edit((d) => d.unoffer(id, 1)), m);
    put(id, { epoch: 1, owner: m.owner });
  };
  return { view, b, tracker, states, put, join, claim };
}

Deno.test("offers: free lanes plus a prefetch of twice maxInFlight, at most 256", () => {
  const { b, join } = book(2000);
  const small = join("small", 4);
  assert.equal(refillOffers(b), true);
  assert.equal(of(small).offers.size, 4 + 2 * 4);
  const big = book(2000);
  const m = big.join("big", 200);
  refillOffers(big.b);
  assert.equal(of(m).offers.size, MAX_OFFERS);
  assert.equal(MAX_OFFERS, 256);
});

Deno.test("offers: each free lane is dealt at once; spares are refilled once half are used", () => {
  const { b, join, claim, put } = book(200);
  const m = join("m", 4);
  refillOffers(b);
  assert.deepEqual([of(m).plain, of(m).spares.size], [4, 8]);
  // m fills its 4 lanes from its lane offers; its 8 spares stay: no refill.
  for (const id of [...of(m).offers.keys()].filter((id) => !of(m).spares.has(id))) claim(m, id);
  assert.equal(refillOffers(b), false);
  assert.deepEqual([of(m).plain, of(m).spares.size], [0, 8]);
  // It completes one split: the free lane gets the next split at once, from the pool's head (spares are its tail).
  const done = [...b.view.splits.entries()].find(([, s]) => s.record.owner?.instance === "m")![0];
  put(done, { epoch: 1, status: "completed" });
  assert.equal(refillOffers(b), true, "a free lane is dealt at once");
  assert.deepEqual([of(m).plain, of(m).spares.size], [1, 8]);
  assert.equal([...of(m).offers.keys()].find((id) => !of(m).spares.has(id)), "s0004", "the first split nobody holds");
  // Spares used elsewhere: 5 of 8 left is more than half, 4 is half: refilled to 8.
  const drop = (n: number) => {
    for (const id of [...of(m).spares].slice(0, n)) {
      b.tracker.edit((d) => d.unoffer(id, 1)); // moved on (another member claimed it from an older record)
    }
  };
  drop(3);
  assert.equal(refillOffers(b), false, "5 of 8: more than half left");
  drop(1);
  assert.equal(refillOffers(b), true, "half used: refilled");
  assert.equal(of(m).spares.size, 8);
});

Deno.test("offers: a free lane gets the first split in dealing order, even another member's spare", () => {
  const { b, join, claim, put } = book(6);
  const a = join("a", 1);
  const c = join("c", 1);
  refillOffers(b);
  const lane = (m: MemberState) => [...of(m).offers.keys()].filter((id) => !of(m).spares.has(id));
  assert.deepEqual([lane(a), lane(c)], [["s0000"], ["s0001"]], "lanes from the head");
  assert.deepEqual([[...of(a).spares].sort(), [...of(c).spares].sort()], [["s0004", "s0005"], ["s0002", "s0003"]], "spares from the tail");
  claim(a, "s0000");
  claim(c, "s0001");
  put("s0000", { epoch: 1, status: "completed" }); // a is free again, c still busy
  assert.equal(refillOffers(b), true);
  assert.deepEqual(lane(a), ["s0002"], "c's earliest spare, not a's own");
  assert.deepEqual([...of(c).spares], ["s0003"]);
  assert.equal(b.tracker.offeredTo("s0002"), a);
});

Deno.test("offers: a free split is offered to one member at a time, even when its record changes while offered", () => {
  const { b, join, put } = book(10);
  const a = join("a", 2);
  refillOffers(b);
  assert.equal(of(a).offers.size, 6);
  // Each offered split is rewritten while still free (a hand-back, a requeue): the view lists it free again.
  for (const id of of(a).offers.keys()) put(id, { attempts: 1 });
  const c = join("c", 8);
  refillOffers(b);
  assert.equal(of(c).offers.size, 8, "c's 8 free lanes get the 4 splits nobody is offered and a's 4 spares");
  assert.deepEqual([of(a).plain, of(a).spares.size], [2, 0]);
  const offered = [...of(a).offers.keys(), ...of(c).offers.keys()];
  assert.equal(new Set(offered).size, offered.length, `a split offered to two members: ${offered.sort()}`);
});

Deno.test("offers: a draining member and a standby are offered nothing", () => {
  const { b, states, join, view } = book(10);
  const standby = join("standby", 0);
  const draining = b.tracker.member("draining", "d-session", 8, true, false);
  trackers.set(draining, b.tracker);
  states.set("draining", draining);
  assert.equal(refillOffers(b), false);
  assert.deepEqual([of(standby).offers.size, of(draining).offers.size, b.tracker.offered], [0, 0, 0]);
  const a = join("a", 8);
  refillOffers(b);
  assert.equal(of(a).offers.size, view.free.size, "the one member taking work is offered every free split");
  assert.deepEqual([of(standby).offers.size, of(draining).offers.size], [0, 0]);
});

Deno.test("offers: lane offers capped at each member's fair share of the runnable weight while another below it has free lanes; spares are not", () => {
  const { b, join } = book(20);
  const ms = [join("a", 12), join("b", 12)];
  refillOffers(b);
  const share = b.view.runnableWeight / ms.length;
  assert.equal(share, 10);
  for (const m of ms) assert.ok(of(m).plain <= share, `${m.instance} offered ${of(m).plain} splits for lanes, a share of ${share}`);
  assert.deepEqual(ms.map((m) => of(m).plain), [10, 10], "each lane up to the share");
  // Nothing is left for spares here; with more splits than lanes the rest are spares, whatever the share.
  const more = book(60);
  const two = [more.join("a", 12), more.join("b", 12)];
  refillOffers(more.b);
  assert.deepEqual(two.map((m) => of(m).plain), [12, 12]);
  assert.deepEqual(two.map((m) => of(m).spares.size), [24, 12], "spares past the share of 30: 24 and the 12 left");
});

Deno.test("offers: the leader's own member is dealt last among equals, so the heaviest splits go to members whose death is no election", () => {
  const { b, join } = book(4);
  b.own = "lead";
  const lead = join("lead", 1);
  const other = join("other", 1);
  refillOffers(b);
  assert.deepEqual([...of(other).offers.keys()].filter((id) => !of(other).spares.has(id)), ["s0000"], "the first split in dealing order to the other member");
  assert.deepEqual([...of(lead).offers.keys()].filter((id) => !of(lead).spares.has(id)), ["s0001"]);
});

Deno.test("offers: spares cover a leaderless interval at the observed split duration, at least twice the lanes, at most 16 per lane", () => {
  const { b, join } = book(500);
  b.coverMs = 15_000;
  const m = join("m", 2);
  refillOffers(b);
  assert.equal(of(m).spares.size, 4, "no split completed yet: twice the lanes");
  const n = book(500);
  n.b.coverMs = 15_000;
  n.view.splitMs = 1000; // splits take a second: 15 per lane for 1.5 leases of 10 s
  const w = n.join("w", 2);
  refillOffers(n.b);
  assert.equal(of(w).spares.size, 30);
  const t = book(2000);
  t.b.coverMs = 15_000;
  t.view.splitMs = 5; // tiny splits: twice the lanes (every rewrite lists every spare; 16 per lane would cover 80 ms)
  const x = t.join("x", 2);
  refillOffers(t.b);
  assert.equal(of(x).spares.size, 4);
});

Deno.test("offers: spares cover a leaderless interval at the observed split duration, and cost at most 16 entries per lane per second", () => {
  const b = book(0);
  const m = b.join("m", 8);
  const cover = 7500; // 1.5 × a 5 s lease
  // No duration yet: twice the lanes.
  assert.equal(spareTarget(m, 8, undefined, cover), 16);
  // Splits of 1 s: the interval's worth (60), within 16 per lane.
  assert.equal(spareTarget(m, 8, 1000, cover), 60);
  // Splits of 200 ms would need 300: one per 62.5 ms of a split, 3 per lane.
  assert.equal(spareTarget(m, 8, 200, cover), 24);
  // Tiny tasks: twice the lanes, not the cap (128 entries in every rewrite, for milliseconds of cover).
  assert.equal(spareTarget(m, 8, 2, cover), 2 * 8);
  // Long splits: the interval's worth, at least twice the lanes.
  assert.equal(spareTarget(m, 8, 60_000, cover), 16);
  // Within the record's 256 offers, lane offers included.
  assert.equal(spareTarget(b.join("big", 128), 128, 1000, cover), MAX_OFFERS - 128);
});

Deno.test("seeds: the leader's own member gets the first seed run last among equally loaded members (a plan is seeded heaviest first)", () => {
  const { view, states, tracker, join } = book(0);
  const lead = join("lead", 2);
  const a = join("a", 2);
  join("b", 2);
  // The leader joined first: without `own` it would take the heaviest run.
  assert.equal(pickSeedMember(states, view, tracker, 0, 8, undefined).member, lead);
  assert.equal(pickSeedMember(states, view, tracker, 0, 8, undefined, "lead").member, a);
  // Alone, it is picked all the same.
  states.delete("a");
  states.delete("b");
  assert.equal(pickSeedMember(states, view, tracker, 0, 8, undefined, "lead").member, lead);
});
