// Permanent failures from a source (issue 41, item 2): a run that throws a
// PermanentFailure, one that throws any error carrying `permanent: true`,
// lane.fail(error) with one and lane.fail(text, { permanent: true }) each
// quarantine their split after that one run, however high maxAttempts is,
// with the reason (and the stack of an error) kept and marked permanent;
// an ordinary failure next to them is retried up to maxAttempts.
import assert from "node:assert/strict";
import { MemoryStore, PermanentFailure, SplitCoordinator, startWorker, type SplitSource } from "../../mod.ts";
import { readFleet, type SplitRecord } from "../../admin.ts";
import { jsonLogger } from "../../host.ts";
import { withTimeout } from "../helpers/deadline.ts";

Deno.test("permanent failures: thrown, duck-typed, passed to lane.fail or flagged quarantine after one run; an ordinary failure is retried", async () => {
  const store = new MemoryStore();
  const runs = new Map<string, number>();
  const lines: { msg: string; permanent?: boolean }[] = [];
  const logger = jsonLogger({ level: "debug", write: (line) => lines.push(JSON.parse(line)) });
  const ids = ["thrown", "duck", "failError", "failText", "flaky"];
  const source: SplitSource<null> = {
    fingerprint: () => "permanent",
    plan: () => Promise.resolve({ finality: "final", splits: ids.map((id) => ({ id, descriptor: null })) }),
    async run(lane) {
      runs.set(lane.splitId, (runs.get(lane.splitId) ?? 0) + 1);
      if (lane.splitId === "thrown") throw new PermanentFailure("GET /a: 404");
      if (lane.splitId === "duck") throw Object.assign(new TypeError("column id is text"), { permanent: true });
      if (lane.splitId === "failError") return lane.fail(new PermanentFailure("schema v3 expected"));
      if (lane.splitId === "failText") return lane.fail("row 7: malformed", { permanent: true });
      await lane.fail("ECONNRESET");
    },
  };
  const coordinator = await SplitCoordinator.join({
    store, job: "permanent", fingerprint: "permanent", planner: (c) => source.plan(c), maxAttempts: 3, retryBackoffMs: 5, retryBackoffMaxMs: 20,
  });
  const worker = startWorker({ coordinator, source, logger });
  try {
    assert.equal((await withTimeout(worker.done, 20_000, "the job to stall")).kind, "stalled");
  } finally {
    await worker.shutdown().catch(() => {});
    await coordinator.close();
  }
  const rec = async (id: string) => JSON.parse((await store.get(`split.${id}`))!.value) as SplitRecord;
  for (const id of ["thrown", "duck", "failError", "failText"]) {
    const r = await rec(id);
    assert.deepEqual([r.status, r.attempts, runs.get(id), r.failures?.length, r.failures?.[0].permanent], ["quarantined", 1, 1, 1, true], id);
  }
  assert.equal((await rec("thrown")).failures![0].message, "run threw: PermanentFailure: GET /a: 404");
  assert.match((await rec("thrown")).failures![0].stack!, /permanent_failure_test\.ts/);
  assert.equal((await rec("failText")).failures![0].stack, undefined);
  const flaky = await rec("flaky");
  assert.deepEqual([flaky.status, flaky.attempts, runs.get("flaky")], ["quarantined", 3, 3], "an ordinary failure spends every attempt");
  assert.ok(flaky.failures!.every((f) => f.permanent === undefined));
  const view = await readFleet(store, { state: "quarantined" });
  assert.deepEqual(view.splits.filter((s) => s.permanent).map((s) => s.id).sort(), ["duck", "failError", "failText", "thrown"]);
  assert.ok(lines.filter((l) => l.msg === "run failed" && l.permanent).length === 2, "the log lines say permanent");
  await store.close();
});
