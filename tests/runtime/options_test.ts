// Every runtime entry point refuses a typo with the nearest valid name and a
// duration a timer cannot hold, before anything joins or listens.
import assert from "node:assert/strict";
import { SplitleaseError, startWorker, MemoryStore } from "../../mod.ts";
import type { JoinOptions, Coordinator } from "../../mod.ts";
import { type ServeHost, serveWith, type ServeOptions } from "../../host.ts";
import { createSliceHandler } from "../../src/http/slice_handler.ts";
import { runSlice } from "../../src/slice/slice_run.ts";
import { ScriptedCoordinator } from "../helpers/scripted_coordinator.ts";
import { rangeSource } from "./fixtures/app.ts";

const invalid = (...patterns: RegExp[]) => (e: unknown) => {
  assert.ok(e instanceof SplitleaseError, String(e));
  assert.equal(e.code, "INVALID_CONFIG");
  for (const p of patterns) assert.match(e.message, p);
  return true;
};

function fakeHost() {
  const exits: number[] = [];
  let listened = 0;
  const host: ServeHost = {
    runtime: "test",
    listen: () => {
      listened++;
      return Promise.reject(new Error("not in this test"));
    },
    onSignal: () => () => {},
    exit: (code) => exits.push(code),
  };
  return { host, exits, listened: () => listened };
}

Deno.test("serve: unknown options, unholdable durations and unusable drain options fail before the join, exit 1", async () => {
  const source = rangeSource(1, 1, 1);
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ leaseMS: 20_000 }, /^serve: unknown option leaseMS; did you mean leaseMs\?$/],
    [{ drainToken: "t", drainTokn: "t" }, /unknown option drainTokn; did you mean drainToken\?/],
    [{ shutdownMarginMs: 3e9 }, /serve: shutdownMarginMs must be a number of milliseconds from 0 to 2147483647, got 3000000000/],
    [{ abortGraceMs: -1 }, /serve: abortGraceMs .* got -1/],
    [{ drainToken: "not a token!" }, /drainToken must be a bearer token/],
    [{ drainToken: "tok", drainOpen: true }, /drainOpen and drainToken exclude each other/],
  ];
  for (const [extra, pattern] of cases) {
    const { host, exits, listened } = fakeHost();
    let joins = 0;
    const join = (_o: JoinOptions): Promise<Coordinator> => {
      joins++;
      return Promise.resolve(new ScriptedCoordinator());
    };
    const options = { store: new MemoryStore(), source, job: "j", port: 0, logger: () => {}, join, ...extra };
    await assert.rejects(serveWith(options as ServeOptions<unknown>, host), invalid(pattern), JSON.stringify(extra));
    assert.equal(joins, 0, "never joined");
    assert.equal(listened(), 0, "never listened");
    assert.deepEqual(exits, [1], "exit 1");
  }
});

Deno.test("startWorker: an unknown option or an unholdable duration is refused naming it", () => {
  const source = rangeSource(1, 1, 1);
  const coordinator = new ScriptedCoordinator();
  assert.throws(
    () => startWorker({ coordinator, source, ...{ commitIntervalMS: 100 } }),
    invalid(/^startWorker: unknown option commitIntervalMS; did you mean commitIntervalMs\?$/),
  );
  assert.throws(
    () => startWorker({ coordinator, source, abortGraceMs: 3e9 }),
    invalid(/abortGraceMs must be a number of milliseconds from 0 to 2147483647, got 3000000000/),
  );
  assert.throws(() => startWorker({ coordinator, source, statusIntervalMs: NaN }), invalid(/statusIntervalMs .* got NaN/));
});

Deno.test("slices: an unknown option or an unholdable budget is refused before the join", async () => {
  const source = rangeSource(1, 1, 1);
  let joins = 0;
  const join = (_o: JoinOptions): Promise<Coordinator> => {
    joins++;
    return Promise.resolve(new ScriptedCoordinator());
  };
  const base = { store: new MemoryStore(), source, job: "j", join, logger: () => {} };
  await assert.rejects(
    runSlice({ ...base, ...{ budgetMS: 5000 } }),
    invalid(/^runSlice: unknown option budgetMS; did you mean budgetMs\?$/),
  );
  assert.throws(
    () => createSliceHandler({ ...base, budgetMs: 3e9 }),
    invalid(/createSliceHandler: budgetMs must be a number of milliseconds from 0 to 2147483647, got 3000000000/),
  );
  assert.throws(() => createSliceHandler({ ...base, ...{ tokn: "x" } }), invalid(/unknown option tokn; did you mean token\?/));
  assert.equal(joins, 0);
});

Deno.test("serve: the shutdown deadline (drainDeadlineMs + shutdownMarginMs) is capped at the longest timer", async () => {
  const { host } = fakeHost();
  const seen: unknown[] = [];
  const options = {
    store: new MemoryStore(),
    source: rangeSource(1, 1, 1),
    job: "j",
    port: 0,
    logger: (_l: string, msg: string, f?: Record<string, unknown>) => msg === "HTTP server failed to start" && seen.push(f),
    join: () => Promise.resolve(new ScriptedCoordinator() as Coordinator),
    drainDeadlineMs: 2 ** 31 - 1,
    shutdownMarginMs: 5000,
    exit: false,
  };
  // The app is created with the summed deadline before listening: no INVALID_CONFIG from it, the listen error instead.
  await assert.rejects(serveWith(options, host), /not in this test/);
  assert.equal(seen.length, 1);
});
