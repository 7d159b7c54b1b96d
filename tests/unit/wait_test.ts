// Waiting for a job's outcome (issue 41, item 1): waitForOutcome over a
// MemoryStore whose plan record an outcome is written into — each outcome
// and its exit code, a job deleted while waited for, a store that stops
// answering, a timeout, an abort — and what `splitlease wait` prints: the
// bar redrawn on one terminal line, plain lines elsewhere, the end line.
// The process tests (tests/ops/lifecycle_cli_test.ts, tests/postgres/
// lifecycle_cli_test.ts) run the command itself against live fleets.
import assert from "node:assert/strict";
import { jobResultOf, readFleet, waitForOutcome, type WaitResult } from "../../admin.ts";
import { exitCodeForResult, exitCodeForWait } from "../../host.ts";
import { MemoryStore } from "../../mod.ts";
import { encodeRecord, type JobOutcome, type PlanRecord } from "../../src/records.ts";
import { keys } from "../../src/store/keys.ts";
import type { Store } from "../../src/store/store.ts";
import { StoreUnavailableError } from "../../src/errors.ts";
import { barLine, endLine, plainLine, WaitDisplay } from "../../src/cli/wait_display.ts";
import { parseArgs, parseDuration, UsageError } from "../../src/cli/args.ts";

const plan = (outcome?: JobOutcome, over: Partial<PlanRecord> = {}): string =>
  encodeRecord({ v: 2, term: 1, finality: "final", generation: 1, planned: 3, ...(outcome ? { outcome } : {}), ...over });

async function jobWith(store: Store, outcome?: JobOutcome): Promise<number> {
  await store.create(keys.job, encodeRecord({ v: 2, fingerprint: "f", createdAt: 0 }));
  const r = await store.create(keys.plan, plan(outcome));
  assert.ok(r.ok);
  return r.revision;
}

Deno.test("wait: each outcome ends the wait with its exit code (0, 5 with cancelled splits, 3, 4)", async () => {
  const cases: [JobOutcome, number, string][] = [
    [{ kind: "allComplete", completed: 3 }, 0, "complete"],
    [{ kind: "allComplete", completed: 2, cancelled: 1 }, 5, "complete"],
    [{ kind: "stalled", completed: 2, quarantined: 1 }, 3, "stalled"],
    [{ kind: "planFailed", error: "boom", attempts: 5, term: 1 }, 4, "planFailed"],
  ];
  for (const [outcome, code, state] of cases) {
    await using store = new MemoryStore();
    const rev = await jobWith(store);
    const waiting = waitForOutcome(store, { pollMs: 5 });
    await new Promise((r) => setTimeout(r, 20));
    assert.ok((await store.update(keys.plan, plan(outcome), rev)).ok);
    const w = await waiting;
    assert.equal(w.kind, "outcome");
    assert.deepEqual(w.kind === "outcome" && w.outcome, outcome);
    assert.equal(w.result?.state, state);
    assert.equal(exitCodeForWait(w), code, JSON.stringify(outcome));
    assert.equal(exitCodeForResult(w.result!), code);
  }
  assert.equal(exitCodeForResult(jobResultOf(JSON.parse(plan()))), null, "no outcome: no exit code yet");
  assert.equal(jobResultOf(JSON.parse(plan(undefined, { generation: 0 }))).state, "planning");
  assert.equal(jobResultOf(undefined).state, "new");
});

Deno.test("wait: a job not created yet is waited for; one seen and then deleted ends the wait (exit 6)", async () => {
  await using store = new MemoryStore();
  const waiting = waitForOutcome(store, { pollMs: 5 });
  let settled = false;
  void waiting.then(() => (settled = true));
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(settled, false, "no records yet: waiting");
  await jobWith(store);
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(settled, false);
  await store.delete(keys.job);
  await store.delete(keys.plan);
  const w = await waiting;
  assert.equal(w.kind, "deleted");
  assert.equal(w.result?.state, "running", "its standing as last read");
  assert.equal(exitCodeForWait(w), 6);
});

/** A store whose every read fails while `down` says so (an outage, or a deleted NATS bucket). */
function flaky(inner: Store, down: () => boolean): Store {
  return new Proxy(inner, {
    get(target, prop, recv) {
      const v = Reflect.get(target, prop, recv);
      if (prop !== "get" && prop !== "list") return typeof v === "function" ? v.bind(target) : v;
      return (...args: unknown[]) => (down() ? Promise.reject(new StoreUnavailableError(String(prop), 100)) : v.apply(target, args));
    },
  });
}

Deno.test("wait: a store that fails every read is waited out, then the wait ends unreachable (exit 7)", async () => {
  await using mem = new MemoryStore();
  const rev = await jobWith(mem);
  let down = true;
  const store = flaky(mem, () => down);
  // Back within the limit: the outcome is seen.
  const waiting = waitForOutcome(store, { pollMs: 5, unreachableMs: 2000 });
  await new Promise((r) => setTimeout(r, 50));
  await mem.update(keys.plan, plan({ kind: "allComplete", completed: 3 }), rev);
  down = false;
  assert.equal((await waiting).kind, "outcome");
  // Down for longer than the limit.
  down = true;
  const t0 = Date.now();
  const w = await waitForOutcome(store, { pollMs: 5, unreachableMs: 100 });
  assert.equal(w.kind, "unreachable");
  assert.ok(Date.now() - t0 >= 100, "not before the limit");
  assert.match(w.kind === "unreachable" ? w.error : "", /store is unavailable/);
  assert.equal(exitCodeForWait(w), 7);
});

Deno.test("wait: reads that fail on a job its catalog no longer lists end the wait as deleted", async () => {
  await using mem = new MemoryStore();
  await jobWith(mem);
  let gone = false;
  const store = flaky(mem, () => gone);
  const waiting = waitForOutcome(store, { pollMs: 5, unreachableMs: 60_000, exists: () => Promise.resolve(!gone) });
  await new Promise((r) => setTimeout(r, 20));
  gone = true;
  assert.equal((await waiting).kind, "deleted");
  // A catalog that fails too is an outage, not a deletion.
  const w = await waitForOutcome(store, { pollMs: 5, unreachableMs: 50, exists: () => Promise.reject(new Error("down")) });
  assert.equal(w.kind, "unreachable");
});

Deno.test("wait: a timeout ends the wait (exit 8), an abort rejects with its reason, progress comes with fleet views", async () => {
  await using store = new MemoryStore();
  await jobWith(store);
  const views: number[] = [];
  const w = await waitForOutcome(store, { pollMs: 5, timeoutMs: 60, progressMs: 10, onProgress: (v) => views.push(v.at) });
  assert.equal(w.kind, "timeout");
  assert.equal(exitCodeForWait(w), 8);
  assert.ok(views.length >= 2, `views every progressMs (${views.length})`);
  const stop = new AbortController();
  const aborted = waitForOutcome(store, { pollMs: 1000, signal: stop.signal });
  stop.abort(new Error("interrupted"));
  await assert.rejects(aborted, /interrupted/);
  await assert.rejects(waitForOutcome(store, { pollMs: 0 }), /pollMs must be a number of ms above 0/);
});

Deno.test("wait: a store bound to another job is refused", async () => {
  const store = { ...new MemoryStore(), job: "other" } as unknown as Store;
  await assert.rejects(waitForOutcome(store, { job: "mine" }), /job "mine" but the store is bound to job "other"/);
});

Deno.test("wait display: one terminal line redrawn in place, never wider than the terminal; plain lines in a log; the end line", async () => {
  await using store = new MemoryStore();
  await jobWith(store);
  const split = (id: string, status: string, weight: number) =>
    store.create(keys.split(id), encodeRecord({ v: 2, epoch: 1, status, owner: null, attempts: 0, weight, progress: null, records: 10 } as never));
  await split("a", "completed", 3);
  await split("b", "runnable", 1);
  await split("c", "quarantined", 1);
  const view = await readFleet(store, { limit: 1 });
  const line = barLine(view, 200);
  assert.match(line, /^\[█{14}░{10}\]  60% · 1\/3 splits · 30 records · ETA unknown · /);
  assert.match(line, /1 quarantined, then stalled/);
  assert.ok(barLine(view, 40).length <= 39 && barLine(view, 40).endsWith("…"), "cut to the width");
  assert.match(plainLine("j", view), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ j: 60% · 1\/3 splits · 30 records/);

  const tty: string[] = [];
  const d = new WaitDisplay("j", { tty: true, columns: 100, write: (t) => tty.push(t) });
  d.show(view);
  d.show(view);
  d.end("j: done (exit 0)");
  assert.ok(tty.slice(0, 2).every((t) => t.startsWith("\r[") && t.endsWith("\x1b[K") && !t.includes("\n")), JSON.stringify(tty));
  assert.deepEqual(tty.slice(2), ["\n", "j: done (exit 0)\n"]);
  const log: string[] = [];
  const p = new WaitDisplay("j", { tty: false, write: (t) => log.push(t) });
  p.show(view);
  p.end("j: done (exit 0)");
  assert.equal(log.length, 2);
  assert.ok(log[0].endsWith("\n") && !log[0].includes("\r"));

  const end = (w: WaitResult) => endLine("j", w, undefined, exitCodeForWait(w));
  const result = jobResultOf(undefined);
  assert.equal(end({ kind: "outcome", outcome: { kind: "allComplete", completed: 19, cancelled: 1 }, result: { ...result, state: "complete", skipped: { cancelled: 1, quarantined: 0, permanent: 0 } } }), "j: complete: 19 split(s) completed, 1 cancelled (skipped) (exit 5)");
  assert.match(end({ kind: "outcome", outcome: { kind: "stalled", completed: 2, quarantined: 1 }, result: { ...result, state: "stalled" } }), /^j: stalled: 2 split\(s\) completed, 1 quarantined; see them with splitlease splits --state quarantined \(exit 3\)$/);
  assert.equal(end({ kind: "timeout", result: null }), "j: no outcome within the timeout; the job runs on (exit 8)");
  assert.equal(end({ kind: "deleted", result: null }), "j: the job was deleted while waiting (exit 6)");
});

Deno.test("cli args: wait takes the job as its argument, durations with units, and its own flags only", () => {
  const env = { NATS_URL: "ws://127.0.0.1:1" };
  const w = parseArgs(["wait", "backfill", "--timeout", "10m", "--interval", "30s"], env);
  assert.deepEqual(w.command, { name: "wait", timeoutMs: 600_000, unreachableMs: 60_000, intervalMs: 30_000 });
  assert.equal(w.options.job, "backfill");
  assert.equal(parseArgs(["wait"], { ...env, JOB: "j" }).options.job, "j");
  assert.equal(parseArgs(["wait", "-j", "j", "--unreachable", "5"], env).command.name, "wait");
  assert.deepEqual([parseDuration("x", "90"), parseDuration("x", "1.5s"), parseDuration("x", "2h"), parseDuration("x", "250ms")], [90_000, 1500, 7_200_000, 250]);
  for (const [argv, message] of [
    [["wait", "a", "--job", "b"], /two jobs: "a" and --job "b"; give one/],
    [["wait", "j", "--timeout", "soon"], /--timeout must be a duration above 0 such as 90s/],
    [["wait", "j", "--timeout", "0"], /--timeout must be a duration above 0/],
    [["status", "-j", "j", "--timeout", "1m"], /--timeout goes with wait only/],
    [["wait", "a", "b"], /unexpected argument "b" for wait/],
  ] as const) {
    assert.throws(() => parseArgs([...argv], env), (e) => e instanceof UsageError && message.test(e.message), argv.join(" "));
  }
});
