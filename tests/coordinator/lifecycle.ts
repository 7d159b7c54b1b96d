// A job's life (issue 41), defined once and run on every backend (memory:
// lifecycle_test.ts; the real stores through the backend kit,
// tests/store/backend_suites.ts): permanent failures quarantine at
// once; outcomes name what they skipped, and wait exits by them; a paused
// job deals nothing, hands back what runs, decides no outcome, and stays
// paused across a leader change and a restart of the whole fleet; a
// finished job is rerun as a new run, its history kept.
import assert from "node:assert/strict";
import { cancelSplit, keys, pauseJob, readFleet, rerunJob, resumeJob, waitForOutcome } from "../../admin.ts";
import { exitCodeForWait } from "../../host.ts";
import type { PlannedSplit, Planner, Store } from "../../mod.ts";
import { AssignRecordSchema, PlanRecordSchema, safeDecodeRecord, SplitRecordSchema } from "../../src/records.ts";
import { type Backend, finalPlanner, type Fleet, type Member, rawStore, splits } from "./fleet.ts";
import { splitRecord } from "./scenarios.ts";

export function lifecycleScenarios(b: Backend): void {
  const t = (name: string, fn: () => Promise<void>) =>
    Deno.test({ name: `${b.name}: ${name}`, fn, sanitizeOps: false, sanitizeResources: false });

  t("L1. a permanent failure quarantines its split at once (one attempt, no retry, no backoff), its reason and stack kept and marked; an ordinary one is retried", async () => {
    await using f = await b.fleet();
    const a = await f.join({ instance: "a", planner: finalPlanner(splits(3)), maxAttempts: 5 });
    assert.ok(await f.until(() => a.held.length === 3, 3000), "a holds the three splits");
    const [bad, flaky] = a.c.status().held;
    const stack = "Error: 404\n    at run (source.ts:1:1)";
    await a.c.fail(bad.id, bad.epoch, "GET /objects/a: 404", { stack, permanent: true });
    await a.c.fail(flaky.id, flaky.epoch, "ECONNRESET");
    const q = await splitRecord(f.store, bad.id);
    assert.deepEqual([q.status, q.attempts, q.owner], ["quarantined", 1, null]);
    assert.deepEqual(q.failures?.map((x) => [x.message, x.stack, x.permanent]), [["GET /objects/a: 404", "Error: 404\nat run (source.ts:1:1)", true]]);
    const ev = a.events.find((e) => e.type === "quarantined");
    assert.deepEqual(ev, { type: "quarantined", splitId: bad.id, attempts: 1, permanent: true });
    // The ordinary failure waits out its backoff and is offered again; the permanent one never is.
    assert.ok(await f.until(() => a.held.includes(flaky.id), 3000), "the ordinary failure runs again");
    const again = await splitRecord(f.store, flaky.id);
    assert.equal(again.failures?.[0].permanent, undefined, "not marked");
    await f.advance(4 * f.timings.retryBackoffMaxMs);
    assert.ok(!a.held.includes(bad.id), "the permanently failed split is not offered again");
    assert.equal(a.gained().filter((g) => g.split.id === bad.id).length, 1, "it ran once");
    const view = await readFleet(f.store, { state: "quarantined" });
    assert.deepEqual(view.splits.map((s) => [s.id, s.permanent]), [[bad.id, true]]);
  });

  t("L2. the outcome counts what was skipped (cancelled, permanently failed): in the record, the completion event, the fleet view and wait's exit code", async () => {
    await using f = await b.fleet();
    const a = await f.join({ instance: "a", planner: finalPlanner(splits(4)), maxAttempts: 1 });
    assert.ok(await f.until(() => a.held.length === 4, 3000), "a holds the four splits");
    const held = a.c.status().held;
    const [done, cancelled, permanent, poison] = held.map((h) => h.id);
    await a.c.commit(done, held[0].epoch, { watermark: 1 }, { final: true });
    assert.equal((await cancelSplit(rawStore(f), cancelled)).outcome, "cancelled");
    await a.c.fail(permanent, held[2].epoch, "404", { permanent: true });
    await a.c.fail(poison, held[3].epoch, "ECONNRESET");
    assert.ok(await f.until(() => a.has("stalled"), 3000), "the job stalls");
    const stalled = { kind: "stalled", completed: 1, quarantined: 2, cancelled: 1, permanent: 1 } as const;
    assert.deepEqual(a.events.find((e) => e.type === "stalled"), { type: "stalled", completed: 1, quarantined: 2, cancelled: 1, permanent: 1 });
    const w = await waitForOutcome(rawStore(f), { timeoutMs: 5000 });
    assert.deepEqual(w.kind === "outcome" && w.outcome, stalled);
    assert.deepEqual(w.result?.skipped, { cancelled: 1, quarantined: 2, permanent: 1 });
    assert.equal(exitCodeForWait(w), 3);
    const view = await readFleet(rawStore(f));
    assert.deepEqual([view.counts.quarantined, view.counts.permanent, view.counts.cancelled], [2, 1, 1]);
    assert.deepEqual(view.plan?.result.outcome, stalled);
    // Cancel what is quarantined: done, except what was skipped.
    for (const id of [permanent, poison]) assert.equal((await cancelSplit(rawStore(f), id)).outcome, "cancelled");
    assert.ok(await f.until(() => a.has("allComplete"), 3 * f.timings.leaseMs), "the job completes");
    assert.deepEqual(a.events.find((e) => e.type === "allComplete"), { type: "allComplete", completed: 1, cancelled: 3 });
    const end = await waitForOutcome(rawStore(f), { timeoutMs: 5000 });
    assert.deepEqual(end.kind === "outcome" && end.outcome, { kind: "allComplete", completed: 1, cancelled: 3 });
    assert.equal(exitCodeForWait(end), 5, "complete except cancelled splits");
  });

  t("L3. a paused job hands back what runs (no attempt charged, progress kept), deals and decides nothing; resumed, it continues where it stopped", async () => {
    await using f = await b.fleet();
    const raw = rawStore(f);
    const a = await f.join({ instance: "a", planner: finalPlanner(splits(4)), maxInFlight: 2 });
    assert.ok(await f.until(() => a.held.length === 2, 3000), "a fills its two lanes");
    const first = a.c.status().held;
    for (const h of first) await a.c.commit(h.id, h.epoch, { watermark: 5 });
    const p = await pauseJob(raw, { by: "ops", reason: "database incident" });
    assert.equal(p.outcome, "paused", p.message);
    assert.ok(await f.until(() => a.has("paused"), 2000), "the member sees the pause");
    assert.deepEqual(a.events.find((e) => e.type === "paused"), { type: "paused", handingBack: 2 });
    for (const h of first) assert.ok(a.events.some((e) => e.type === "revokeRequested" && e.splitId === h.id), `${h.id} is revoked`);
    assert.equal(a.c.status().paused, true);
    await a.c.release(a.held); // a cooperating source commits its tail and returns
    // Nothing is dealt for two leases: no lane fills, no offer or grant is listed.
    await f.advance(2 * f.timings.leaseMs);
    assert.deepEqual(a.held, [], "nothing is claimed or granted while paused");
    assert.deepEqual(await directives(raw, "a"), { offers: 0, grants: 0 }, "the leader deals nothing");
    for (const h of first) {
      const r = await splitOf(raw, h.id);
      assert.deepEqual([r.status, r.owner, r.attempts, r.progress?.watermark], ["runnable", null, 0, 5], `${h.id}: handed back, no attempt`);
    }
    assert.equal((await pauseJob(raw)).outcome, "alreadyPaused");
    assert.equal((await readFleet(raw)).plan?.result.state, "paused");
    const r = await resumeJob(raw);
    assert.equal(r.outcome, "resumed", r.message);
    assert.ok(await f.until(() => a.has("resumed") && a.held.length === 2, 3000), "dealt again");
    // The splits handed back first (heaviest first, the planner's order), from their last commit.
    const again = a.gained().slice(-2);
    assert.deepEqual(again.map((g) => [g.split.id, g.progress?.watermark]).sort(), first.map((h) => [h.id, 5]).sort());
    assert.equal((await resumeJob(raw)).outcome, "notPaused");
    await completeUntilDone(f, [a]);
    for (const id of splits(4).map((x) => x.id)) assert.equal((await splitOf(raw, id)).attempts, 0, `${id}: nothing charged`);
  });

  t("L4. a pause suspends completion: the last split finishing while paused decides no outcome until the resume", async () => {
    await using f = await b.fleet();
    const raw = rawStore(f);
    const a = await f.join({ instance: "a", planner: finalPlanner(splits(1)) });
    assert.ok(await f.until(() => a.held.length === 1, 3000));
    const [h] = a.c.status().held;
    assert.equal((await pauseJob(raw)).outcome, "paused");
    assert.ok(await f.until(() => a.has("paused"), 2000));
    await a.c.commit(h.id, h.epoch, { watermark: 1 }, { final: true }); // a source that finishes instead of stopping
    await f.advance(2 * f.timings.leaseMs);
    assert.equal(await outcomeOf(raw), undefined, "no outcome while paused");
    assert.ok(!a.has("allComplete"));
    assert.equal((await resumeJob(raw)).outcome, "resumed");
    assert.ok(await f.until(() => a.has("allComplete"), 3 * f.timings.leaseMs), "decided after the resume");
    assert.equal((await pauseJob(raw)).outcome, "finished", "a finished job is not paused");
  });

  t("L5. a pause holds across a leader change (a dead leader's splits are freed, not granted) and a restart of the whole fleet; the resume completes the job", async () => {
    await using f = await b.fleet();
    const raw = rawStore(f);
    const plan = finalPlanner(splits(6));
    const [a, bb, c] = await f.joinAll([
      { instance: "a", planner: plan, maxInFlight: 2 },
      { instance: "b", planner: plan, maxInFlight: 2 },
      { instance: "c", planner: plan, maxInFlight: 2 },
    ]);
    assert.ok(await f.until(() => [a, bb, c].every((m) => m.held.length === 2), 5000), "every lane full");
    const leader = [a, bb, c].find((m) => m.c.isLeader)!;
    const others = [a, bb, c].filter((m) => m !== leader);
    const leaderHeld = leader.held;
    assert.equal((await pauseJob(raw)).outcome, "paused");
    assert.ok(await f.until(() => others.every((m) => m.has("paused")), 2000));
    const gainedAtPause = others.map((m) => m.gained().length);
    // Every owner the dead leader's splits have from here on: freed means
    // nobody, not a member that is granted them and hands them back.
    const owners: string[] = [];
    const history = raw.watch("split.");
    void (async () => {
      for await (const ev of history) {
        if (ev.type !== "put" || !leaderHeld.some((id) => keys.split(id) === ev.key)) continue;
        const o = (JSON.parse(ev.value) as { owner: { instance: string } | null }).owner;
        if (o && o.instance !== leader.c.instance) owners.push(`${ev.key}: ${o.instance}`);
      }
    })().catch(() => {});
    // The leader dies before it hands anything back; the others hand theirs back.
    await leader.c.abandon();
    for (const m of others) await m.c.release(m.held);
    assert.ok(await f.until(() => others.some((m) => m.c.isLeader), 4 * f.timings.leaseMs), "a new leader");
    // The dead leader's splits are taken over (charged, as for any crash) and freed: nobody is granted them.
    const freed = async () => {
      for (const id of leaderHeld) {
        const r = await splitOf(raw, id);
        if (r.owner !== null || r.attempts < 1) return false;
      }
      return true;
    };
    assert.ok(await untilAsync(f, freed, 4 * f.timings.leaseMs), "the dead leader's splits are taken over and freed");
    await f.advance(2 * f.timings.leaseMs);
    assert.deepEqual(others.map((m) => m.held.length), [0, 0], "the new leader deals nothing");
    assert.deepEqual(others.map((m) => m.gained().length), gainedAtPause, "nothing was granted, not even for a moment");
    for (const m of others) assert.deepEqual(await directives(raw, m.c.instance), { offers: 0, grants: 0 }, m.c.instance);
    await history.stop();
    assert.deepEqual(owners, [], "the takeover named no live member owner of the dead leader's splits");
    for (const id of leaderHeld) {
      const r = await splitOf(raw, id);
      assert.deepEqual([r.status, r.owner, r.attempts], ["runnable", null, 1], `${id}: freed, one attempt for the crash`);
    }
    // A restart of the whole fleet: everyone leaves, new processes join: still paused.
    for (const m of others) await m.c.close();
    const [d, e] = await f.joinAll([{ instance: "d", planner: plan, maxInFlight: 3 }, { instance: "e", planner: plan, maxInFlight: 3 }]);
    assert.ok(await f.until(() => [d, e].some((m) => m.c.isLeader), 4 * f.timings.leaseMs), "the restarted fleet elects a leader");
    await f.advance(2 * f.timings.leaseMs);
    assert.ok(d.has("paused") && e.has("paused"), "members that join a paused job are told");
    assert.deepEqual([d.held.length, e.held.length], [0, 0], "the restarted fleet deals nothing while paused");
    assert.equal((await resumeJob(raw)).outcome, "resumed");
    await completeUntilDone(f, [d, e]);
    assert.deepEqual(await outcomeOf(raw), { kind: "allComplete", completed: 6 });
  });

  t("L6. a member claims nothing while paused, whoever deals: with no leader alive, the spares its record lists stay unclaimed", async () => {
    await using f = await b.fleet();
    const raw = rawStore(f);
    // A standby leader deals; b holds one split and spares for a leaderless interval.
    const lead = await f.join({ instance: "lead", planner: finalPlanner(splits(6)), maxInFlight: 0 });
    const m = await f.join({ instance: "m", maxInFlight: 1 });
    assert.ok(await f.until(() => m.held.length === 1, 3000), "m fills its lane");
    assert.ok(await untilAsync(f, async () => (await directives(raw, "m")).offers > 0, 3000), "m's record lists spares");
    await lead.c.abandon(); // no leader is left to take them back
    assert.equal((await pauseJob(raw)).outcome, "paused");
    assert.ok(await f.until(() => m.has("paused"), 2000));
    await m.c.release(m.held);
    // Before m could be elected (a lease at least), its free lane would claim a spare within spareClaimAfterMs.
    await f.advance(f.timings.leaseMs / 2);
    assert.deepEqual(m.held, [], "no spare claimed while paused");
    assert.ok(!m.gained().some((g) => g.kind === "claim" && g.split.id !== m.gained()[0].split.id), "no claim since the pause");
  });

  t("L7. a finished job is rerun: refused while it runs; the planner runs again, its splits run above every old epoch (a cut one with its planned descriptor), history kept per job and per split, splits no longer planned removed", async () => {
    await using f = await b.fleet();
    const raw = rawStore(f);
    let plan = splits(4);
    const p = countingPlanner(() => plan);
    const a = await f.join({ instance: "a", planner: p.planner, maxAttempts: 2, maxInFlight: 4 });
    assert.ok(await f.until(() => a.held.length === 4, 3000));
    assert.equal((await rerunJob(raw)).outcome, "running", "refused while the job runs");
    const [h0, h1, h2, h3] = a.c.status().held;
    await a.c.commit(h0.id, h0.epoch, { watermark: 9 }, { final: true, records: 90 });
    await a.c.fail(h1.id, h1.epoch, "flaky once");
    // s002 is cut in two: a residual split of run 1.
    const [residual] = await a.c.split(h2.id, h2.epoch, { keep: { n: 2, half: 1 }, residuals: [{ descriptor: { n: 2, half: 2 } }] });
    await a.c.commit(h3.id, h3.epoch, {}, { final: true, records: 10 });
    assert.ok(await f.until(() => a.held.includes(h1.id) && a.held.includes(residual), 3000), "the failed split runs again, the residual is dealt");
    await completeUntilDone(f, [a]);
    const before = new Map<string, number>();
    for (const id of [...splits(4).map((x) => x.id), residual]) before.set(id, (await splitOf(raw, id) as unknown as { epoch: number }).epoch);
    const maxEpoch = Math.max(...before.values());
    assert.equal(p.runs(), 1);

    // Run 2 plans three of the four splits, one with a new descriptor; s002 is planned whole again.
    plan = [{ ...splits(4)[0], descriptor: { n: 0, v: 2 } }, splits(4)[1], splits(4)[2]];
    const r = await rerunJob(raw);
    assert.equal(r.outcome, "rerun", r.message);
    assert.ok(r.outcome === "rerun");
    assert.deepEqual([r.run, r.epochBase, r.previous.run, r.previous.outcome, r.previous.planned, r.previous.records, r.previous.failures], [
      2, maxEpoch, 1, { kind: "allComplete", completed: 5 }, 4, 100, 1,
    ]);
    assert.ok(await f.until(() => a.has("reopened"), 2000), "the member sees the outcome withdrawn");
    assert.ok(await f.until(() => p.runs() === 2 && a.held.length === 3, 3 * f.timings.leaseMs), "the leader plans again and deals run 2");
    const gained = a.gained().slice(-3);
    assert.ok(gained.every((g) => g.epoch > maxEpoch && g.progress === undefined), "each split starts afresh above every old epoch");
    assert.deepEqual(gained.find((g) => g.split.id === "s000")?.split.descriptor, { n: 0, v: 2 }, "the planner's new descriptor");
    assert.deepEqual(gained.find((g) => g.split.id === "s002")?.split.descriptor, { n: 2 }, "the cut split whole again");
    for (const gone of ["s003", residual]) {
      assert.ok(await untilAsync(f, async () => !(await raw.get(keys.split(gone))), 3000), `${gone} (not planned by run 2) is removed`);
    }
    await completeUntilDone(f, [a], 2); // run 2 completes
    assert.deepEqual(await outcomeOf(raw), { kind: "allComplete", completed: 3 }, "run 2's outcome counts run 2's splits");
    const view = await readFleet(raw, { limit: 10 });
    assert.deepEqual([view.plan?.run, view.plan?.history.map((h) => h.run), view.counts.total], [2, [1], 3], JSON.stringify(view.splits.map((s) => [s.id, s.status, s.run])) + JSON.stringify(view.plan));
    const s1 = view.splits.find((s) => s.id === "s001")!;
    assert.deepEqual([s1.run, s1.attempts, s1.runs.map((x) => [x.run, x.status, x.attempts, x.lastFailure])], [2, 0, [[1, "completed", 1, "flaky once"]]]);
    assert.equal(view.splits.find((s) => s.id === "s000")!.runs[0].records, 90);
    const r3 = await rerunJob(raw);
    assert.deepEqual([r3.outcome, r3.outcome === "rerun" && r3.run], ["rerun", 3], "run 2 is rerun in turn");
    assert.deepEqual((await readFleet(raw)).plan?.history.map((h) => [h.run, h.planned]), [[1, 4], [2, 3]], "every run kept");
  });

  t("L8. a rerun's split taken over before its first commit of the run starts from nothing, not from the position the last run left in its progress record", async () => {
    await using f = await b.fleet();
    const raw = rawStore(f);
    const p = countingPlanner(() => splits(1));
    const a = await f.join({ instance: "a", planner: p.planner });
    assert.ok(await f.until(() => a.held.length === 1, 3000));
    const [h] = a.c.status().held;
    await a.c.commit(h.id, h.epoch, { watermark: 40 }); // run 1's progress record holds 40
    await a.c.commit(h.id, h.epoch, { watermark: 50 }, { final: true });
    assert.ok(await f.until(() => a.has("allComplete"), 3000));
    assert.equal((await rerunJob(raw)).outcome, "rerun");
    assert.ok(await f.until(() => p.runs() === 2 && a.held.length === 1, 3 * f.timings.leaseMs), "run 2 is dealt to a");
    assert.equal(a.gained().at(-1)?.progress, undefined, "a starts run 2 afresh");
    // a dies before its first commit of run 2; b takes the split over, fencing its progress record.
    const other = await f.join({ instance: "b", planner: p.planner });
    await a.c.abandon();
    assert.ok(await f.until(() => other.held.length === 1, 8 * f.timings.leaseMs), "b takes the split over");
    const g = other.gained().at(-1)!;
    assert.equal(g.progress, undefined, `b starts run 2 afresh, not at run 1's ${JSON.stringify(g.progress)}`);
    await other.c.commit(g.split.id, g.epoch, { watermark: 1 }, { final: true });
    assert.ok(await f.until(() => other.events.filter((e) => e.type === "allComplete").length >= 1, 3 * f.timings.leaseMs), "run 2 completes");
  });
}

/** A planner that counts its runs and plans `list()` each time. */
function countingPlanner(list: () => PlannedSplit[]): { planner: Planner; runs: () => number } {
  let n = 0;
  return { planner: () => (n++, Promise.resolve({ splits: list(), finality: "final" })), runs: () => n };
}

/** Moves time (in the fleet's driver) until the store says `cond`, for at most `maxMs` (with the driver's slack). */
async function untilAsync(f: Fleet, cond: () => Promise<boolean>, maxMs: number): Promise<boolean> {
  for (const end = f.now() + maxMs + f.time.slack;;) {
    if (await cond()) return true;
    if (f.now() >= end) return false;
    await f.advance(20);
  }
}

/** A split record as the store holds it now. */
async function splitOf(store: Store, id: string) {
  const e = await store.get(keys.split(id));
  assert.ok(e, `split ${id} exists`);
  return JSON.parse(e.value) as { status: string; owner: unknown; attempts: number; progress: { watermark?: number } | null };
}

/** The outcome the plan record holds now. */
async function outcomeOf(store: Store): Promise<unknown> {
  const e = await store.get(keys.plan);
  const r = e ? safeDecodeRecord(e.key, e.value, PlanRecordSchema) : undefined;
  return r?.ok ? r.value.outcome : undefined;
}

/** How many offers and grants the member's assignment record lists now. */
/**
 * The offers and the live grants (the split still opened for the member at
 * the grant's epoch) an assignment record lists. A grant whose split moved
 * on since is not dealt work: the member ignores it, and the leader drops it
 * at the record's next write rather than writing for it alone.
 */
async function directives(store: Store, instance: string): Promise<{ offers: number; grants: number }> {
  const e = await store.get(keys.assign(instance));
  if (!e) return { offers: 0, grants: 0 };
  const r = safeDecodeRecord(e.key, e.value, AssignRecordSchema);
  assert.ok(r.ok, "the assignment record is readable");
  let grants = 0;
  for (const g of r.value.grants) {
    const s = await store.get(keys.split(g.id));
    const rec = s ? safeDecodeRecord(s.key, s.value, SplitRecordSchema) : undefined;
    if (rec?.ok && rec.value.status === "runnable" && rec.value.epoch === g.epoch && rec.value.owner?.instance === instance) grants++;
  }
  return { offers: r.value.offers.length, grants };
}

/** Completes whatever the members hold until one has announced allComplete `times` times (once per run). */
async function completeUntilDone(f: Fleet, ms: Member[], times = 1): Promise<void> {
  const done = () => ms.some((m) => m.events.filter((e) => e.type === "allComplete").length >= times);
  for (const end = f.now() + 20 * f.timings.leaseMs; !done();) {
    assert.ok(f.now() < end, `the job completes (held: ${ms.map((m) => m.held.length).join(", ")})`);
    for (const m of ms) await m.completeAll();
    await f.advance(20);
  }
}
