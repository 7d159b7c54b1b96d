// A resume after a self-fence whose CAS lands while the worker leaves (close)
// or drains must hand the split back, not start it (docs/DESIGN.md,
// "Liveness": a worker that no longer takes work releases the tenancies it
// resumes); and while its CAS is out it keeps the lane it will take, so no
// other split is claimed into it. Deterministic, on the manual clock: the
// resume's CAS is parked in a fault layer in front of the worker. Kills the
// mutants resume-while-leaving-kept and resume-frees-lane-early of
// scripts/mutants.mjs.
import assert from "node:assert/strict";
import { keys } from "../../admin.ts";
import { MemoryStore } from "../../mod.ts";
import { joinBehindFaults } from "./faulty_store.ts";
import { FAST, finalPlanner, Fleet, ManualDriver, splits } from "./fleet.ts";
import { plannedRecord, splitRecord } from "./scenarios.ts";

/**
 * A standby leader and a worker `w` (behind a fault layer) that holds the
 * first split (of `planned`, on `maxInFlight` lanes); `w` self-fences, its
 * heartbeat lands again before the leader could judge it dead, and the
 * resume pass that follows has its CAS parked.
 */
async function fencedWithResumeParked(f: Fleet, driver: ManualDriver, shared: MemoryStore, planned = 1, maxInFlight?: number) {
  const { leaseMs } = FAST;
  const id = "s000";
  const lead = await f.join({ instance: "lead", planner: finalPlanner(splits(planned)), maxInFlight: 0 });
  assert.ok(await f.until(() => lead.c.isLeader && (lead.c.status().plan?.generation ?? 0) > 0, 3000), "the standby leads and plans");

  const { member: w, store: wStore, restored } = await joinBehindFaults(f, driver, shared, "w", maxInFlight);
  assert.ok(await f.until(() => w.held.includes(id), 3000), "w holds the split");
  await f.advance(leaseMs / 2); // a few ordinary heartbeats
  const before = await splitRecord(shared, id);
  assert.equal(before.owner?.instance, "w");

  // Every write of w to the split record is parked from now on (the resume's CAS, once the fence ends).
  const cas = wStore.hold((op, key) => op === "update" && key === keys.split(id));
  // w's heartbeats fail until it fences itself, and land again at the next retry (before a peer may judge it dead).
  const beats = wStore.fail((op, key) => op === "update" && key === keys.member("w"));
  assert.ok(await f.until(() => w.c.stats().selfFences === 1, 2 * leaseMs, 1), "w fences itself");
  assert.deepEqual(w.lost().map((l) => [l.splitId, l.reason]), [[id, "starved"]], "the fence ended w's tenancy");
  beats.stop();
  assert.ok(await f.until(() => restored.length > 0, leaseMs, 1), "w's heartbeat landed again");
  assert.ok(await f.until(() => cas.count() === 1, leaseMs / 10, 1), "the resume's CAS is out (parked)");
  const still = await splitRecord(shared, id);
  assert.equal(still.owner?.instance, "w", "the leader did not take the split over: the store still names w");
  assert.equal(still.epoch, before.epoch);
  assert.deepEqual(w.held, [], "nothing runs while the resume's CAS is out");
  return { id, w, wStore, cas, epoch: before.epoch };
}

Deno.test("resume while leaving: a resume whose CAS lands while the worker closes is handed back before it leaves, not started", async () => {
  const shared = new MemoryStore({ yieldToTimers: false });
  const driver = new ManualDriver();
  await using f = new Fleet(shared, driver);
  const { leaseMs } = FAST;
  const { id, w, wStore, cas, epoch } = await fencedWithResumeParked(f, driver, shared);

  // w starts leaving while the resume's CAS is out; its member record's delete (the leave itself) is parked so
  // the split can be looked at the moment w is about to be gone.
  const leave = wStore.hold((op, key) => op === "delete" && key === keys.member("w"));
  const seen = w.events.length;
  let closed = false;
  const closing = w.c.close().then(() => (closed = true));
  await f.advance(10);
  assert.equal(closed, false, "close waits for the resume pass in flight");

  // The resume's CAS lands now (w named again, epoch + 1), while w is leaving.
  cas.release();
  assert.ok(await f.until(() => leave.count() === 1, leaseMs, 1), "w goes on to leave");
  const gainedWhileLeaving = w.events.slice(seen).filter((e) => e.type === "gained");
  assert.deepEqual(gainedWhileLeaving, [], "a split was started while w was leaving");
  const atLeave = await splitRecord(shared, id);
  assert.notEqual(atLeave.owner?.instance, "w", `w leaves while the store still names it (epoch ${atLeave.epoch}): the split is left owned by a departed member`);
  assert.ok(atLeave.epoch > epoch, "the resume's CAS landed before w handed the split back");
  assert.equal(atLeave.status, "runnable");
  assert.equal(atLeave.attempts, 0, "handing back charges no attempt");

  leave.release();
  assert.ok(await f.until(() => closed, leaseMs, 1), "w has left");
  await closing;
  assert.deepEqual(w.events.slice(seen).filter((e) => e.type === "gained"), [], "no split was started after the leave began");
});

Deno.test("resume while draining: a resume whose CAS lands while the worker drains is handed back, not started", async () => {
  const shared = new MemoryStore({ yieldToTimers: false });
  const driver = new ManualDriver();
  await using f = new Fleet(shared, driver);
  const { leaseMs } = FAST;
  const { id, w, cas, epoch } = await fencedWithResumeParked(f, driver, shared);

  const seen = w.events.length;
  let drained = false;
  const draining = w.c.drain().then(() => (drained = true));
  assert.ok(await f.until(() => drained, leaseMs, 1), "w holds nothing: its drain is done at once");
  await draining;
  assert.equal(w.c.status().state, "draining");

  // The resume's CAS lands now (w named again, epoch + 1), while w drains.
  cas.release();
  // Within a heartbeat or two, the split is handed back (owner none) while w is still a member that drains.
  const handedBack = async () => (await splitRecord(shared, id)).owner === null;
  let back = false;
  for (let t = 0; t < leaseMs && !back; t += 10) {
    await f.advance(10);
    back = await handedBack();
  }
  const gainedWhileDraining = w.events.slice(seen).filter((e) => e.type === "gained");
  assert.deepEqual(gainedWhileDraining, [], "a split was started while w was draining");
  assert.deepEqual(w.held, [], "the draining worker runs a split");
  const rec = await splitRecord(shared, id);
  assert.ok(back, `the split still names ${rec.owner?.instance} at epoch ${rec.epoch}: not handed back by the draining worker`);
  assert.ok(rec.epoch > epoch, "the resume's CAS landed before w handed the split back");
  assert.equal(rec.attempts, 0, "handing back charges no attempt");
});


Deno.test("resume keeps its lane: while a resume's CAS is out, no other split is claimed into the lane it will take", async () => {
  const shared = new MemoryStore({ yieldToTimers: false });
  const driver = new ManualDriver();
  await using f = new Fleet(shared, driver);
  const { leaseMs } = FAST;
  // One lane, two splits: w runs s000 and holds s001 as a spare offer.
  const { id, w, cas, epoch } = await fencedWithResumeParked(f, driver, shared, 2, 1);
  const other = "s001";
  const spareListed = async () => (JSON.parse((await shared.get(keys.assign("w")))?.value ?? "{}").offers ?? []).some((o: { id: string }) => o.id === other);
  assert.ok(await spareListed(), "the leader offers w the other split (a spare: its one lane runs s000)");

  // Longer than a free lane waits before it claims a spare (spareClaimAfterMs: 20 ms here).
  for (let t = 0; t < leaseMs / 4; t += 10) await f.advance(10);
  const meanwhile = (await plannedRecord(shared, other))!.record; // not dealt yet: no record of its own, owned by nobody
  assert.equal(meanwhile.owner, null, `w claimed ${other} (epoch ${meanwhile.epoch}) into the lane its resume of ${id} will take`);

  // The resume lands: w runs s000 again, in its one lane.
  cas.release();
  assert.ok(await f.until(() => w.held.includes(id), leaseMs, 1), "w resumed the split");
  const resumed = await splitRecord(shared, id);
  assert.equal(resumed.owner?.instance, "w");
  assert.ok(resumed.epoch > epoch, "the resume moved the epoch");
  assert.deepEqual(w.held, [id], "w runs no more splits than its one lane");
});
