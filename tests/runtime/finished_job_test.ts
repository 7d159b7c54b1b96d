/**
 * A finished job stays visible and the page's status faults (issue 31,
 * items 5, 7 and 8), through the HTTP app (`app.request`, no sockets) over a
 * MemoryStore:
 *
 * - a process that idles after completion keeps its store, so `/fleet` and
 *   the page show the finished job from its records (read-only: operator
 *   access `none`), with its result (records, retries, failures); the store
 *   closes when the idle ends;
 * - `/fleet` tells the page how the operator routes are guarded (token,
 *   open, closed), so the page asks for a token only where one is needed;
 * - a non-leader's `/status` names the quarantined split its count counts;
 * - the lifecycle of a served worker is logged once per event (Joined,
 *   Leader elected, Plan published), without the 20 timings at info.
 */
import assert from "node:assert/strict";
import { MemoryStore, SplitCoordinator, startWorker, type Store } from "../../mod.ts";
import { createApp, type ServeHost, serveWith, type ServeOptions } from "../../host.ts";
import { withTimeout } from "../helpers/deadline.ts";
import { ScriptedCoordinator } from "../helpers/scripted_coordinator.ts";
import { rangeSource } from "./fixtures/app.ts";

const WAIT_MS = 20_000;

function fakeHost(): { host: ServeHost; signal(name: string): void; exits: number[] } {
  let handler: ((signal: string) => void) | undefined;
  const exits: number[] = [];
  const host: ServeHost = {
    runtime: "test",
    listen: () => Promise.resolve({ port: 1, close: () => Promise.resolve() }),
    onSignal: (_s, h) => {
      handler = h;
      return () => (handler = undefined);
    },
    exit: (code) => exits.push(code),
  };
  return { host, exits, signal: (name) => handler?.(name) };
}

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, ms = WAIT_MS): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

Deno.test("finished job: an idling process keeps its store and serves the job's result read-only; the store closes when the idle ends", async () => {
  const store = new MemoryStore();
  let closed = 0;
  // serve owns a store it opened (storeFactory): it used to close it on idle, and /fleet then answered 503.
  const owned: Store = new Proxy(store, {
    get(t, p) {
      if (p === "close") return () => (closed++, Promise.resolve());
      const v = Reflect.get(t, p, t);
      return typeof v === "function" ? v.bind(t) : v;
    },
  });
  const lines: Record<string, unknown>[] = [];
  const h = fakeHost();
  const options: ServeOptions<unknown> = {
    storeFactory: () => owned,
    source: rangeSource(3, 4, 1, { failOnce: ["r1"] }) as ServeOptions<unknown>["source"],
    job: "finished",
    instance: "observer",
    port: 0,
    leaseMs: 1000,
    opTimeoutMs: 200,
    drainDeadlineMs: 500,
    shutdownMarginMs: 500,
    retryBackoffMs: 20,
    afterCompletion: "idle",
    drainToken: "tok",
    logger: (level, msg, fields) => lines.push({ level, msg, ...fields }),
  };
  const service = await withTimeout(serveWith(options, h.host), WAIT_MS, "serve to start");
  await until("the idle state", () => lines.find((l) => l.event === "idle"));
  const res = await service.app.request("/fleet");
  assert.equal(res.status, 200, "the finished job's records are still read");
  const v = await res.json();
  assert.equal(v.plan.outcome, "allComplete");
  assert.deepEqual(v.operator, { access: "none" }, "read-only once the job is done: the page offers no actions");
  assert.deepEqual(v.members, [], "everyone left");
  assert.equal(v.rate.eta.state, "done");
  assert.equal(v.summary.records, 12, "3 splits × 4 records, each counted once");
  assert.equal(v.summary.splitsWithRecords, 3);
  assert.deepEqual([v.summary.failures, v.summary.retries], [1, 1], "r1 failed once and ran again");
  assert.ok(v.summary.tookMs > 0 && v.summary.perMinute > 0 && v.summary.recordsPerSecond > 0, JSON.stringify(v.summary));
  const page = await service.app.request("/");
  assert.equal(page.status, 200);
  assert.match(await page.text(), /<section id="result" class="result" hidden/);
  assert.equal(closed, 0, "the store stays open while the page is served");
  h.signal("SIGTERM");
  const result = await withTimeout(service.done, WAIT_MS, "the idle service to exit after SIGTERM");
  assert.equal(result.exitCode, 0);
  assert.equal(closed, 1, "closed once the idle ended");
  await store.close();
});

Deno.test("/fleet tells the page how the operator routes are guarded: token, open (drainOpen) or closed", async () => {
  const store = new MemoryStore();
  await store.create("job", JSON.stringify({ v: 2, fingerprint: "f", createdAt: 0 })); // joined: a job with no record at all reads as deleted (410)
  const coordinator = new ScriptedCoordinator();
  const access = async (o: { drainToken?: string; drainOpen?: boolean }) =>
    (await (await createApp({ coordinator, store, ...o }).request("/fleet")).json()).operator.access;
  assert.equal(await access({ drainToken: "tok" }), "token");
  assert.equal(await access({ drainOpen: true }), "open", "no token to ask for: the routes need none");
  assert.equal(await access({}), "closed");
  // And the page itself asks for nothing until /fleet said so: the token box starts hidden.
  const html = await (await createApp({ coordinator, store, drainOpen: true }).request("/")).text();
  assert.match(html, /<section id="operator" hidden>/);
  assert.match(html, /<b id="count-quarantined">/, "no red class until there is a quarantined split");
  await store.close();
});

Deno.test("/status on a non-leader names the quarantined split its count counts", async () => {
  const store = new MemoryStore();
  const tunables = { leaseMs: 1200, opTimeoutMs: 300, drainDeadlineMs: 500, maxAttempts: 1 };
  const source = rangeSource(3, 2, 1, { failSplits: ["r2"] });
  const leader = await SplitCoordinator.join({
    store, job: "q", instance: "a", fingerprint: source.fingerprint(), planner: (c) => source.plan(c), maxInFlight: 2, ...tunables,
  });
  const wa = startWorker({ coordinator: leader, source, logger: () => {}, maxInFlight: 2, afterStall: "wait" });
  const follower = await SplitCoordinator.join({ store, job: "q", instance: "b", fingerprint: source.fingerprint(), maxInFlight: 0, ...tunables });
  try {
    const app = createApp({ coordinator: follower, store });
    const status = await until("the follower's /status to count the quarantined split", async () => {
      const s = await (await app.request("/status")).json();
      return s.counts.quarantined === 1 && s.quarantined.length === 1 ? s : undefined;
    });
    assert.equal(status.isLeader, false);
    assert.deepEqual(status.quarantined, ["r2"]);
    assert.deepEqual(leader.status().quarantined, ["r2"], "the leader's own list");
  } finally {
    await withTimeout(wa.shutdown({ deadlineMs: 0 }), WAIT_MS, "the worker to stop");
    await follower.close();
    await store.close();
  }
});

Deno.test("log: a served worker's join, election and plan are one line each; the timings go to debug", async () => {
  const store = new MemoryStore();
  const lines: { level: string; msg: string; fields: Record<string, unknown> }[] = [];
  const h = fakeHost();
  const service = await serveWith({
    store,
    source: rangeSource(2, 2, 1) as ServeOptions<unknown>["source"],
    job: "lifecycle",
    instance: "w1",
    port: 0,
    leaseMs: 1000,
    opTimeoutMs: 200,
    drainDeadlineMs: 500,
    shutdownMarginMs: 500,
    logger: (level, msg, fields) => lines.push({ level, msg, fields: fields ?? {} }),
  }, h.host);
  await withTimeout(service.done, WAIT_MS, "the job to complete");
  const count = (m: string) => lines.filter((l) => l.msg.toLowerCase() === m.toLowerCase() && l.level !== "debug").length;
  assert.deepEqual([count("Joined"), count("Leader elected"), count("Plan published")], [1, 1, 1], lines.map((l) => l.msg).join("\n"));
  const joined = lines.find((l) => l.msg === "Joined")!;
  assert.deepEqual(Object.keys(joined.fields).sort(), ["instance", "job", "leaseMs", "maxInFlight", "session"]);
  const timings = lines.find((l) => l.fields.timings !== undefined)!;
  assert.equal(timings.level, "debug");
  assert.ok(Object.keys(timings.fields.timings as object).length >= 15, "every derived interval, when debugging");
  await store.close();
});
