// A worker whose member an operator drains (its member record, `splitlease
// drain`) finishes as after SIGTERM: its status watch reads the coordinator's
// state after each burst of events (the state alone, not the O(held) status).
import assert from "node:assert/strict";
import { MemoryStore, SplitCoordinator, startWorker, type SplitSource } from "../../mod.ts";
import { drainMember } from "../../admin.ts";
import { jsonLogger } from "../../host.ts";
import { withTimeout } from "../helpers/deadline.ts";

Deno.test("operator drain: a worker whose member is drained through its record hands its splits back and finishes drained", async () => {
  const store = new MemoryStore();
  const lines: { msg: string; reason?: string }[] = [];
  const logger = jsonLogger({ level: "info", write: (line) => lines.push(JSON.parse(line)) });
  let running = 0;
  const source: SplitSource<null> = {
    fingerprint: () => "drained",
    plan: () => Promise.resolve({ finality: "final", splits: ["a", "b", "c"].map((id) => ({ id, descriptor: null })) }),
    async run(lane) {
      running++;
      // Runs until asked to hand the split over: the drain is what ends it.
      await new Promise<void>((resolve) => lane.revokeSignal.addEventListener("abort", () => resolve(), { once: true }));
    },
  };
  const coordinator = await SplitCoordinator.join({
    store,
    job: "drained",
    fingerprint: "drained",
    planner: (c) => source.plan(c),
    leaseMs: 2000,
    opTimeoutMs: 500,
  });
  const worker = startWorker({ coordinator, source, logger });
  try {
    const deadline = Date.now() + 10_000;
    while (running < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.equal(running, 3, "the worker runs all three splits");
    const r = await drainMember(store, coordinator.instance);
    assert.equal(r.outcome, "draining", r.message);
    const outcome = await withTimeout(worker.done, 10_000, "the drained worker to finish");
    assert.equal(outcome.kind, "drained");
    assert.ok(
      lines.some((l) => /an operator drained this member/.test(l.msg) && l.reason === "member drained"),
      `the worker says why it stops: ${lines.map((l) => l.msg).join(" | ")}`,
    );
    for (const id of ["a", "b", "c"]) {
      const rec = JSON.parse((await store.get(`split.${id}`))!.value);
      assert.equal(rec.owner, null, `${id} handed back`);
      assert.equal(rec.attempts, 0, `${id}: nothing charged`);
    }
  } finally {
    await worker.shutdown().catch(() => {});
    await coordinator.close();
    await store.close();
  }
});
