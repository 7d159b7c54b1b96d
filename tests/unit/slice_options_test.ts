// Slice options are validated when a handler is created: a configuration
// that cannot work fails at once, naming the rule, instead of answering an
// error on every request.
import assert from "node:assert/strict";
import { SplitleaseError, MemoryStore } from "../../mod.ts";
import { checkSliceOptions, type SliceOptions } from "../../src/slice/slice_options.ts";
import { createSliceHandler } from "../../src/http/slice_handler.ts";
import { runSlice } from "../../src/slice/slice_run.ts";
import type { SplitSource } from "../../mod.ts";
import type { Clock } from "../../testing.ts";
import { ScriptedCoordinator } from "../helpers/scripted_coordinator.ts";

const source: SplitSource<null> = {
  fingerprint: () => "f",
  plan: () => Promise.resolve({ splits: [], finality: "final" as const }),
  run: () => Promise.resolve(),
};
const store = new MemoryStore();
const base: SliceOptions<null> = { store, source, job: "j", logger: () => {} };

/** Asserts that `fn` throws INVALID_CONFIG whose message contains every one of `rules`. */
function assertRules(fn: () => unknown, ...rules: (string | RegExp)[]): void {
  assert.throws(fn, (e) => {
    assert.ok(e instanceof SplitleaseError, String(e));
    assert.equal(e.code, "INVALID_CONFIG");
    assert.match(e.message, /^Invalid slice config: /);
    for (const r of rules) {
      if (typeof r === "string") assert.ok(e.message.includes(r), `message names "${r}":\n${e.message}`);
      else assert.match(e.message, r);
    }
    return true;
  });
}

Deno.test("slice options: the defaults are valid (30 s budget, 6 s lease, 4 s drain, 2 s operations: a 25 s window holds two leases)", () => {
  assert.deepEqual(checkSliceOptions(base), {
    budgetMs: 30_000,
    marginMs: 5000,
    drainDeadlineMs: 4000,
    opTimeoutMs: 2000,
    leaseMs: 6000,
    minBudgetMs: 17_000,
  });
  assert.equal(typeof createSliceHandler(base), "function");
});

Deno.test("slice options: a short budget with the default lease and drain fails at creation, naming the rule", () => {
  assertRules(
    () => createSliceHandler({ ...base, budgetMs: 5000 }),
    "budgetMs must be at least marginMs + 2 × leaseMs (5000 + 2 × 6000 = 17000), got 5000",
  );
});

Deno.test("slice options: a work window shorter than two leases fails at creation (one cut-off invocation would stop the job)", () => {
  // The long-running worker's 15 s lease against the 30 s budget's window.
  assertRules(
    () => createSliceHandler({ ...base, leaseMs: 15_000, opTimeoutMs: 5000, drainDeadlineMs: 10_000 }),
    "budgetMs must be at least marginMs + 2 × leaseMs (11000 + 2 × 15000 = 41000), got 30000",
    "must hold two leases",
  );
  assert.equal(checkSliceOptions({ ...base, budgetMs: 41_000, leaseMs: 15_000, opTimeoutMs: 5000, drainDeadlineMs: 10_000 }).minBudgetMs, 41_000);
});

Deno.test("slice options: a drain deadline below the operation timeout fails at creation (it used to answer 500 on every request)", () => {
  assertRules(
    () => createSliceHandler({ ...base, budgetMs: 3000, drainDeadlineMs: 1000, leaseMs: 3000, opTimeoutMs: 1500 }),
    "drainDeadlineMs: must be at least opTimeoutMs (1500), got 1000",
    "budgetMs must be at least marginMs + 2 × leaseMs (2000 + 2 × 3000 = 8000), got 3000",
  );
});

Deno.test("slice options: a short budget works with short timeouts, and its smallest budget is reported", () => {
  const t = checkSliceOptions({ ...base, budgetMs: 4000, opTimeoutMs: 500, drainDeadlineMs: 1000, leaseMs: 1000 });
  assert.deepEqual(t, { budgetMs: 4000, marginMs: 2000, drainDeadlineMs: 1000, opTimeoutMs: 500, leaseMs: 1000, minBudgetMs: 4000 });
});

Deno.test("slice options: every other broken rule is named, all in one error", () => {
  assertRules(
    () =>
      checkSliceOptions({
        source,
        job: "bad job!",
        instancePrefix: "fn/x",
        budgetMs: 60_000,
        marginMs: 900,
        drainDeadlineMs: 1000,
        opTimeoutMs: 800,
        leaseMs: 1000,
      }),
    "marginMs must exceed drainDeadlineMs (1000)",
    "instancePrefix must be 1-100 characters",
    "a slice needs a store or a storeFactory",
    "job: must be 1-128 characters",
    "leaseMs: must be at least 2 × opTimeoutMs (1600), got 1000",
  );
  assertRules(() => checkSliceOptions({ ...base, budgetMs: 0 }), "budgetMs must be a positive integer (ms), got 0");
  assertRules(() => checkSliceOptions({ ...base, budgetMs: 1.5 }), "got 1.5");
});

Deno.test("slice options: runSlice rejects invalid options before it opens a store", async () => {
  let opened = 0;
  await assert.rejects(
    runSlice({ source, job: "j", budgetMs: 4000, storeFactory: () => (opened++, new MemoryStore()) }),
    (e) => e instanceof SplitleaseError && e.code === "INVALID_CONFIG" && /budgetMs must be at least/.test(e.message),
  );
  assert.equal(opened, 0);
});

Deno.test("slice options: a per-request budget below the smallest one is a 400 naming the rule", async () => {
  const handler = createSliceHandler({ ...base, budgetMs: 5000, opTimeoutMs: 500, drainDeadlineMs: 1000, leaseMs: 1000 });
  const res = await handler(new Request("http://x/?budgetMs=3000", { method: "POST" }));
  assert.equal(res.status, 400);
  assert.match((await res.json()).error, /at least marginMs \+ 2 × leaseMs \(4000 ms\).*got 3000/);
});

Deno.test("slice options: a margin equal to the drain deadline is refused (no time left to release and leave)", () => {
  assertRules(
    () => checkSliceOptions({ ...base, budgetMs: 60_000, marginMs: 1000, drainDeadlineMs: 1000, opTimeoutMs: 500, leaseMs: 1000 }),
    "marginMs must exceed drainDeadlineMs (1000) to leave time to release and leave after the drain, got 1000",
  );
  assert.equal(checkSliceOptions({ ...base, budgetMs: 60_000, marginMs: 1001, drainDeadlineMs: 1000, opTimeoutMs: 500, leaseMs: 1000 }).marginMs, 1001);
});

Deno.test("slice options: an invocation works for budgetMs − marginMs; a request may lower the budget, never raise it", async () => {
  /** Runs one request through a handler over a scripted coordinator; answers the work window the slice armed. */
  const windowOf = async (query: string): Promise<number> => {
    const delays: number[] = [];
    const clock: Clock = {
      now: () => 0, // no time passes: the window is the budget's alone
      wallNow: () => Date.now(),
      setTimeout: (fn, ms) => (delays.push(ms), setTimeout(fn, ms)),
      clearTimeout: (h) => clearTimeout(h as number),
    };
    const coordinator = new ScriptedCoordinator("fn-test");
    const handler = createSliceHandler({
      ...base,
      budgetMs: 9000,
      marginMs: 3000,
      opTimeoutMs: 500,
      drainDeadlineMs: 1000,
      leaseMs: 1000,
      clock,
      join: () => {
        setTimeout(() => coordinator.emit({ type: "allComplete" }), 10);
        return Promise.resolve(coordinator);
      },
    });
    const res = await handler(new Request(`http://x/${query}`, { method: "POST" }));
    assert.equal(res.status, 200);
    assert.equal((await res.json()).outcome, "complete");
    const windows = delays.filter((d) => d >= 1000);
    assert.equal(windows.length, 1, `one work timer armed: ${delays}`);
    return windows[0];
  };
  assert.equal(await windowOf(""), 6000, "budgetMs 9000 − marginMs 3000");
  assert.equal(await windowOf("?budgetMs=7000"), 4000, "a lower budget per request");
  assert.equal(await windowOf("?budgetMs=60000"), 6000, "a higher budget per request is capped at the configured one");
});
