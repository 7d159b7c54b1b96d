// A job's life (issue 41), defined once and run on every backend (memory,
// nats-server, PostgreSQL: lifecycle_test.ts, nats_lifecycle_test.ts,
// tests/postgres/lifecycle_test.ts): permanent failures quarantine at
// once.
import assert from "node:assert/strict";
import { readFleet } from "../../admin.ts";
import { type Backend, finalPlanner, splits } from "./fleet.ts";
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
}
