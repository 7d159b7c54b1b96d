// The leader's one owner of what is promised to whom
// (src/coordinator/leader/assignment_tracker.ts) and the pure decisions whose
// intents change it (offers.ts, view_changes.ts), over random fleets and histories:
// a split is offered to one member at most, only while it is free at the
// revision offered; a member's lane offers never pass its free lanes once
// dealt, nor its spares twice its lanes; a member's offer weight is the
// weight of its offers; every lane reservation is released exactly once.
import assert from "node:assert/strict";
import fc from "fast-check";
import { AssignmentTracker } from "../../src/coordinator/leader/assignment_tracker.ts";
import { LeaderView } from "../../src/coordinator/leader/leader_view.ts";
import type { MemberState } from "../../src/coordinator/leader/member_state.ts";
import { applyOffer, decideOffers, freeLanes, MAX_OFFERS, prefetchTarget } from "../../src/coordinator/leader/offers.ts";
import type { LaneReservation } from "../../src/coordinator/leader/directives.ts";
import { decideSplitChange } from "../../src/coordinator/leader/view_changes.ts";
import type { LeaderIntent } from "../../src/coordinator/leader/intents.ts";
import type { SplitRecord } from "../../admin.ts";
import { encodeRecord } from "../../src/records.ts";

const FC_SEED = Number(Deno.env.get("FC_SEED") ?? Date.now() % 2 ** 31);
const MEMBERS = 4;

type Op =
  | { kind: "refill" }
  | { kind: "claim"; m: number; k: number }
  | { kind: "complete"; m: number; k: number }
  | { kind: "rewrite"; s: number }
  | { kind: "drain"; m: number }
  | { kind: "leave"; m: number }
  | { kind: "join"; m: number; lanes: number }
  | { kind: "reserve"; m: number }
  | { kind: "release"; k: number }
  | { kind: "add"; weight: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ kind: "refill" as const }) },
  fc.record({ kind: fc.constant("claim" as const), m: fc.nat(MEMBERS - 1), k: fc.nat(20) }),
  fc.record({ kind: fc.constant("complete" as const), m: fc.nat(MEMBERS - 1), k: fc.nat(20) }),
  fc.record({ kind: fc.constant("rewrite" as const), s: fc.nat(60) }),
  fc.record({ kind: fc.constant("drain" as const), m: fc.nat(MEMBERS - 1) }),
  fc.record({ kind: fc.constant("leave" as const), m: fc.nat(MEMBERS - 1) }),
  fc.record({ kind: fc.constant("join" as const), m: fc.nat(MEMBERS - 1), lanes: fc.nat(5) }),
  fc.record({ kind: fc.constant("reserve" as const), m: fc.nat(MEMBERS - 1) }),
  fc.record({ kind: fc.constant("release" as const), k: fc.nat(20) }),
  fc.record({ kind: fc.constant("add" as const), weight: fc.integer({ min: 1, max: 3 }) }),
);

function harness() {
  const states = new Map<string, MemberState>();
  let rev = 0;
  const view = new LeaderView((id, prev, next) => apply(decideSplitChange({ view, states, tracker, ready: true }, id, prev, next)), () => {});
  const tracker = new AssignmentTracker(view, states);
  const apply = (intents: LeaderIntent[]) =>
    tracker.edit((d) => {
      for (const i of intents) {
        if (i.kind === "offer" || i.kind === "unoffer" || i.kind === "prune") applyOffer(d, i);
        else if (i.kind === "grant") d.grant(i.member, i.id, i.grant);
        else if (i.kind === "forgetGrant") d.forgetGrant(i.member, i.id);
        else if (i.kind === "drop") d.drop(i.member, i.id, i.drop);
        else throw new Error(`Unexpected intent ${i.kind}`);
      }
    });
  const put = (id: string, patch: Partial<SplitRecord>) => {
    const cur = view.splits.get(id)?.record;
    const rec: SplitRecord = { v: 2, epoch: 0, status: "runnable", owner: null, attempts: 0, weight: 1, progress: null, ...cur, ...patch };
    view.put(`split.${id}`, encodeRecord(rec), ++rev);
  };
  let sessions = 0;
  const join = (i: number, lanes: number) => {
    const m = tracker.member(`m${i}`, `s${++sessions}`, lanes, false, false);
    states.set(m.instance, m);
    return m;
  };
  const book = { view, states, tracker, withheld: () => false };
  return { view, states, tracker, put, join, book, apply };
}

Deno.test("assignment tracker: a split is promised once, while free, never past a member's lanes; reservations end exactly once", () => {
  fc.assert(
    fc.property(fc.array(op, { maxLength: 60 }), fc.integer({ min: 5, max: 40 }), (ops, splits) => {
      const { view, states, tracker, put, join, book, apply } = harness();
      let next = 0;
      for (let i = 0; i < splits; i++) put(`s${next++}`, {});
      for (let i = 0; i < MEMBERS; i++) join(i, 2 + (i % 3));
      const held: { r: LaneReservation; member: MemberState }[] = [];
      for (const o of ops) {
        const m = "m" in o ? states.get(`m${o.m}`) : undefined;
        switch (o.kind) {
          case "refill": {
            apply(decideOffers(book)); // the last intent prunes the dealing order
            // Right after dealing: no lane offer past a free lane (or a busy one's prefetch: tiny splits), no spares past twice the lanes.
            for (const s of states.values()) {
              const d = tracker.of(s);
              if (s.draining || s.maxInFlight === 0) {
                assert.equal(d.offers.size, 0, `${s.instance} takes no work and holds offers`);
                continue;
              }
              const free = freeLanes(view, tracker, s);
              const lanes = Math.min(MAX_OFFERS, free + prefetchTarget(view, s));
              assert.ok(d.plain <= lanes, `${s.instance}: ${d.plain} lane offers, ${free} free lanes, ${prefetchTarget(view, s)} prefetched`);
              assert.ok(d.spares.size <= 2 * s.maxInFlight, `${s.instance}: ${d.spares.size} spares of ${s.maxInFlight} lanes`);
            }
            break;
          }
          case "claim":
            if (m && tracker.of(m).offers.size > 0) {
              const offers = tracker.of(m).offers;
              const id = [...offers.keys()][o.k % offers.size];
              put(id, { epoch: (view.splits.get(id)!.record.epoch) + 1, owner: m.owner });
            }
            break;
          case "complete": {
            const mine = m ? [...(view.byOwner.get(m.key) ?? [])] : [];
            if (mine.length > 0) put(mine[o.k % mine.length], { status: "completed", owner: null });
            break;
          }
          case "rewrite": {
            const id = `s${o.s % next}`;
            if (view.splits.get(id)?.record.status === "runnable") put(id, { attempts: (view.splits.get(id)!.record.attempts) + 1 });
            break;
          }
          case "drain":
            if (m && !m.draining) (m.draining = true, tracker.edit((d) => d.unofferAll(m)));
            break;
          case "leave":
            if (m) {
              tracker.edit((d) => d.forget(m));
              states.delete(m.instance);
            }
            break;
          case "join":
            if (!m) join(o.m, o.lanes);
            break;
          case "reserve":
            if (m && !m.draining) held.push({ r: tracker.edit((d) => d.reserve(m, "takeover")), member: m });
            break;
          case "release": {
            if (held.length === 0) break;
            const [{ r, member }] = held.splice(o.k % held.length, 1);
            const alive = states.get(member.instance) === member;
            const release = () => tracker.edit((d) => d.release(r));
            assert.equal(release(), alive, alive ? "a held reservation is released" : "ended with its member");
            assert.equal(release(), false, "a reservation is released once");
            break;
          }
          case "add":
            put(`s${next++}`, { weight: o.weight });
            break;
        }
        // At every step: each offer is one member's, at the split's revision, of a free split.
        let offers = 0;
        for (const s of states.values()) {
          const d = tracker.of(s);
          let weight = 0;
          for (const [id, rv] of d.offers) {
            offers++;
            assert.equal(tracker.offeredTo(id), s, `${id} is offered to ${s.instance} and to ${tracker.offeredTo(id)?.instance}`);
            assert.ok(view.free.has(id), `${id} is offered to ${s.instance} but is not free`);
            assert.equal(view.splits.get(id)?.revision, rv, `${id} is offered at an old revision`);
            weight += view.splits.get(id)!.record.weight;
          }
          assert.ok(Math.abs(d.offeredWeight - weight) < 1e-9, `${s.instance}: offered weight ${d.offeredWeight}, its offers weigh ${weight}`);
          for (const id of d.spares) assert.ok(d.offers.has(id), `spare ${id} of ${s.instance} is not one of its offers`);
        }
        assert.equal(offers, tracker.offered, "the tracker counts every offer once");
        const live = held.filter(({ member }) => states.get(member.instance) === member).length;
        assert.equal(tracker.reservations, live, "every reservation of a live member is held, and no other");
        for (const s of states.values()) {
          const mine = held.filter(({ member }) => member === s).length;
          assert.equal(tracker.of(s).incoming, mine, `${s.instance}'s lanes on their way`);
        }
      }
    }),
    { seed: FC_SEED, numRuns: 300 },
  );
});

Deno.test("assignment tracker: written only in a draft, read at once inside it, committed (records marked to write) when the outermost draft ends", () => {
  const view = new LeaderView(() => {}, () => {});
  const states = new Map<string, MemberState>();
  const tracker = new AssignmentTracker(view, states);
  const m = tracker.member("m", "s", 2, false, false);
  states.set("m", m);
  assert.throws(() => (tracker as unknown as { grant: (...a: unknown[]) => void }).grant(m, "x", { epoch: 1 }), /only in a draft/);
  assert.equal(tracker.of(m).grants.size, 0, "a refused write changes nothing");
  const w = tracker.writer(m);
  tracker.edit((d) => {
    d.grant(m, "x", { epoch: 1 });
    assert.equal(d.of(m).grants.get("x")?.epoch, 1, "the next decision of the pass reads it");
    tracker.edit((inner) => inner.drop(m, "y", { epoch: 2, reason: "fenced" })); // an event inside the pass joins its draft
    assert.equal(w.dirty, false, "not committed while the pass's draft is open");
    assert.throws(() => tracker.listing(m), /committed directives only/, "no record is rendered from a draft");
  });
  assert.equal(w.dirty, true, "committed: the record is to be written");
  assert.deepEqual([...tracker.listing(m).grants.keys(), ...tracker.drops(m).map(([id]) => id)], ["x", "y"]);
  // A change no record shows (an acknowledgement, a grant forgotten) commits without a write.
  const quiet = tracker.member("q", "s", 2, false, false);
  tracker.edit((d) => d.forgetGrant(quiet, "x"));
  assert.equal(tracker.writer(quiet).dirty, false);
});

Deno.test("assignment tracker: the dealing order learns of every split the view frees, and a split taken back from an offer returns to it", () => {
  const view = new LeaderView(() => {}, () => {});
  const put = (id: string, weight: number, rev: number) =>
    view.put(`split.${id}`, encodeRecord({ v: 2, epoch: 0, status: "runnable", owner: null, attempts: 0, weight, progress: null }), rev);
  put("early", 1, 1); // in the view before the tracker: dealt all the same
  const tracker = new AssignmentTracker(view, new Map());
  put("heavy", 5, 2);
  put("late", 1, 3);
  const order = (it: Iterator<{ item: string }>) => {
    const out: string[] = [];
    for (let r = it.next(); !r.done; r = it.next()) out.push(r.value.item);
    return out;
  };
  assert.deepEqual(order(tracker.dealing.front()), ["heavy", "early", "late"], "heaviest first, equal weights in the order first seen");
  assert.deepEqual(order(tracker.dealing.tail()), ["late", "early", "heavy"]);
  const m = tracker.member("m", "s", 2, false, false);
  tracker.edit((d) => {
    d.offer(m, "heavy", 2, 5);
    d.prune(() => false); // dealt: off the tops
  });
  assert.deepEqual(order(tracker.dealing.front()), ["early", "late"]);
  tracker.edit((d) => d.unoffer("heavy", 5, true));
  assert.deepEqual(order(tracker.dealing.front())[0], "heavy", "taken back to the dealing order");
});
