// Issue 33 items 1 and 2: the completion judge when the leader's view of
// `plan` lags the store. A lost CAS hands the fresh record to the view; the
// judge never rewrites `plan` unchanged and clears only the outcome it
// judged wrong, so the outcome is decided in a bounded number of writes
// however long the watch lags.
import assert from "node:assert/strict";
import type { Core } from "../../src/coordinator/core.ts";
import { CompletionJudge, decideCompletion } from "../../src/coordinator/leader/completion.ts";
import { LeaderView } from "../../src/coordinator/leader/leader_view.ts";
import { ManualClock } from "../../testing.ts";
import type { PlanRecord, SplitRecord } from "../../admin.ts";
import { decodeRecord, encodeRecord, PlanRecordSchema } from "../../src/records.ts";
import { MemoryStore } from "../../mod.ts";
import type { StoreEntry } from "../../store.ts";

const done = (): SplitRecord => ({
  v: 2,
  epoch: 2,
  status: "completed",
  owner: null,
  attempts: 0,
  weight: 1,
  progress: { watermark: 10 },
  descriptor: { n: 1 },
});

/** A leader's judge over a view where both splits completed, and the plan as the store holds it. */
async function setup() {
  const store = new MemoryStore({ yieldToTimers: false });
  const core = { store, clock: new ManualClock(), config: { opTimeoutMs: 1000 }, log: () => {}, schedule: () => {} } as unknown as Core;
  const view = new LeaderView(() => {}, () => {});
  view.put("split.a", encodeRecord(done()), 1);
  view.put("split.b", encodeRecord(done()), 2);
  let learned: { plan: PlanRecord; revision: number } | undefined;
  const judge = new CompletionJudge(core, view, () => Promise.resolve(true), (e: StoreEntry) => {
    const plan = decodeRecord("plan", e.value, PlanRecordSchema);
    if (!learned || learned.revision < e.revision) learned = { plan, revision: e.revision };
  });
  let writes = 0;
  const update = store.update.bind(store);
  store.update = (k, v, r) => (k === "plan" && writes++, update(k, v, r));
  const plan = async () => {
    const cur = (await store.get("plan"))!;
    return { plan: decodeRecord("plan", cur.value, PlanRecordSchema), revision: cur.revision };
  };
  return { store, view, judge, learned: () => learned, writes: () => writes, plan };
}

const base: PlanRecord = { v: 2, term: 1, finality: "final", generation: 1, planned: 2 };
const stalled: PlanRecord = { ...base, outcome: { kind: "stalled", completed: 1, quarantined: 1 } };

Deno.test("completion under a lagging plan view: a clear that loses its CAS learns the fresh plan, writes nothing, and the next pass decides the outcome", async () => {
  const s = await setup();
  // The view's plan: `stalled`, at the revision the watch delivered last.
  const old = await s.store.create("plan", encodeRecord(stalled));
  assert.ok(old.ok);
  // An operator's repair cleared it since (the watch has not delivered that).
  assert.ok((await s.store.update("plan", encodeRecord(base), old.revision)).ok);
  const writesBefore = s.writes();
  const intent = decideCompletion(s.view, stalled, 1, old.revision);
  assert.equal(intent?.action, "clear", "the stale view disagrees with its outcome");
  await s.judge.apply(intent!);
  assert.equal(s.writes() - writesBefore, 1, "one CAS (lost), and no rewrite of the record unchanged");
  assert.deepEqual(s.learned(), await s.plan(), "the view takes the fresh record");
  // The next pass decides on what the view learned: one write, the outcome.
  const next = decideCompletion(s.view, s.learned()!.plan, 1, s.learned()!.revision);
  assert.equal(next?.action, "confirm");
  await s.judge.apply(next!);
  assert.deepEqual((await s.plan()).plan.outcome, { kind: "allComplete", completed: 2 });
  assert.equal(s.writes() - writesBefore, 2, "decided within two writes, whatever the watch delivers");
  assert.deepEqual(s.learned(), await s.plan(), "the leader's own landed write reaches its view at once");
});

Deno.test("completion under a lagging plan view: a clear never wipes an outcome it did not judge (a late delivery of its own old stalled against a fresh allComplete)", async () => {
  const s = await setup();
  const old = await s.store.create("plan", encodeRecord(stalled));
  assert.ok(old.ok);
  const cleared = await s.store.update("plan", encodeRecord(base), old.revision);
  assert.ok(cleared.ok);
  const right = { ...base, outcome: { kind: "allComplete" as const, completed: 2 } };
  assert.ok((await s.store.update("plan", encodeRecord(right), cleared.revision)).ok, "a fresh, correct allComplete");
  // The view's plan is the old `stalled` again (a late delivery): it decides to clear `stalled`.
  const intent = decideCompletion(s.view, stalled, 1, old.revision);
  assert.equal(intent?.action, "clear");
  await s.judge.apply(intent!);
  assert.deepEqual((await s.plan()).plan.outcome, right.outcome, "the allComplete it never judged stands");
  assert.deepEqual(s.learned()?.plan.outcome, right.outcome, "and its view learns it");
});

Deno.test("completion: an outcome the judge did judge wrong is cleared after a lost CAS when the fresh record still carries it", async () => {
  const s = await setup();
  const first = await s.store.create("plan", encodeRecord(stalled));
  assert.ok(first.ok);
  // The plan moved (a generation bump of the same outcome: e.g. an unrelated rewrite) but still carries `stalled`.
  const moved = await s.store.update("plan", encodeRecord({ ...stalled }), first.revision);
  assert.ok(moved.ok);
  await s.judge.apply(decideCompletion(s.view, stalled, 1, first.revision)!);
  assert.equal((await s.plan()).plan.outcome, undefined, "cleared at the fresh revision");
});

Deno.test("completion: a view whose split watch lags never clears a right outcome: the clear is confirmed against the store first", async () => {
  const store = new MemoryStore({ yieldToTimers: false });
  const core = { store, clock: new ManualClock(), config: { opTimeoutMs: 1000 }, log: () => {}, schedule: () => {} } as unknown as Core;
  const view = new LeaderView(() => {}, () => {});
  // The store: both splits completed. The view: one still runnable (its watch lags).
  await store.create("split.a", encodeRecord(done()));
  await store.create("split.b", encodeRecord(done()));
  view.put("split.a", encodeRecord(done()), 1);
  view.put("split.b", encodeRecord({ ...done(), status: "runnable", owner: { instance: "w", session: "s" } }), 2);
  // The view cannot say whether it is behind: a listing decides.
  const judge = new CompletionJudge(core, view, () => Promise.resolve(undefined), () => {});
  const right = { ...base, outcome: { kind: "allComplete" as const, completed: 2 } };
  const w = await store.create("plan", encodeRecord(right));
  assert.ok(w.ok);
  const intent = decideCompletion(view, right, 1, w.revision);
  assert.equal(intent?.action, "clear", "the lagging view disagrees with the outcome");
  await judge.apply(intent!);
  const now = decodeRecord("plan", (await store.get("plan"))!.value, PlanRecordSchema);
  assert.deepEqual(now.outcome, right.outcome, "the store says the outcome is right: it stands");
});
