// The leader's one owner of what is promised to whom
// (src/coordinator/leader/assignment_tracker.ts) and the pure decisions that
// change it (offers.ts, view_changes.ts), over random fleets and histories:
// a split is offered to one member at most, only while it is free at the
// revision offered; a member's lane offers never pass its free lanes once
// dealt, nor its spares twice its lanes; a member's offer weight is the
// weight of its offers; every lane reservation is released exactly once.
import assert from "node:assert/strict";
import fc from "fast-check";
import { AssignmentTracker } from "../../src/coordinator/leader/assignment_tracker.ts";
import { LeaderView } from "../../src/coordinator/leader/leader_view.ts";
import type { MemberState } from "../../src/coordinator/leader/member_state.ts";
import { applyOffer, decideOffers, freeLanes, MAX_OFFERS, prefetchTarget, pruneDealing } from "../../src/coordinator/leader/offers.ts";
import type { LaneReservation } from "../../src/coordinator/leader/promises.ts";
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
  const apply = (intents: LeaderIntent[]) => {
    for (const i of intents) {
      if (i.kind === "offer" || i.kind === "unoffer") applyOffer(tracker, i);
      else if (i.kind === "grant") i.member.grant(i.id, i.grant);
      else if (i.kind === "forgetGrant") i.member.forgetGrant(i.id);
      else if (i.kind === "drop") i.member.drop(i.id, i.drop);
      else throw new Error(`Unexpected intent ${i.kind}`);
    }
  };
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
            apply(decideOffers(book));
            pruneDealing(book);
            // Right after dealing: no lane offer past a free lane (or a busy one's prefetch: tiny splits), no spares past twice the lanes.
            for (const s of states.values()) {
              if (s.draining || s.maxInFlight === 0) {
                assert.equal(s.offers.size, 0, `${s.instance} takes no work and holds offers`);
                continue;
              }
              const lanes = Math.min(MAX_OFFERS, freeLanes(view, s) + prefetchTarget(view, s));
              assert.ok(s.plain <= lanes, `${s.instance}: ${s.plain} lane offers, ${freeLanes(view, s)} free lanes, ${prefetchTarget(view, s)} prefetched`);
              assert.ok(s.spares.size <= 2 * s.maxInFlight, `${s.instance}: ${s.spares.size} spares of ${s.maxInFlight} lanes`);
            }
            break;
          }
          case "claim":
            if (m && m.offers.size > 0) {
              const id = [...m.offers.keys()][o.k % m.offers.size];
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
            if (m && !m.draining) (m.draining = true, tracker.unofferAll(m));
            break;
          case "leave":
            if (m) {
              tracker.forget(m);
              states.delete(m.instance);
            }
            break;
          case "join":
            if (!m) join(o.m, o.lanes);
            break;
          case "reserve":
            if (m && !m.draining) held.push({ r: tracker.reserve(m, "takeover"), member: m });
            break;
          case "release": {
            if (held.length === 0) break;
            const [{ r, member }] = held.splice(o.k % held.length, 1);
            const alive = states.get(member.instance) === member;
            assert.equal(tracker.release(r), alive, alive ? "a held reservation is released" : "ended with its member");
            assert.equal(tracker.release(r), false, "a reservation is released once");
            break;
          }
          case "add":
            put(`s${next++}`, { weight: o.weight });
            break;
        }
        // At every step: each offer is one member's, at the split's revision, of a free split.
        let offers = 0;
        for (const s of states.values()) {
          let weight = 0;
          for (const [id, rv] of s.offers) {
            offers++;
            assert.equal(tracker.offeredTo(id), s, `${id} is offered to ${s.instance} and to ${tracker.offeredTo(id)?.instance}`);
            assert.ok(view.free.has(id), `${id} is offered to ${s.instance} but is not free`);
            assert.equal(view.splits.get(id)?.revision, rv, `${id} is offered at an old revision`);
            weight += view.splits.get(id)!.record.weight;
          }
          assert.ok(Math.abs(s.offeredWeight - weight) < 1e-9, `${s.instance}: offered weight ${s.offeredWeight}, its offers weigh ${weight}`);
          for (const id of s.spares) assert.ok(s.offers.has(id), `spare ${id} of ${s.instance} is not one of its offers`);
        }
        assert.equal(offers, tracker.offered, "the tracker counts every offer once");
        const live = held.filter(({ member }) => states.get(member.instance) === member).length;
        assert.equal(tracker.reservations, live, "every reservation of a live member is held, and no other");
        for (const s of states.values()) {
          const mine = held.filter(({ member }) => member === s).length;
          assert.equal(s.incoming, mine, `${s.instance}'s lanes on their way`);
        }
      }
    }),
    { seed: FC_SEED, numRuns: 300 },
  );
});
