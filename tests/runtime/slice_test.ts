import assert from "node:assert/strict";
import type { Clock } from "../../src/coordinator/types.ts";
import { systemClock } from "../../src/coordinator/clock.ts";
import { createSliceHandler, runSlice, type SliceResult } from "../../src/runtime/slice.ts";
import { NatsStore } from "../../src/nats/nats_store.ts";
import { withTimeout } from "../helpers/deadline.ts";
import { NatsServer } from "../helpers/nats_server.ts";
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

/** Records every processed record per split, in order: replay and loss show as a sequence other than 1..N. */
function recorder() {
  const seen = new Map<string, number[]>();
  return {
    seen,
    onRecord: (id: string, n: number) => seen.set(id, [...(seen.get(id) ?? []), n]),
    /** Every split's records exactly once, in order. */
    assertExactlyOnce(splits: number, records: number) {
      assert.deepEqual([...seen.keys()].sort(), Array.from({ length: splits }, (_, i) => `r${i}`).sort());
      for (const [id, marks] of seen) {
        assert.deepEqual(marks, Array.from({ length: records }, (_, i) => i + 1), `split ${id}: no replay, no gap`);
      }
    },
  };
}

Deno.test("serverless: successive short slices complete a job with no loss and no replay, leaving no timers", async () => {
  const store = new MemoryStore();
  const rec = recorder();
  const source = rangeSource(3, 60, 10, rec);
  const clock = new TrackingClock();
  const results = [];
  for (let i = 0; i < 8; i++) {
    const r = await withTimeout(
      runSlice({ store, source, job: "sl", budgetMs: 1200, clock, logger: () => {}, ...tunables }),
      20_000,
      `slice ${i} (a 1.2 s budget) to return`,
    );
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
  rec.assertExactlyOnce(3, 60);
  for (const r of results) assert.deepEqual(r.lost, {});
  assert.deepEqual((await store.list("member.")).length, 0, "every slice left");
  await store.close();
});

/**
 * Keeps `concurrency` invocations in flight (a new one starts as soon as one
 * returns) until the job is complete; returns every invocation's result.
 */
async function invokeUntilComplete(
  concurrency: number,
  invoke: () => Promise<SliceResult>,
  maxInvocations = 40,
): Promise<SliceResult[]> {
  const results: SliceResult[] = [];
  let started = 0;
  let complete = false;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (!complete && started < maxInvocations) {
      started++;
      const r = await withTimeout(invoke(), 20_000, `invocation ${started} (a slice of at most 1.5 s) to return`);
      results.push(r);
      assert.notEqual(r.outcome, "error", r.error);
      if (r.outcome === "complete") complete = true;
    }
  }));
  assert.ok(complete, `complete within ${maxInvocations} invocations`);
  return results;
}

function checkInvocations(results: SliceResult[], splits: number, records: number): void {
  const sum = (f: (r: SliceResult) => number) => results.reduce((n, r) => n + f(r), 0);
  assert.equal(sum((r) => r.recordsCommitted), splits * records, "records committed exactly once in total");
  assert.equal(sum((r) => r.completed), splits);
  assert.ok(sum((r) => r.released) > 0, "splits were handed from invocation to invocation");
  for (const r of results) {
    assert.deepEqual(r.lost, {}, `${r.instance}: no lane lost`);
    assert.equal(r.forced, false, `${r.instance}: every drain was cooperative`);
  }
}

Deno.test("serverless: invocations 3 at a time (1.5 s budgets) on one MemoryStore complete a job with no loss and no replay", async () => {
  const store = new MemoryStore();
  const rec = recorder();
  const source = rangeSource(6, 100, 10, rec);
  const results = await invokeUntilComplete(
    3,
    () => runSlice({ store, source, job: "concurrent", budgetMs: 1500, maxInFlight: 2, logger: () => {}, ...tunables }),
  );
  assert.ok(results.length >= 6, `needed several rounds (${results.length} invocations)`);
  checkInvocations(results, 6, 100);
  rec.assertExactlyOnce(6, 100);
  assert.equal((await store.list("member.")).length, 0, "every invocation left");
  await store.close();
});

Deno.test({
  name:
    "serverless: on nats-server (a connection per invocation), sequential then 3-at-a-time invocations: no loss, no replay",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using server = await NatsServer.start();
    for (const concurrency of [1, 3]) {
      const job = `fn-${concurrency}`;
      const rec = recorder();
      const source = rangeSource(4, 60, 10, rec);
      // The bucket exists before the first invocation (as after a deploy).
      await (await NatsStore.connect({ servers: server.wsUrl, job })).close();
      const results = await invokeUntilComplete(concurrency, () =>
        runSlice({
          storeFactory: () => NatsStore.connect({ servers: server.wsUrl, job, opTimeoutMs: 500 }),
          source,
          job,
          budgetMs: concurrency === 1 ? 1200 : 1500,
          maxInFlight: 2,
          logger: () => {},
          ...tunables,
          opTimeoutMs: 500,
        }));
      assert.ok(results.length >= 2, `${job}: needed more than one invocation`);
      checkInvocations(results, 4, 60);
      rec.assertExactlyOnce(4, 60);
      const store = await NatsStore.connect({ servers: server.wsUrl, job });
      try {
        assert.equal((await store.list("member.")).length, 0, "every invocation left");
      } finally {
        await store.close();
      }
    }
  },
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
  res = await withTimeout(handler(new Request("http://x/", { method: "POST", headers: auth })), 20_000, "the handler's slice (a 3 s budget) to answer");
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.outcome, "complete");
  assert.equal(body.completed, 2);
  assert.equal(body.recordsCommitted, 10);
  for (const k of ["gained", "released", "instance", "durationMs"]) assert.ok(k in body, k);
  await store.close();
});
