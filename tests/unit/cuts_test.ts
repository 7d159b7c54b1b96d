// Cutting a running split's remaining work (src/coordinator/cuts.ts,
// leader/cut_asks.ts, leader/completion.ts): the record transitions, the
// leader's choice of asks (property-tested), and completion waiting for
// every residual a cut lists.
import assert from "node:assert/strict";
import fc from "fast-check";
import type { Core } from "../../src/coordinator/core.ts";
import { cutRecord, makeCut, pruneResiduals, residualId, residualRecord } from "../../src/coordinator/cuts.ts";
import { CompletionJudge, decideCompletion } from "../../src/coordinator/leader/completion.ts";
import { type CutCandidate, decideCutAsks, planCuts, predictIdle, workLeft } from "../../src/coordinator/leader/cut_asks.ts";
import { AssignmentTracker } from "../../src/coordinator/leader/assignment_tracker.ts";
import type { MemberState } from "../../src/coordinator/leader/member_state.ts";
import { LeaderView } from "../../src/coordinator/leader/leader_view.ts";
import { ManualClock } from "../../testing.ts";
import { MAX_RESIDUALS, type PlanRecord, type SplitRecord } from "../../admin.ts";
import { decodeRecord, encodeRecord, PlanRecordSchema } from "../../src/records.ts";
import { MemoryStore } from "../../mod.ts";

const FC_SEED = Number(Deno.env.get("FC_SEED") ?? Date.now() % 2 ** 31);
const owned = (over: Partial<SplitRecord> = {}): SplitRecord => ({
  v: 2,
  epoch: 3,
  status: "runnable",
  owner: { instance: "a", session: "s" },
  attempts: 1,
  weight: 100,
  progress: { watermark: 40, estimate: { left: 60, total: 100, unit: "ids" } },
  descriptor: { from: 0, to: 100 },
  ...over,
});

Deno.test("cuts: a cut keeps its descriptor inline, counts itself, lists the residuals and drops the stale estimate; again it changes nothing", () => {
  const cut = makeCut("r0", 100, { keep: { from: 0, to: 60 }, residuals: [{ descriptor: { from: 60, to: 80 } }, { descriptor: { from: 80, to: 100 } }] });
  assert.equal(cut.weight, 100 / 3, "weight shared evenly by default");
  const before = owned({ spec: true, descriptor: undefined });
  const after = cutRecord(before, cut);
  assert.deepEqual(after.descriptor, { from: 0, to: 60 });
  assert.equal(after.spec, undefined, "the inline descriptor replaces the spec record");
  assert.equal(after.cuts, 1);
  assert.deepEqual(after.residuals?.map((r) => r.descriptor), [{ from: 60, to: 80 }, { from: 80, to: 100 }]);
  assert.deepEqual(after.progress, { watermark: 40 }, "the estimate was of the whole range");
  assert.equal(after.epoch, before.epoch, "a cut is a write at the owner's epoch");
  assert.equal(cutRecord(after, cut), after, "re-applied over a record that lists its residuals (our own write landed): unchanged");
  const pruned = pruneResiduals(after, new Set([cut.residuals[0].id]));
  assert.deepEqual(pruned.residuals?.map((r) => r.id), [cut.residuals[1].id]);
  assert.equal(pruneResiduals(pruned, new Set([cut.residuals[1].id])).residuals, undefined);
  const child = residualRecord("r0", undefined, { ...cut.residuals[0], epoch: 4 });
  assert.deepEqual([child.parent, child.root, child.epoch, child.owner, child.attempts, child.progress], ["r0", "r0", 4, null, 0, null]);
  assert.deepEqual(after.residuals?.map((r) => r.epoch), [before.epoch + 1, before.epoch + 1], "residuals start past the epoch the cut was written at");
});

Deno.test("cuts: residual ids are derived from the parent and the descriptor, stay valid ids however deep, and differ per range", () => {
  let parent = "p".repeat(128);
  for (let depth = 0; depth < 50; depth++) {
    const id = residualId(parent, { from: depth, to: depth + 1 });
    assert.match(id, /^[A-Za-z0-9_-]{1,128}$/);
    assert.equal(id, residualId(parent, { from: depth, to: depth + 1 }), "deterministic");
    assert.notEqual(id, residualId(parent, { from: depth, to: depth + 2 }));
    parent = id;
  }
});

Deno.test("cuts: a malformed answer is refused naming the problem", () => {
  const bad = (answer: unknown, re: RegExp) => assert.throws(() => makeCut("r0", 10, answer as Parameters<typeof makeCut>[2]), re);
  bad({ keep: 1, residuals: [] }, /must make 1 to 16 residuals, not 0/);
  bad({ keep: 1, residuals: Array.from({ length: MAX_RESIDUALS + 1 }, (_, i) => ({ descriptor: i })) }, /not 17/);
  bad({ keep: "x".repeat(3000), residuals: [{ descriptor: 1 }] }, /kept descriptor .* 3002 bytes of JSON; at most 2048/);
  bad({ keep: 1, residuals: [{ descriptor: 2, weight: -1 }] }, /residual 0 .* invalid weight: -1/);
  bad({ keep: 1, residuals: [{ descriptor: 2 }, { descriptor: 2 }] }, /names the same residual twice/);
});

const candidate: fc.Arbitrary<CutCandidate> = fc.record({
  id: fc.string({ minLength: 1, maxLength: 4 }),
  owner: fc.constantFrom("a", "b", "c"),
  work: fc.oneof(fc.double({ min: 0, max: 1e6, noNaN: true }), fc.constant(0)),
});

Deno.test("planCuts: never more pieces than idle lanes, never a piece below the minimum, each lane to the largest piece", () => {
  fc.assert(
    fc.property(fc.nat(40), fc.uniqueArray(candidate, { selector: (c) => c.id, maxLength: 8 }), fc.double({ min: 0, max: 1000, noNaN: true }), (idle, cands, min) => {
      const plans = planCuts(idle, cands, min);
      const extra = plans.reduce((n, p) => n + p.parts - 1, 0);
      assert.ok(extra <= idle, `asked ${extra} residuals for ${idle} idle lanes`);
      for (const p of plans) {
        const c = cands.find((x) => x.id === p.id)!;
        assert.ok(p.parts >= 2 && p.parts <= MAX_RESIDUALS + 1, `parts ${p.parts}`);
        assert.equal(p.owner, c.owner);
        assert.ok(c.work > 0 && c.work >= min, `asked to cut ${c.id} with ${c.work} left (min ${min})`);
        if (min > 0) assert.ok(c.work / p.parts >= min, `a piece of ${c.work / p.parts} below ${min}`);
      }
      // Greedy by piece size: a candidate left whole has no more work than the largest piece planned (when lanes remained).
      if (plans.length > 0 && extra < idle) return;
      for (const c of cands) {
        if (plans.some((p) => p.id === c.id) || c.work < min || c.work <= 0) continue;
        for (const p of plans) {
          const w = cands.find((x) => x.id === p.id)!.work;
          assert.ok(c.work <= w / (p.parts - 1) + 1e-9, `${c.id} (${c.work}) left whole while ${p.id} was cut into ${p.parts}`);
        }
      }
    }),
    { seed: FC_SEED, numRuns: 400 },
  );
});

Deno.test("planCuts: the estimate ranks candidates, and the biggest is cut first", () => {
  assert.equal(workLeft(owned()), 60);
  assert.equal(workLeft(owned({ progress: null })), 100, "no estimate: all of its weight");
  assert.deepEqual(planCuts(3, [{ id: "big", owner: "a", work: 900 }, { id: "small", owner: "b", work: 100 }], 0), [{ id: "big", owner: "a", parts: 4 }]);
  assert.deepEqual(planCuts(2, [{ id: "x", owner: "a", work: 100 }], 40), [{ id: "x", owner: "a", parts: 2 }], "a third piece would be 33 < 40");
  assert.deepEqual(planCuts(0, [{ id: "x", owner: "a", work: 100 }], 0), []);
});

Deno.test("completion: no outcome while a cut lists a residual whose record does not exist; decided once it does", async () => {
  const store = new MemoryStore({ yieldToTimers: false });
  const clock = new ManualClock();
  const core = {
    store,
    clock,
    config: { opTimeoutMs: 1000 },
    log: () => {},
    schedule: () => {},
  } as unknown as Core;
  const view = new LeaderView(() => {}, () => {});
  const judge = new CompletionJudge(core, view, () => Promise.resolve(true), () => {});
  const cut = makeCut("r0", 100, { keep: { from: 0, to: 50 }, residuals: [{ descriptor: { from: 50, to: 100 } }] });
  const done = { ...cutRecord(owned(), cut), status: "completed" as const, owner: null };
  view.put("split.r0", encodeRecord(done), 10);
  const plan: PlanRecord = { v: 2, term: 1, finality: "final", generation: 1, planned: 1 };
  const w = await store.create("plan", encodeRecord(plan));
  assert.ok(w.ok);
  // What the leader's pass does: decide, then apply.
  const check = async () => {
    const i = decideCompletion(view, plan, 1, w.revision);
    if (i) await judge.apply(i);
  };
  await check();
  const read = async () => decodeRecord("plan", (await store.get("plan"))!.value, PlanRecordSchema);
  assert.equal((await read()).outcome, undefined, "the residual has no record yet: the job is not complete");
  view.put(`split.${cut.residuals[0].id}`, encodeRecord({ ...residualRecord("r0", done, done.residuals![0]), status: "completed" }), 11);
  assert.equal(view.pendingResiduals.size, 0);
  await check();
  assert.deepEqual((await read()).outcome, { kind: "allComplete", completed: 2 });
});

Deno.test("leader view: a residual whose record vanishes is pending again, looked up among the splits that list residuals", () => {
  const view = new LeaderView(() => {}, () => {});
  for (let i = 0; i < 50; i++) view.put(`split.p${i}`, encodeRecord(owned()), i + 1); // splits that list nothing
  const cut = makeCut("r0", 100, { keep: { from: 0, to: 50 }, residuals: [{ descriptor: { from: 50, to: 100 } }] });
  const parent = cutRecord(owned(), cut);
  view.put("split.r0", encodeRecord(parent), 100);
  const rid = cut.residuals[0].id;
  assert.deepEqual([...view.pendingResiduals.keys()], [rid]);
  view.put(`split.${rid}`, encodeRecord(residualRecord("r0", parent, parent.residuals![0])), 101);
  assert.equal(view.pendingResiduals.size, 0);
  assert.equal(view.cut, 1);
  view.setSplit(rid, undefined);
  assert.deepEqual(view.pendingResiduals.get(rid)?.parent, "r0", "gone again: pending again");
  assert.equal(view.cut, 0);
});

Deno.test("predictIdle: nothing on even work; a running split past the lanes' even share gets the pieces that bring it down to it", () => {
  assert.equal(predictIdle(8, 64, Array(8).fill(1)), 0, "uniform: every lane ends together");
  assert.equal(predictIdle(8, 40, [60, 10, 10]), 3, "even share 15: 60 needs 4 pieces");
  assert.equal(predictIdle(2, 0, [10, 11]), 0, "within 10 % of the even share: not worth a cut");
  assert.equal(predictIdle(0, 10, [10]), 0);
});

Deno.test("leader view: the work left of a running split is extrapolated from the pace of the estimates its owner's beats carry, so a split at its end ranks last", () => {
  let now = 0;
  const view = new LeaderView(() => {}, () => {}, () => now);
  view.put("split.s", encodeRecord(owned({ weight: 100, progress: null })), 1);
  assert.equal(view.workLeft("s", 0), 100, "no estimate yet: all of its weight");
  view.paceFromBeat("a", "s", [["s", 100, 100]]);
  assert.equal(view.workLeft("s", 0), 100);
  view.paceFromBeat("b", "s", [["s", 10, 100]]);
  view.paceFromBeat("a", "other-session", [["s", 10, 100]]);
  assert.equal(view.workLeft("s", 0), 100, "a beat of a member that does not own it is not its estimate");
  now = 1000;
  view.paceFromBeat("a", "s", [["s", 50, 100]]); // 50 ids a second
  assert.equal(view.workLeft("s", 1000), 50);
  assert.equal(view.workLeft("s", 1500), 25, "half a second later, by the same pace");
  assert.equal(view.workLeft("s", 3000), 0, "past its end: nothing left to cut");
  assert.equal(view.workLeft("absent", 0), 0);
});

Deno.test("decideCutAsks: a straggler is asked to be cut while free splits remain (before lanes go idle), into the pieces the even share needs; uniform work is not cut", () => {
  const view = new LeaderView(() => {}, () => {});
  const states = new Map<string, MemberState>();
  const tracker = new AssignmentTracker(view, states);
  const a = tracker.member("a", "sa", 4, false, false);
  states.set("a", a);
  view.put("member.a", encodeRecord({ v: 2, session: "sa", maxInFlight: 4, runtime: "t", version: "0", beat: 0, splittable: true }), 1);
  let rev = 1;
  const split = (id: string, weight: number, owner: boolean) =>
    view.put(`split.${id}`, encodeRecord({ ...owned({ weight, progress: null }), owner: owner ? { instance: "a", session: "sa" } : null, epoch: owner ? 3 : 0 }), ++rev);
  const input = () => ({
    view, states, tracker, now: 0, nothingFree: false, cooldown: new Map(), asks: new Map(), askTimeoutMs: 100, cooldownMs: 1000, minWork: 0,
  });
  for (let i = 0; i < 4; i++) split(`run${i}`, 10, true);
  for (let i = 0; i < 4; i++) split(`free${i}`, 10, false);
  assert.deepEqual(decideCutAsks(input()).intents, [], "even work: nobody waits for anybody");
  split("run0", 100, true); // a running split of 100 among 130 of work on 4 lanes: the even share is 40
  const asks = decideCutAsks(input()).intents.filter((i) => i.kind === "ask");
  assert.deepEqual(asks.map((i) => i.kind === "ask" && [i.id, i.ask.parts]), [["run0", 3]], "cut in 3 while 4 free splits wait");
});
