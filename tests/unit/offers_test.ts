// The leader's offers (src/coordinator/leader/offers.ts), the rules of
// docs/DESIGN.md "How a split reaches a worker": a member's offers are its
// free lanes plus a prefetch of twice its maxInFlight (at most 256),
// refilled when half are used; each free split is offered to one member at
// a time; offers are capped at a member's fair share of the runnable weight.
import assert from "node:assert/strict";
import { LeaderView } from "../../src/coordinator/leader/leader_view.ts";
import { MemberState } from "../../src/coordinator/leader/member_state.ts";
import { MAX_OFFERS, type OfferBook, refillOffers } from "../../src/coordinator/leader/offers.ts";
import { encodeRecord, type SplitRecord } from "../../src/records.ts";

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
  const b: OfferBook = { view, states, offeredTo: new Map(), withheld: () => false };
  const join = (instance: string, maxInFlight: number) => {
    const m = new MemberState(instance, `${instance}-session`, maxInFlight, false, false);
    states.set(instance, m);
    return m;
  };
  /** `m` claims its offer `id` (the split is then owned by it, epoch 1). */
  const claim = (m: MemberState, id: string) => {
    assert.ok(m.unoffer(id, 1));
    b.offeredTo.delete(id);
    put(id, { epoch: 1, owner: m.owner });
  };
  return { view, b, put, join, claim };
}

Deno.test("offers: free lanes plus a prefetch of twice maxInFlight, at most 256", () => {
  const { b, join } = book(2000);
  const small = join("small", 4);
  assert.equal(refillOffers(b), true);
  assert.equal(small.offers.size, 4 + 2 * 4);
  const big = book(2000);
  const m = big.join("big", 200);
  refillOffers(big.b);
  assert.equal(m.offers.size, MAX_OFFERS);
  assert.equal(MAX_OFFERS, 256);
});

Deno.test("offers: refilled once half are used, not after every claim or completion", () => {
  const { b, join, claim, put } = book(200);
  const m = join("m", 4);
  refillOffers(b);
  assert.equal(m.offers.size, 12);
  // m fills its 4 lanes from its offers: 8 left, which is more than half of its target (8 now): no refill.
  for (const id of [...m.offers.keys()].slice(0, 4)) claim(m, id);
  assert.equal(refillOffers(b), false);
  assert.equal(m.offers.size, 8);
  // It completes one split (a lane free, target 9): 8 offers still cover more than half.
  const done = [...b.view.splits.entries()].find(([, s]) => s.record.owner?.instance === "m")![0];
  put(done, { epoch: 1, status: "completed" });
  assert.equal(refillOffers(b), false, "refilled after one completion");
  assert.equal(m.offers.size, 8);
  // It claims one more (lanes full again, target 8): 7 left, more than half.
  for (const id of [...m.offers.keys()].slice(0, 1)) claim(m, id);
  assert.equal(refillOffers(b), false, "7 of 8: more than half left");
  // Three more go elsewhere: 4 of 8 left, half used: refilled to its target.
  for (const id of [...m.offers.keys()].slice(0, 3)) {
    m.unoffer(id, 1); // moved on (another member claimed it from an older record)
    b.offeredTo.delete(id);
  }
  assert.equal(m.offers.size, 4);
  assert.equal(refillOffers(b), true, "half used: refilled");
  assert.equal(m.offers.size, 8);
});

Deno.test("offers: a free split is offered to one member at a time, even when its record changes while offered", () => {
  const { b, join, put } = book(10);
  const a = join("a", 2);
  refillOffers(b);
  assert.equal(a.offers.size, 6);
  // Each offered split is rewritten while still free (a hand-back, a requeue): the view lists it free again.
  for (const id of a.offers.keys()) put(id, { attempts: 1 });
  const c = join("c", 8);
  refillOffers(b);
  assert.equal(c.offers.size, 4, "c is offered the 4 splits nobody else is");
  const offered = [...a.offers.keys(), ...c.offers.keys()];
  assert.equal(new Set(offered).size, offered.length, `a split offered to two members: ${offered.sort()}`);
});

Deno.test("offers: a draining member and a standby are offered nothing", () => {
  const { b, join, view } = book(10);
  const standby = join("standby", 0);
  const draining = new MemberState("draining", "d-session", 8, true, false);
  b.states.set("draining", draining);
  assert.equal(refillOffers(b), false);
  assert.deepEqual([standby.offers.size, draining.offers.size, b.offeredTo.size], [0, 0, 0]);
  const a = join("a", 8);
  refillOffers(b);
  assert.equal(a.offers.size, view.free.size, "the one member taking work is offered every free split");
  assert.deepEqual([standby.offers.size, draining.offers.size], [0, 0]);
});

Deno.test("offers: capped at each member's fair share of the runnable weight while another below it has free lanes", () => {
  const { b, join } = book(20);
  const ms = [join("a", 8), join("b", 8)];
  refillOffers(b);
  const share = b.view.runnableWeight / ms.length;
  assert.equal(share, 10);
  for (const m of ms) assert.ok(m.offeredWeight <= share, `${m.instance} offered ${m.offeredWeight} of a share of ${share}`);
  assert.deepEqual(ms.map((m) => m.offers.size), [10, 10]);
});
