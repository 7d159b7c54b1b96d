import assert from "node:assert/strict";
import type { Clock } from "../../testing.ts";
import { systemClock } from "../../testing.ts";
import { checkSliceOptions } from "../../src/slice/slice_options.ts";
import { createSliceHandler } from "../../src/http/slice_handler.ts";
import { runSlice, type SliceResult } from "../../src/slice/slice_run.ts";
import { type JoinOptions, SplitCoordinator, MemoryStore } from "../../mod.ts";
import { NatsStore } from "../../nats.ts";
import { withTimeout } from "../helpers/deadline.ts";
import { NatsServer } from "../helpers/nats_server.ts";
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

// The shortest lease there is: the smallest budget is marginMs + 2 × leaseMs = 1.7 s.
/** Polls `ok` every 20 ms until it holds, failing with `what` after `ms`. */
async function waitFor(ok: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`Timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const tunables = { leaseMs: 500, opTimeoutMs: 250, drainDeadlineMs: 500, marginMs: 700 };
/** A 1.1 s work window. */
const BUDGET = 1800;

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
  const source = rangeSource(3, 150, 10, rec);
  const clock = new TrackingClock();
  const results = [];
  for (let i = 0; i < 8; i++) {
    const r = await withTimeout(
      runSlice({ store, source, job: "sl", budgetMs: BUDGET, clock, logger: () => {}, ...tunables }),
      20_000,
      `slice ${i} (a 1.8 s budget) to return`,
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
  assert.equal(records, 450, "every record committed exactly once across slices");
  rec.assertExactlyOnce(3, 150);
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
      const r = await withTimeout(invoke(), 20_000, `invocation ${started} (a slice of at most ${BUDGET} ms) to return`);
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

Deno.test("serverless: invocations 3 at a time (1.8 s budgets) on one MemoryStore complete a job with no loss and no replay", async () => {
  const store = new MemoryStore();
  const rec = recorder();
  const source = rangeSource(6, 200, 10, rec);
  const results = await invokeUntilComplete(
    3,
    () => runSlice({ store, source, job: "concurrent", budgetMs: BUDGET, maxInFlight: 2, logger: () => {}, ...tunables }),
  );
  assert.ok(results.length >= 6, `needed several rounds (${results.length} invocations)`);
  checkInvocations(results, 6, 200);
  rec.assertExactlyOnce(6, 200);
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
      const source = rangeSource(4, 250, 10, rec);
      // The bucket exists before the first invocation (as after a deploy).
      await (await NatsStore.connect({ servers: server.wsUrl, job })).close();
      const results = await invokeUntilComplete(concurrency, () =>
        runSlice({
          storeFactory: () => NatsStore.connect({ servers: server.wsUrl, job, opTimeoutMs: 500 }),
          source,
          job,
          // A 500 ms op timeout (a cold connection's first reads) needs a 1 s lease: 2.1 s windows.
          budgetMs: 2800,
          maxInFlight: 2,
          logger: () => {},
          ...tunables,
          opTimeoutMs: 500,
          leaseMs: 1000,
        }));
      assert.ok(results.length >= 2, `${job}: needed more than one invocation`);
      checkInvocations(results, 4, 250);
      rec.assertExactlyOnce(4, 250);
      const store = await NatsStore.connect({ servers: server.wsUrl, job });
      try {
        assert.equal((await store.list("member.")).length, 0, "every invocation left");
      } finally {
        await store.close();
      }
    }
  },
});

Deno.test("serverless: after a leading and a following invocation are cut off, invocations with the smallest window (two leases) finish the job", async () => {
  const store = new MemoryStore();
  const seen = new Map<string, Set<number>>();
  const source = rangeSource(4, 120, 10, { onRecord: (id, n) => seen.set(id, (seen.get(id) ?? new Set()).add(n)) });
  const options = { store, source, job: "cut", maxInFlight: 2, logger: () => {}, ...tunables };
  const { minBudgetMs } = checkSliceOptions(options);
  assert.equal(minBudgetMs, tunables.marginMs + 2 * tunables.leaseMs);
  // Two invocations with long budgets share the job, then both are cut off
  // (no drain, no release, no leave): the leader's record and both members'
  // records and splits stay behind, as after a platform kill.
  const cut: SplitCoordinator[] = [];
  const join = async (o: JoinOptions) => {
    const c = await SplitCoordinator.join(o);
    cut.push(c);
    return c;
  };
  const doomed = [runSlice({ ...options, budgetMs: 60_000, join }), runSlice({ ...options, budgetMs: 60_000, join })];
  await waitFor(() => cut.length === 2 && [...seen.values()].filter((s) => s.size >= 5).length === 4, 10_000, "both invocations running 2 splits each");
  for (const c of cut) await c.abandon();
  await withTimeout(Promise.allSettled(doomed), 10_000, "the cut-off invocations to return");
  assert.ok((await store.list("member.")).length === 2 && (await store.get("leader")) !== undefined, "records left behind");
  const results: SliceResult[] = [];
  for (let i = 0; i < 12 && results.at(-1)?.outcome !== "complete"; i++) {
    results.push(await withTimeout(runSlice({ ...options, budgetMs: minBudgetMs }), 20_000, `recovery invocation ${i}`));
    assert.notEqual(results.at(-1)!.outcome, "error", results.at(-1)!.error);
  }
  assert.equal(results.at(-1)!.outcome, "complete", `complete within 12 invocations: ${results.map((r) => r.outcome)}`);
  for (const [id, marks] of seen) {
    assert.deepEqual([...marks].sort((a, b) => a - b), Array.from({ length: 120 }, (_, i) => i + 1), `split ${id}: no gap`);
  }
  assert.equal(seen.size, 4);
  assert.ok(results.reduce((n, r) => n + r.gained, 0) >= 4, "the cut-off invocations' splits were taken over");
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
  res = await withTimeout(handler(new Request("http://x/", { method: "POST", headers: auth })), 20_000, "the handler's slice (a 3 s budget) to answer");
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.outcome, "complete");
  assert.equal(body.completed, 2);
  assert.equal(body.recordsCommitted, 10);
  for (const k of ["gained", "released", "instance", "durationMs"]) assert.ok(k in body, k);
  await store.close();
});
