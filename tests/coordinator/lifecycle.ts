// A job's life (issue 41), defined once and run on every backend (memory,
// nats-server, PostgreSQL: lifecycle_test.ts, nats_lifecycle_test.ts,
// tests/postgres/lifecycle_test.ts): permanent failures quarantine at
// once; outcomes name what they skipped, and wait exits by them.
import assert from "node:assert/strict";
import { cancelSplit, readFleet, waitForOutcome } from "../../admin.ts";
import { exitCodeForWait } from "../../host.ts";
import { type Backend, finalPlanner, rawStore, splits } from "./fleet.ts";
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
}
