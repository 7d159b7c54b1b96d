// The leader's revocations keep every member's `incoming` (lanes it must
// keep free for releases naming it as successor) equal to what the pending
// revocations imply, whatever order drains, settles, restarts and departures
// come in (src/coordinator/leader/revocations.ts, assignment_tracker.ts). Before
// it was derived, it was raised and lowered by hand with clamps at zero.
import assert from "node:assert/strict";
import fc from "fast-check";
import type { Core } from "../../src/coordinator/core.ts";
import { LeaderView } from "../../src/coordinator/leader/leader_view.ts";
import type { MemberState } from "../../src/coordinator/leader/member_state.ts";
import { AssignmentTracker } from "../../src/coordinator/leader/assignment_tracker.ts";
import type { LaneReservation } from "../../src/coordinator/leader/directives.ts";
import { Revocations } from "../../src/coordinator/leader/revocations.ts";
import { LaneLedger, type LeaderIntent } from "../../src/coordinator/leader/intents.ts";
import { decideDrain, decideSettled } from "../../src/coordinator/leader/revocation_rules.ts";
import { newStats } from "../../src/coordinator/stats.ts";
import type { Owner, SplitRecord } from "../../admin.ts";
import { encodeRecord } from "../../src/records.ts";

const FC_SEED = Number(Deno.env.get("FC_SEED") ?? Date.now() % 2 ** 31);
const INSTANCES = ["a", "b", "c", "d"];
const SPLITS = 12;

type Op =
  | { kind: "drain"; m: number }
  | { kind: "cycle" }
  | { kind: "settle"; split: number; to: "successor" | "other" | "nobody" }
  | { kind: "leave"; m: number }
  | { kind: "restart"; m: number }
  | { kind: "reserve"; m: number }
  | { kind: "unreserve"; m: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant("drain" as const), m: fc.nat(3) }),
  fc.record({ kind: fc.constant("cycle" as const) }),
  fc.record({ kind: fc.constant("settle" as const), split: fc.nat(SPLITS - 1), to: fc.constantFrom("successor" as const, "other" as const, "nobody" as const) }),
  fc.record({ kind: fc.constant("leave" as const), m: fc.nat(3) }),
  fc.record({ kind: fc.constant("restart" as const), m: fc.nat(3) }),
  fc.record({ kind: fc.constant("reserve" as const), m: fc.nat(3) }),
  fc.record({ kind: fc.constant("unreserve" as const), m: fc.nat(3) }),
);

/** Applies revocation intents as the leader's role does, in a draft of the tracker (fences are never due here). */
function applyAll(t: AssignmentTracker, r: Revocations, intents: readonly LeaderIntent[]): void {
  t.edit(() => {
    for (const i of intents) {
      if (i.kind === "revoke") r.revoke(i);
      else if (i.kind === "name") r.name(i);
      else if (i.kind === "withdraw") r.withdraw(i);
      else if (i.kind === "settle") r.settle(i);
      else throw new Error(`Unexpected intent ${i.kind}`);
    }
  });
}

function harness() {
  const core = {
    stats: newStats(),
    log: () => {},
    schedule: () => {},
    clock: { now: () => 0, wallNow: () => 0 },
    config: { job: "job", maxAttempts: 3 },
    timings: { balanceIntervalMs: 1000, balanceMinIntervalMs: 100, deafOwnerFenceMs: 1e9 },
  } as unknown as Core;
  const states = new Map<string, MemberState>();
  const view = new LeaderView(() => {}, () => {});
  const tracker = new AssignmentTracker(view, states);
  let sessions = 0;
  const join = (instance: string) => states.set(instance, tracker.member(instance, `s${++sessions}`, 4, false, false));
  for (const i of INSTANCES) join(i);
  const revocations = new Revocations({ core, view, states, tracker, leading: () => true });
  let rev = 0;
  const put = (id: string, owner: Owner | null, epoch: number) => {
    const rec: SplitRecord = { v: 2, epoch, status: "runnable", owner, attempts: 0, weight: 1, progress: null };
    view.put(`split.${id}`, encodeRecord(rec), ++rev);
  };
  return { states, view, tracker, revocations, join, put };
}

Deno.test("revocations: every member's incoming equals the pending revocations naming it, plus its reserved lanes", () => {
  fc.assert(
    fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
      const { states, view, tracker, revocations, join, put } = harness();
      // Each split owned by one of the members, round robin.
      const ids = Array.from({ length: SPLITS }, (_, i) => `s${i}`);
      ids.forEach((id, i) => put(id, states.get(INSTANCES[i % INSTANCES.length])!.owner, 1));
      const reserved = new Map<MemberState, LaneReservation[]>();
      for (const o of ops) {
        const m = states.get(INSTANCES[("m" in o ? o.m : 0)]);
        switch (o.kind) {
          case "drain":
            if (m) {
              m.draining = true;
              applyAll(tracker, revocations, decideDrain({ view, states, tracker, now: 0 }, m, new LaneLedger()));
            }
            break;
          case "cycle":
            revocations.cycle(0, "sig", false, (intents) => applyAll(tracker, revocations, intents));
            break;
          case "settle": {
            const id = ids[o.split];
            const cur = view.splits.get(id);
            if (!cur) break;
            let to: Owner | null = null;
            if (o.to !== "nobody") {
              const from = [...states.values()].find((s) => tracker.of(s).revokes.has(id));
              const named = from && tracker.of(from).revokes.get(id)?.to;
              to = o.to === "successor" && named ? named : [...states.values()][o.split % states.size]?.owner ?? null;
            }
            put(id, to, cur.record.epoch + 1);
            applyAll(tracker, revocations, decideSettled(tracker, id, view.splits.get(id)?.record, 0));
            break;
          }
          case "leave":
          case "restart":
            if (m) {
              // As the role drops a member: its promises end, then its revocations.
              tracker.edit((d) => {
                d.forget(m);
                revocations.forget(m);
              });
              states.delete(m.instance);
              for (const r of reserved.get(m) ?? []) assert.equal(tracker.edit((d) => d.release(r)), false, "ended with its member");
              reserved.delete(m);
              if (o.kind === "restart") join(m.instance);
            }
            break;
          case "reserve":
            if (m) reserved.set(m, [...(reserved.get(m) ?? []), tracker.edit((d) => d.reserve(m, "takeover"))]);
            break;
          case "unreserve":
            if (m && (reserved.get(m)?.length ?? 0) > 0) {
              const r = reserved.get(m)!.pop()!;
              assert.equal(tracker.edit((d) => d.release(r)), true, "a held reservation is released");
              assert.equal(tracker.edit((d) => d.release(r)), false, "once");
            }
            break;
        }
        for (const t of states.values()) {
          let naming = 0;
          for (const s of states.values()) {
            for (const r of tracker.of(s).revokes.values()) if (r.to?.instance === t.instance && r.to.session === t.session) naming++;
          }
          assert.equal(tracker.of(t).incoming, naming + (reserved.get(t)?.length ?? 0), `member ${t.instance} after ${JSON.stringify(o)}`);
        }
      }
    }),
    { seed: FC_SEED, numRuns: 300 },
  );
});

Deno.test("assignment tracker: a lane reservation is released once; a second release changes nothing, and never takes another's", () => {
  const tracker = new AssignmentTracker(new LeaderView(() => {}, () => {}), new Map());
  const m = tracker.member("a", "s1", 4, false, false);
  const release = (r: LaneReservation) => tracker.edit((d) => d.release(r));
  const first = tracker.edit((d) => d.reserve(m, "seed"));
  const second = tracker.edit((d) => d.reserve(m, "takeover"));
  assert.equal(tracker.of(m).incoming, 2);
  assert.equal(release(first), true);
  assert.equal(release(first), false, "released already");
  assert.equal(tracker.of(m).incoming, 1, "the other reservation still holds its lane");
  tracker.edit((d) => d.forget(m));
  assert.equal(release(second), false, "ended with its member");
  assert.equal(tracker.of(m).incoming, 0);
  assert.equal(tracker.reservations, 0);
});
