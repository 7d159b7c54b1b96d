import assert from "node:assert/strict";
import type { Clock } from "../../src/coordinator/types.ts";
import { systemClock } from "../../src/coordinator/clock.ts";
import { createSliceHandler, runSlice } from "../../src/runtime/slice.ts";
import { MemoryStore } from "../../src/store/memory_store.ts";
import { rangeSource } from "./fixtures/app.ts";

/** Delegates to the system clock and counts timers still pending. */
class TrackingClock implements Clock {
  live = new Set<unknown>();
  now = () => systemClock.now();
  wallNow = () => systemClock.wallNow();
  setTimeout(fn: () => void, ms: number): unknown {
    const box: { h?: unknown } = {};
    box.h = systemClock.setTimeout(() => {
      this.live.delete(box.h);
      fn();
    }, ms);
    this.live.add(box.h);
    return box.h;
  }
  clearTimeout(handle: unknown): void {
    this.live.delete(handle);
    systemClock.clearTimeout(handle);
  }
}

const tunables = { leaseMs: 1000, opTimeoutMs: 250, drainDeadlineMs: 500, marginMs: 700 };

Deno.test("serverless: successive short slices complete a job with no loss and no replay, leaving no timers", async () => {
  const store = new MemoryStore();
  const seen = new Map<string, number[]>();
  const base = rangeSource(3, 60, 10);
  const source = {
    ...base,
    run: (lane: Parameters<typeof base.run>[0]) => {
      const commit = lane.commit.bind(lane);
      const wrapped = Object.create(lane);
      wrapped.commit = async (p: { watermark?: number | string }, o?: { records?: number }) => {
        const list = seen.get(lane.splitId) ?? [];
        list.push(Number(p.watermark));
        seen.set(lane.splitId, list);
        await commit(p, o);
      };
      return base.run(wrapped);
    },
  };
  const clock = new TrackingClock();
  const results = [];
  for (let i = 0; i < 8; i++) {
    const r = await runSlice({ store, source, job: "sl", budgetMs: 1200, clock, logger: () => {}, ...tunables });
    assert.equal(clock.live.size, 0, `no timers left after slice ${i}`);
    results.push(r);
    if (r.outcome === "complete") break;
  }
  assert.equal(results.at(-1)!.outcome, "complete");
  assert.ok(results.length >= 2, "the job needed more than one slice");
  assert.equal(results[0].outcome, "budget");
  assert.ok(results[0].released > 0 && results[0].completed === 0);
  const records = results.reduce((s, r) => s + r.recordsCommitted, 0);
  assert.equal(records, 180, "every record committed exactly once across slices");
  for (const [id, marks] of seen) {
    assert.deepEqual(marks, Array.from({ length: 60 }, (_, i) => i + 1), `split ${id}: no replay, no gap`);
  }
  for (const r of results) assert.deepEqual(r.lost, {});
  assert.deepEqual((await store.list("member.")).length, 0, "every slice left");
  await store.close();
});

Deno.test("serverless: the fetch handler answers JSON, validates budget, method and token", async () => {
  const store = new MemoryStore();
  const handler = createSliceHandler({
    store,
    source: rangeSource(2, 5, 5),
    job: "h",
    budgetMs: 3000,
    token: "t0k",
    logger: () => {},
    ...tunables,
  });
  const auth = { authorization: "Bearer t0k" };
  assert.equal((await handler(new Request("http://x/", { method: "POST" }))).status, 401);
  assert.equal((await handler(new Request("http://x/", { method: "PUT", headers: auth }))).status, 405);
  let res = await handler(new Request("http://x/?budgetMs=abc", { method: "POST", headers: auth }));
  assert.equal(res.status, 400);
  res = await handler(
    new Request("http://x/", { method: "POST", headers: { ...auth, "x-splitlease-budget-ms": "100" } }),
  );
  assert.equal(res.status, 400, "budget below the margin");
  res = await handler(new Request("http://x/", { method: "POST", headers: auth }));
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.outcome, "complete");
  assert.equal(body.completed, 2);
  assert.equal(body.recordsCommitted, 10);
  for (const k of ["gained", "released", "instance", "durationMs"]) assert.ok(k in body, k);
  await store.close();
});
