// Operator actions against a running fleet (MemoryStore): draining a named
// member through its member record, cancelling a held split, requeueing a
// quarantined split after the job stalled.
import assert from "node:assert/strict";
import { cancelSplit, drainMember, requeueSplit, readFleet } from "../../admin.ts";
import { SplitCoordinator, MemoryStore, startWorker } from "../../mod.ts";
import { withTimeout } from "../helpers/deadline.ts";
import type { SplitSource } from "../../mod.ts";
import { finalPlanner, Fleet, splits } from "./fleet.ts";
import { splitRecord } from "./scenarios.ts";

const t = (name: string, fn: () => Promise<void>) =>
  Deno.test({ name: `operator: ${name}`, fn, sanitizeOps: false, sanitizeResources: false });

t("a member drained through its record drains itself; its splits go to the others, nothing charged", async () => {
  await using f = new Fleet();
  const plan = finalPlanner(splits(8));
  const [a, b] = await f.joinAll([{ instance: "a", planner: plan }, { instance: "b", planner: plan }]);
  assert.ok(await f.until(() => a.held.length === 4 && b.held.length === 4, 2000));
  const r = await drainMember(f.store, "b");
  assert.equal(r.outcome, "draining");
  // The leader sees the record at once: it revokes b's splits, naming successors.
  assert.ok(await f.until(() => b.events.filter((e) => e.type === "revokeRequested").length === 4, 200));
  // A cooperating source releases: to the successors the leader named.
  await b.c.release(b.held);
  // At b's next heartbeat (within leaseMs / 3) it adopts the record and drains itself.
  assert.ok(await f.until(() => b.c.status().state === "draining", f.timings.leaseMs / 2), "b drains at its next beat");
  assert.ok(await f.until(() => a.held.length === 8, f.timings.leaseMs), `a holds all 8 (a: ${a.held.length})`);
  for (const id of a.held) assert.equal((await splitRecord(f.store, id)).attempts, 0, `${id}: no attempt charged`);
  assert.deepEqual(b.lost(), [], JSON.stringify(b.events.map((e) => e.type)));
  assert.equal(b.error, undefined);
  assert.equal((await drainMember(f.store, "b")).outcome, "alreadyDraining");
});

t("a cancelled split stops at its owner at once (a drop) and counts apart from completed", async () => {
  await using f = new Fleet();
  const [a] = await f.joinAll([{ instance: "a", planner: finalPlanner(splits(3)) }]);
  assert.ok(await f.until(() => a.held.length === 3, 2000));
  const victim = a.held[0];
  const before = await splitRecord(f.store, victim);
  const r = await cancelSplit(f.store, victim);
  assert.ok(r.outcome === "cancelled" && r.previousOwner === "a" && r.epoch === before.epoch + 1);
  assert.ok(await f.until(() => !a.held.includes(victim), 1000), "the owner stopped the cancelled split");
  assert.deepEqual(a.lost().map((l) => [l.splitId, l.reason]), [[victim, "fenced"]]);
  await a.completeAll();
  assert.ok(await f.until(() => a.has("allComplete"), 2000));
  const view = await readFleet(f.store);
  assert.deepEqual([view.counts.completed, view.counts.cancelled, view.plan?.outcome], [2, 1, "allComplete"]);
  assert.equal((await splitRecord(f.store, victim)).status, "cancelled");
});

t("requeue after a stall: the outcome is cleared, the split runs again and the job completes", async () => {
  await using f = new Fleet();
  const [a] = await f.joinAll([{ instance: "a", planner: finalPlanner(splits(2)), maxAttempts: 1 }]);
  assert.ok(await f.until(() => a.held.length === 2, 2000));
  const [poison, good] = a.c.status().held;
  await a.c.fail(poison.id, poison.epoch, "bad input line 7");
  await a.c.commit(good.id, good.epoch, {}, { final: true });
  assert.ok(await f.until(() => a.has("stalled"), 2000), "the job stalls");
  const q = await splitRecord(f.store, poison.id);
  assert.equal(q.status, "quarantined");
  assert.equal(q.failures?.length, 1);
  assert.equal(q.failures![0].worker, "a");
  assert.equal(q.failures![0].message, "bad input line 7");
  assert.equal(typeof q.failures![0].at, "number");
  const r = await requeueSplit(f.store, poison.id);
  assert.equal(r.outcome, "requeued");
  assert.ok(await f.until(() => a.held.includes(poison.id), 2000), "offered and claimed again");
  const g = a.gained().filter((e) => e.split.id === poison.id).at(-1)!;
  assert.ok(g.epoch > q.epoch, "a higher epoch than the quarantined record's");
  await a.completeAll();
  // This coordinator announced `stalled` once (its worker would have exited on it): the plan record tells.
  let outcome: string | null | undefined;
  assert.ok(
    await f.until(() => {
      void readFleet(f.store).then((v) => (outcome = v.plan?.outcome));
      return outcome === "allComplete";
    }, 2000),
    `the job completes after the requeue (outcome ${outcome})`,
  );
  const done = await splitRecord(f.store, poison.id);
  assert.equal(done.status, "completed");
  assert.equal(done.failures?.length, 1, "history kept");
});

t("a worker whose member is drained finishes as after SIGTERM (drained), its lanes handed over", async () => {
  await using store = new MemoryStore();
  const gate = Promise.withResolvers<void>();
  const source: SplitSource<{ n: number }> = {
    fingerprint: () => "ops",
    plan: finalPlanner(splits(4)) as SplitSource<{ n: number }>["plan"],
    run: async (lane) => {
      await Promise.race([gate.promise, new Promise((r) => lane.revokeSignal.addEventListener("abort", r))]);
      if (!lane.revokeSignal.aborted) await lane.complete();
    },
  };
  const timings = { leaseMs: 1000, opTimeoutMs: 200, drainDeadlineMs: 500, maxInFlight: 2 };
  const ca = await SplitCoordinator.join({ store, job: "ops", instance: "a", planner: (c) => source.plan(c), ...timings });
  const cb = await SplitCoordinator.join({ store, job: "ops", instance: "b", ...timings });
  const wa = startWorker({ coordinator: ca, source, logger: () => {} });
  const wb = startWorker({ coordinator: cb, source, logger: () => {} });
  try {
    const until = async (what: string, cond: () => boolean, ms = 5000) => {
      const end = Date.now() + ms;
      while (!cond()) {
        if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    await until("both workers hold 2 splits", () => wa.lanes().length === 2 && wb.lanes().length === 2);
    assert.equal((await drainMember(store, "b")).outcome, "draining");
    const outcome = await Promise.race([
      wb.done,
      new Promise<never>((_, rej) => setTimeout(() => rej(new Error("worker b did not finish within 5 s of the drain")), 5000)),
    ]);
    assert.equal(outcome.kind, "drained");
    assert.equal(cb.status().state, "stopped");
    assert.equal(outcome.stats.released, 2, "both lanes released cooperatively");
    assert.equal(await store.get("member.b"), undefined, "b left");
    gate.resolve();
    const done = await Promise.race([
      wa.done,
      new Promise<never>((_, rej) => setTimeout(() => rej(new Error("worker a did not complete the job within 5 s")), 5000)),
    ]);
    assert.equal(done.kind, "drained");
    assert.equal(done.stats.completed, 4, "a completed every split, b's included");
  } finally {
    gate.resolve();
    await withTimeout(Promise.all([wa.shutdown({ deadlineMs: 0 }), wb.shutdown({ deadlineMs: 0 })]), 20_000, "workers a and b to shut down");
  }
});

t("a stalled job whose workers all left runs again after a requeue: the next worker does not exit on the old outcome", async () => {
  await using f = new Fleet();
  const plan = finalPlanner(splits(2));
  const [a] = await f.joinAll([{ instance: "a", planner: plan, maxAttempts: 1 }]);
  assert.ok(await f.until(() => a.held.length === 2, 2000));
  const [poison, good] = a.c.status().held;
  await a.c.fail(poison.id, poison.epoch, "bad input");
  await a.c.commit(good.id, good.epoch, {}, { final: true });
  assert.ok(await f.until(() => a.has("stalled"), 2000));
  await a.c.close(); // its worker exits 3; nobody is left
  const r = await requeueSplit(f.store, poison.id);
  assert.ok(r.outcome === "requeued" && r.reopened, JSON.stringify(r));
  const [b] = await f.joinAll([{ instance: "b", planner: plan, maxAttempts: 1 }]);
  assert.ok(await f.until(() => b.held.includes(poison.id), 3000), "the restarted worker gets the requeued split");
  assert.ok(!b.has("stalled"), "and was not told the job stalled");
  await b.completeAll();
  assert.ok(await f.until(() => b.has("allComplete"), 2000));
});
