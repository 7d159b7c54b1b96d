/**
 * serve's `afterCompletion`: what a process does once its job is complete.
 * `"exit"` (the default) exits 0 at once, which a Kubernetes Job wants and a
 * Deployment restarts in a loop; `"idle"` stays up, ready, out of the job
 * (its store kept for the page: tests/runtime/finished_job_test.ts), until
 * SIGTERM. Runs serveWith on a fake host (no sockets) over a
 * MemoryStore.
 */
import assert from "node:assert/strict";
import { SplitleaseError, MemoryStore } from "../../mod.ts";
import { type ServeHost, type Service, serveWith, type ServeOptions } from "../../host.ts";
import { withTimeout } from "../helpers/deadline.ts";
import { rangeSource } from "./fixtures/app.ts";

/** Limit of each wait on serve (a join, a run to completion, a shutdown) on a loaded machine. */
const WAIT_MS = 20_000;

interface FakeHost {
  host: ServeHost;
  exits: number[];
  /** Delivers a signal to the handler serve registered. */
  signal(name: string): void;
  /** Whether the HTTP server was closed. */
  closed(): boolean;
}

function fakeHost(): FakeHost {
  const exits: number[] = [];
  let handler: ((signal: string) => void) | undefined;
  let closed = false;
  const host: ServeHost = {
    runtime: "test",
    listen: () => Promise.resolve({ port: 1, close: () => Promise.resolve(void (closed = true)) }),
    onSignal: (_signals, h) => {
      handler = h;
      return () => (handler = undefined);
    },
    exit: (code) => exits.push(code),
  };
  return { host, exits, signal: (name) => handler?.(name), closed: () => closed };
}

/** Resolves with the first log line whose `event` is `event`, or rejects after `ms` naming it. */
function logged(lines: Record<string, unknown>[], event: string, ms = 10_000): Promise<Record<string, unknown>> {
  const limit = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const poll = () => {
      const hit = lines.find((l) => l.event === event);
      if (hit) return resolve(hit);
      if (Date.now() > limit) return reject(new Error(`no "${event}" log line within ${ms} ms: ${JSON.stringify(lines.map((l) => l.msg))}`));
      setTimeout(poll, 10);
    };
    poll();
  });
}

function options(store: MemoryStore, lines: Record<string, unknown>[], extra: Partial<ServeOptions<unknown>> = {}): ServeOptions<unknown> {
  return {
    store,
    source: rangeSource(3, 2, 1) as ServeOptions<unknown>["source"],
    job: "finished",
    instance: "pod-0",
    port: 0,
    leaseMs: 1000,
    opTimeoutMs: 200,
    drainDeadlineMs: 500,
    shutdownMarginMs: 500,
    logger: (level, msg, fields) => lines.push({ level, msg, ...fields }),
    ...extra,
  };
}

async function metric(service: Service, name: string): Promise<string | undefined> {
  const text = await (await service.app.request("/metrics")).text();
  return new RegExp(`^etl_coordination_${name}\\{[^}]*\\} (\\S+)$`, "m").exec(text)?.[1];
}

Deno.test("serve afterCompletion idle: a completed job leaves the process up and ready until SIGTERM, then exit 0", async () => {
  const store = new MemoryStore();
  const lines: Record<string, unknown>[] = [];
  const h = fakeHost();
  const service = await withTimeout(serveWith(options(store, lines, { afterCompletion: "idle" }), h.host), WAIT_MS, "serve to start");
  const idle = await logged(lines, "idle");
  assert.equal(idle.reason, "complete");
  assert.deepEqual(h.exits, [], "no exit while idle");
  assert.equal(h.closed(), false, "still serving HTTP");
  const ready = await service.app.request("/readyz");
  assert.equal(ready.status, 200);
  assert.deepEqual(await ready.json(), { ready: true, reasons: [], idle: true });
  assert.equal((await service.app.request("/healthz")).status, 200);
  assert.equal(await metric(service, "up"), "0", "the coordinator left the job");
  assert.equal(await metric(service, "leader"), "0", "an idle pod leads nothing (no 'no leader' alert: up is 0 too)");
  h.signal("SIGTERM");
  const result = await withTimeout(service.done, WAIT_MS, "the idle service to exit after SIGTERM");
  assert.equal(result.exitCode, 0);
  assert.deepEqual(h.exits, [0]);
  assert.equal(h.closed(), true);
  await store.close();
});

Deno.test("serve afterCompletion: a restarted pod on a finished job exits 0 at once by default, idles with idle", async () => {
  const store = new MemoryStore();
  // The job runs to completion once (as a Job's pods would).
  const first = fakeHost();
  const firstService = await withTimeout(serveWith(options(store, [], {}), first.host), WAIT_MS, "the first pod to start");
  const done = await withTimeout(firstService.done, WAIT_MS, "the first pod to run the job to completion and exit");
  assert.equal(done.exitCode, 0);
  assert.deepEqual(first.exits, [0]);
  // Default: the restarted pod finds the job complete and exits 0 — a Deployment would restart it again and again.
  const again = fakeHost();
  const t0 = Date.now();
  const secondService = await withTimeout(serveWith(options(store, [], { instance: "pod-0" }), again.host), WAIT_MS, "the restarted pod to start");
  const second = await withTimeout(secondService.done, WAIT_MS, "the restarted pod to exit on the finished job");
  assert.equal(second.exitCode, 0);
  assert.deepEqual(again.exits, [0]);
  const restartMs = Date.now() - t0;
  // idle: the same restart stays up instead.
  const lines: Record<string, unknown>[] = [];
  const idleHost = fakeHost();
  const service = await withTimeout(
    serveWith(options(store, lines, { instance: "pod-0", afterCompletion: "idle" }), idleHost.host),
    WAIT_MS,
    "the idle restarted pod to start",
  );
  await logged(lines, "idle");
  await new Promise((r) => setTimeout(r, Math.max(200, restartMs)));
  assert.deepEqual(idleHost.exits, [], `no exit (a default restart exited after ${restartMs} ms)`);
  // shutdown() ends the idle state like a signal.
  const result = await withTimeout(service.shutdown("test"), WAIT_MS, "shutdown() of the idle pod");
  assert.equal(result.exitCode, 0);
  assert.deepEqual(idleHost.exits, [0]);
  await store.close();
});

Deno.test("serve afterCompletion idle: a shutdown before completion exits as usual; a stall still exits 3 (stalledIsFatal and afterStall left at their defaults)", async () => {
  const store = new MemoryStore();
  const h = fakeHost();
  const service = await withTimeout(
    serveWith(
      options(store, [], { afterCompletion: "idle", source: rangeSource(2, 1000, 5) as ServeOptions<unknown>["source"] }),
      h.host,
    ),
    WAIT_MS,
    "serve to start",
  );
  h.signal("SIGTERM");
  const result = await withTimeout(service.done, WAIT_MS, "the service to exit after a SIGTERM before completion");
  assert.equal(result.exitCode, 0);
  assert.equal(result.outcome.kind === "drained" && result.outcome.reason, "shutdown");
  assert.deepEqual(h.exits, [0]);

  const stalledStore = new MemoryStore();
  const s = fakeHost();
  const stalledService = await withTimeout(
    serveWith(
      options(stalledStore, [], {
        job: "poison",
        afterCompletion: "idle",
        maxAttempts: 1,
        source: rangeSource(2, 1, 1, { failSplits: ["r0"] }) as ServeOptions<unknown>["source"],
      }),
      s.host,
    ),
    WAIT_MS,
    "the poison job's service to start",
  );
  const stalled = await withTimeout(stalledService.done, WAIT_MS, "the stalled service to exit 3");
  assert.equal(stalled.exitCode, 3, "quarantined splits remain: exit 3 in both modes");
  assert.deepEqual(s.exits, [3]);
  await store.close();
  await stalledStore.close();
});

Deno.test("serve afterCompletion idle with stalledIsFatal false (or afterStall wait): a stall keeps the process in the job, a requeue through its route completes it", async () => {
  for (const extra of [{ stalledIsFatal: false }, { afterStall: "wait" as const }]) {
    const store = new MemoryStore();
    const lines: Record<string, unknown>[] = [];
    const h = fakeHost();
    let fixed = false;
    const service = await withTimeout(
      serveWith(
        options(store, lines, {
          job: "poison",
          afterCompletion: "idle",
          maxAttempts: 1,
          drainToken: "tok",
          source: rangeSource(2, 1, 1, { failSplits: ["r0"], fixed: () => fixed }) as ServeOptions<unknown>["source"],
          ...extra,
        }),
        h.host,
      ),
      WAIT_MS,
      "the poison job's service to start",
    );
    await logged(lines, "stallWait");
    await new Promise((r) => setTimeout(r, 1500)); // past the 1 s hold after which a stall ends an exiting worker
    assert.deepEqual(h.exits, [], `${JSON.stringify(extra)}: no exit on the stall`);
    assert.equal(lines.some((l) => l.event === "idle"), false, "not idle: still in the job");
    const fleet = await (await service.app.request("/fleet?state=quarantined")).json();
    assert.equal(fleet.counts.quarantined, 1, "the fleet view is served during the stall");
    assert.equal(await metric(service, "job_stalled"), "1", "the leader exports job_stalled");
    fixed = true;
    const r = await service.app.request("/splits/r0/requeue", { method: "POST", headers: { authorization: "Bearer tok" } });
    assert.equal(r.status, 200);
    const idle = await logged(lines, "idle");
    assert.equal(idle.reason, "complete", "the requeued split ran and the job completed");
    assert.deepEqual(h.exits, []);
    const result = await withTimeout(service.shutdown("test"), WAIT_MS, "shutdown() of the idle pod");
    assert.equal(result.exitCode, 0);
    await store.close();
  }
});

Deno.test("serve afterStall wait on a standby (the observer): it takes the lead of a stalled job from the worker that led and exited 3, and exports job_stalled", async () => {
  const store = new MemoryStore();
  const source = rangeSource(3, 20, 20, { failSplits: ["r0"] }) as ServeOptions<unknown>["source"];
  const workerLines: Record<string, unknown>[] = [];
  const wh = fakeHost();
  const worker = await withTimeout(
    serveWith(options(store, workerLines, { job: "observed", instance: "worker", maxAttempts: 1, source }), wh.host),
    WAIT_MS,
    "the worker to start",
  );
  for (const limit = Date.now() + 5000; await metric(worker, "leader") !== "1";) {
    assert.ok(Date.now() < limit, "the first member leads");
    await new Promise((r) => setTimeout(r, 10));
  }
  const lines: Record<string, unknown>[] = [];
  const oh = fakeHost();
  const observer = await withTimeout(
    serveWith(
      options(store, lines, { job: "observed", instance: "observer", maxInFlight: 0, afterStall: "wait", afterCompletion: "idle", source }),
      oh.host,
    ),
    WAIT_MS,
    "the observer to start",
  );
  assert.equal(await metric(observer, "leader"), "0", "the worker leads");
  const stalled = await withTimeout(worker.done, WAIT_MS, "the worker to exit on the stall");
  assert.equal(stalled.exitCode, 3);
  const limit = Date.now() + 10_000;
  while (await metric(observer, "job_stalled") !== "1") {
    assert.ok(Date.now() < limit, "the observer leads the stalled job and exports job_stalled within 10 s");
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(await metric(observer, "splits_quarantined"), "1");
  assert.deepEqual(oh.exits, []);
  await withTimeout(observer.shutdown("test"), WAIT_MS, "the observer to stop");
  await store.close();
});

Deno.test("serve afterCompletion: anything but exit or idle is refused before the join", async () => {
  const h = fakeHost();
  await assert.rejects(
    serveWith(options(new MemoryStore(), [], { afterCompletion: "stay" as "idle" }), h.host),
    (e: unknown) => e instanceof SplitleaseError && e.code === "INVALID_CONFIG" && /afterCompletion must be "exit" or "idle", got "stay"/.test(e.message),
  );
  assert.deepEqual(h.exits, [1]);
  await assert.rejects(
    serveWith(options(new MemoryStore(), [], { afterStall: "idle" as "wait" }), h.host),
    (e: unknown) => e instanceof SplitleaseError && e.code === "INVALID_CONFIG" && /afterStall must be "exit" or "wait", got "idle"/.test(e.message),
  );
  assert.deepEqual(h.exits, [1, 1]);
});

Deno.test("serve afterCompletion idle: every idle pod's /status gives the outcome's counts, the former leader's too, never a stale leader beat (issue 40, item 4)", async () => {
  const store = new MemoryStore();
  const SPLITS = 24;
  // A long lease: the leader beats every 10 s, so the job is over long before
  // a beat after the election carries its counts (what idle pods used to report).
  const hosts = [fakeHost(), fakeHost(), fakeHost()];
  const lines = hosts.map(() => [] as Record<string, unknown>[]);
  const services = await withTimeout(
    Promise.all(hosts.map((h, i) =>
      serveWith(
        options(store, lines[i], {
          job: "counted",
          instance: `pod-${i}`,
          afterCompletion: "idle",
          leaseMs: 30_000,
          opTimeoutMs: 1000,
          drainDeadlineMs: 1000,
          source: rangeSource(SPLITS, 5, 5) as ServeOptions<unknown>["source"],
        }),
        h.host,
      )
    )),
    WAIT_MS,
    "three pods to start",
  );
  for (const l of lines) await logged(l, "idle");
  const statuses = await Promise.all(services.map(async (s) => await (await s.app.request("/status")).json()));
  for (const [i, st] of statuses.entries()) {
    assert.equal(st.outcome, "allComplete", `pod-${i}`);
    assert.deepEqual(
      st.counts,
      { planned: SPLITS, runnable: 0, unclaimed: 0, owned: 0, completed: SPLITS, quarantined: 0, cancelled: 0 },
      `pod-${i}'s /status counts (${st.isLeader ? "leader" : "not leader"})`,
    );
  }
  assert.ok(lines.some((l) => l.some((x) => x.msg === "Leader elected")), "one of them led");
  for (const s of services) await withTimeout(s.shutdown("test"), WAIT_MS, "an idle pod to stop");
  await store.close();
});
