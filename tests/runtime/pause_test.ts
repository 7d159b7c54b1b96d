// Pausing a job under real workers (issue 41, item 3): what a lane does
// and how fast. A cooperating source (it watches lane.revokeSignal) commits
// its tail and returns within one commit of the pause; the worker releases
// the split to nobody, no attempt charged, and goes on heartbeating with
// idle lanes; a source that ignores the revocation is released at
// drainDeadlineMs (its uncommitted tail replays on resume). Resumed, the
// splits continue from their last commit and the job completes.
import assert from "node:assert/strict";
import { MemoryStore, SplitCoordinator, startWorker, type SplitSource } from "../../mod.ts";
import { pauseJob, readFleet, resumeJob, type SplitRecord } from "../../admin.ts";
import { withTimeout } from "../helpers/deadline.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  for (const end = Date.now() + ms; !(await cond());) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

Deno.test("pause: cooperating lanes hand back within a commit, nothing charged, the worker stays; resumed, the job completes from the last commits", async () => {
  const store = new MemoryStore();
  let steps = 40; // commits per split before it completes (lowered once resumed)
  const source: SplitSource<null> = {
    fingerprint: () => "pause",
    plan: () => Promise.resolve({ finality: "final", splits: ["a", "b", "c", "d"].map((id) => ({ id, descriptor: null })) }),
    async run(lane) {
      let at = (lane.progress?.watermark as number | undefined) ?? 0;
      while (at < steps) {
        if (lane.revokeSignal.aborted) return; // committed below: the driver releases, zero replay
        await sleep(10);
        await lane.commit({ watermark: ++at });
      }
      await lane.complete({ watermark: at });
    },
  };
  const coordinator = await SplitCoordinator.join({
    store, job: "pause", fingerprint: "pause", planner: (c) => source.plan(c), maxInFlight: 4, leaseMs: 3000, opTimeoutMs: 400, drainDeadlineMs: 2000,
  });
  const worker = startWorker({ coordinator, source, logger: () => {} });
  try {
    await until("four lanes running", () => worker.lanes().filter((l) => l.state === "running").length === 4);
    await sleep(50);
    const t0 = Date.now();
    assert.equal((await pauseJob(store, { reason: "test" })).outcome, "paused");
    await until("every lane handed back", () => worker.lanes().length === 0 && coordinator.status().held.length === 0);
    const handBackMs = Date.now() - t0;
    // One plan-watch delivery, at most one 10 ms commit step, one release write (measured, not asserted: a timing, not a rule).
    console.log(`  4 cooperating lanes handed back ${handBackMs} ms after the pause landed`);
    const before = new Map<string, number>();
    for (const id of ["a", "b", "c", "d"]) {
      const r = JSON.parse((await store.get(`split.${id}`))!.value) as SplitRecord;
      assert.deepEqual([r.status, r.owner, r.attempts], ["runnable", null, 0], id);
      assert.ok(typeof r.progress?.watermark === "number" && r.progress.watermark > 0, `${id} keeps its progress`);
      before.set(id, r.progress!.watermark as number);
    }
    await sleep(300);
    assert.deepEqual(worker.lanes(), [], "nothing runs while paused");
    assert.equal(coordinator.status().state, "running", "the worker stays in the job");
    assert.equal(coordinator.status().paused, true);
    assert.equal(worker.stats().revocations.drained, 4, "each lane revoked cooperatively (its source returned)");
    steps = 45;
    assert.equal((await resumeJob(store)).outcome, "resumed");
    const outcome = await withTimeout(worker.done, 20_000, "the job to complete after the resume");
    assert.deepEqual([outcome.kind, outcome.kind === "drained" && outcome.reason], ["drained", "complete"]);
    const view = await readFleet(store, { limit: 10 });
    assert.equal(view.counts.completed, 4);
    for (const s of view.splits) {
      assert.equal(s.attempts, 0, `${s.id}: nothing charged`);
      assert.ok(s.tenancies.some((t) => t.end === "released"), `${s.id} was released once`);
    }
  } finally {
    await worker.shutdown().catch(() => {});
    await store.close();
  }
});

Deno.test("pause: a lane that ignores the revocation is released at drainDeadlineMs, no attempt charged", async () => {
  const store = new MemoryStore();
  const source: SplitSource<null> = {
    fingerprint: () => "deaf",
    plan: () => Promise.resolve({ finality: "final", splits: [{ id: "x", descriptor: null }] }),
    async run(lane) {
      await lane.commit({ watermark: 1 });
      await new Promise((r) => lane.signal.addEventListener("abort", r)); // never looks at revokeSignal
    },
  };
  const coordinator = await SplitCoordinator.join({
    store, job: "deaf", fingerprint: "deaf", planner: (c) => source.plan(c), leaseMs: 3000, opTimeoutMs: 400, drainDeadlineMs: 400,
  });
  const worker = startWorker({ coordinator, source, logger: () => {}, abortGraceMs: 100 });
  try {
    // A commit lands in the split's progress record (docs/DESIGN.md, "Progress apart from ownership").
    await until("the lane runs", async () => JSON.parse((await store.get("prog.x"))?.value ?? "{}").progress?.watermark === 1);
    const t0 = Date.now();
    assert.equal((await pauseJob(store)).outcome, "paused");
    await until("the split released", async () => JSON.parse((await store.get("split.x"))!.value).owner === null);
    const ms = Date.now() - t0;
    assert.ok(ms >= 400, `forced at the drain deadline, not before: ${ms} ms`);
    const r = JSON.parse((await store.get("split.x"))!.value) as SplitRecord;
    assert.deepEqual([r.status, r.attempts, r.progress?.watermark], ["runnable", 0, 1]);
  } finally {
    await worker.shutdown({ deadlineMs: 0 }).catch(() => {});
    await store.close();
  }
});
