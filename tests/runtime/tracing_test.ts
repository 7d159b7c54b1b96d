/**
 * OpenTelemetry tracing (issue 24, item 2), with the SDK's in-memory
 * exporter registered as the global tracer provider: the spans of a small
 * job served by serveWith (fake host, MemoryStore, real time) in which
 * worker a holds every split and crashes, worker b takes them over, worker c
 * joins, b drains and hands its splits to c, and c completes the job; and the store spans'
 * outcomes (landed, conflict, maybe-landed) on a store that answers each way.
 */
import assert from "node:assert/strict";
import { trace } from "@opentelemetry/api";
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { StoreUnavailableError, MemoryStore } from "../../mod.ts";
import { serveWith, type ServeHost, type Service } from "../../host.ts";
import type { ServeOptions } from "../../host.ts";
import type { SplitSource, Store } from "../../mod.ts";
import { runSlice } from "../../src/runtime/slice_run.ts";
import { Tracing } from "../../src/tracing/tracing.ts";
import { withTimeout } from "../helpers/deadline.ts";

const exporter = new InMemorySpanExporter();
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));

const host: ServeHost = {
  runtime: "test",
  listen: () => Promise.resolve({ port: 1, close: () => Promise.resolve() }),
  onSignal: () => () => {},
  exit: () => {},
};

const attr = (s: ReadableSpan, k: string) => s.attributes[`splitlease.${k}`];
const events = (s: ReadableSpan) => s.events.map((e) => e.name);

async function until(what: string, ok: () => boolean, ms = 20_000): Promise<void> {
  const limit = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > limit) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

Deno.test({
  name: "tracing: a small job with a takeover and a handoff: tenancy spans, their commits, the leader's decisions, store operations",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    exporter.reset();
    const store = new MemoryStore();
    let finish = false;
    // Each split commits a record every 20 ms until told to finish, then completes.
    const source: SplitSource<{ n: number }> = {
      fingerprint: () => "traced-v1",
      plan: () => Promise.resolve({ finality: "final", splits: [0, 1, 2, 3].map((n) => ({ id: `s${n}`, descriptor: { n } })) }),
      async run(lane) {
        let at = Number(lane.progress?.watermark ?? 0);
        while (!finish) {
          if (lane.signal.aborted || lane.revokeSignal.aborted) return;
          await new Promise((r) => setTimeout(r, 20));
          if (lane.signal.aborted || lane.revokeSignal.aborted) return;
          await lane.commit({ watermark: ++at }, { records: 1 });
        }
        await lane.complete({ watermark: at });
      },
    };
    const options = (instance: string): ServeOptions<{ n: number }> => ({
      store,
      source,
      job: "traced",
      instance,
      exit: false,
      logger: () => {},
      leaseMs: 1000,
      opTimeoutMs: 200,
      drainDeadlineMs: 500,
      shutdownMarginMs: 500,
      maxInFlight: 4,
    });
    const services: Service[] = [];
    try {
      const a = await withTimeout(serveWith(options("a"), host), 10_000, "a to start");
      services.push(a);
      await until("a to run every split and commit on each", () => {
        const lanes = a.worker.lanes();
        return lanes.length === 4 && lanes.every((l) => l.progress !== null && l.progress !== undefined);
      });
      // a crashes: it stops without leaving or releasing (its lanes fail on their next commit).
      await (a.coordinator as unknown as { abandon(): Promise<void> }).abandon();
      const b = await withTimeout(serveWith(options("b"), host), 10_000, "b to start");
      services.push(b);
      await until("b to take over every split", () => b.coordinator.status().held.length === 4);
      const c = await withTimeout(serveWith(options("c"), host), 10_000, "c to start");
      services.push(c);
      await until("c to join the fleet", () => b.coordinator.status().members === 2);
      // b drains (a rolling restart): each of its splits is revoked and handed to c.
      const rb = await withTimeout(b.shutdown("drain"), 20_000, "b to drain");
      assert.equal(rb.exitCode, 0);
      await until("c to be handed every split", () => c.coordinator.status().held.length === 4);
      finish = true;
      const rc = await withTimeout(c.done, 20_000, "the job to complete");
      assert.equal(rc.exitCode, 0);
      assert.equal(rc.outcome.kind, "drained");
      await withTimeout(a.shutdown("test").catch(() => {}), 10_000, "a to end");
    } finally {
      for (const s of services) await withTimeout(s.shutdown("cleanup").catch(() => {}), 10_000, "cleanup");
      await store.close();
    }

    const spans = exporter.getFinishedSpans();
    const tenancies = spans.filter((s) => s.name === "splitlease.tenancy");
    const of = (owner: string) => tenancies.filter((s) => attr(s, "owner") === owner);
    for (const s of tenancies) {
      assert.equal(attr(s, "job"), "traced");
      assert.match(String(attr(s, "split.id")), /^s[0-3]$/);
      assert.equal(typeof attr(s, "split.epoch"), "number");
      assert.equal(typeof attr(s, "outcome"), "string", "every tenancy ends with an outcome");
    }
    // a: every split, with commits that landed; none completed there.
    assert.deepEqual(of("a").map((s) => attr(s, "split.id")).sort(), ["s0", "s1", "s2", "s3"]);
    for (const s of of("a")) {
      assert.ok(s.events.some((e) => e.name === "commit" && e.attributes?.["splitlease.outcome"] === "landed"), "a committed");
      assert.notEqual(attr(s, "outcome"), "completed");
    }
    // b: took every split over from a (a higher epoch), an event on each.
    const taken = of("b").filter((s) => attr(s, "acquired") === "takeover");
    assert.deepEqual(taken.map((s) => attr(s, "split.id")).sort(), ["s0", "s1", "s2", "s3"]);
    for (const s of taken) {
      assert.ok(events(s).includes("takeover"), "a takeover event");
      const before = of("a").find((x) => attr(x, "split.id") === attr(s, "split.id"))!;
      assert.ok(Number(attr(s, "split.epoch")) > Number(attr(before, "split.epoch")), "the takeover's epoch is higher");
    }
    // The handoffs: b's tenancies revoked and handed to c; c's came by handoff.
    const handedOff = of("b").filter((s) => attr(s, "outcome") === "released");
    assert.equal(handedOff.length, 4, "b released every split to c");
    for (const s of handedOff) {
      assert.ok(events(s).includes("revocation"), "a revocation event");
      const h = s.events.find((e) => e.name === "handoff");
      assert.equal(h?.attributes?.["splitlease.to"], "c", "the handoff names its successor");
    }
    const received = of("c").filter((s) => attr(s, "acquired") === "handoff");
    assert.equal(received.length, 4, `c received every split by handoff: ${of("c").map((s) => attr(s, "acquired"))}`);
    for (const s of received) assert.ok(events(s).includes("handoff.received"));
    // The job completed: every split's last tenancy completed, with a final commit.
    const completed = tenancies.filter((s) => attr(s, "outcome") === "completed");
    assert.deepEqual(completed.map((s) => attr(s, "split.id")).sort(), ["s0", "s1", "s2", "s3"]);
    for (const s of completed) {
      assert.ok(s.events.some((e) => e.name === "commit" && e.attributes?.["splitlease.final"] === true), "a final commit");
    }

    // The leaders' decisions: a planned; b judged a dead and took its splits over; the last leader decided the outcome.
    const leaderships = spans.filter((s) => s.name === "splitlease.leadership");
    const led = (owner: string) => leaderships.filter((s) => attr(s, "owner") === owner).flatMap(events);
    assert.ok(led("a").includes("plan.published"), `a's term: ${led("a")}`);
    for (const e of ["member.judged_dead", "takeover"]) assert.ok(led("b").includes(e), `b's term has ${e}: ${led("b")}`);
    assert.ok(leaderships.flatMap(events).includes("outcome.decided"), "the job's outcome was decided");
    for (const s of leaderships) assert.equal(typeof attr(s, "term"), "number");
    const takeover = leaderships.flatMap((s) => s.events).find((e) => e.name === "takeover")!;
    assert.equal(takeover.attributes?.["splitlease.owner"], "a", "the takeover names the member that is gone");
    assert.equal(takeover.attributes?.["splitlease.splits"], 4);

    // Store operations, with their outcome.
    const ops = spans.filter((s) => s.name.startsWith("splitlease.store."));
    for (const op of ["create", "update", "get", "list"]) assert.ok(ops.some((s) => s.name === `splitlease.store.${op}`), op);
    for (const s of ops) assert.ok(["landed", "conflict", "maybe-landed", "error", "found", "absent", "ok", "unavailable"].includes(String(attr(s, "outcome"))));
    assert.ok(ops.some((s) => attr(s, "outcome") === "landed" && String(attr(s, "store.key")).startsWith("split.")));
  },
});

Deno.test({
  name: "tracing: a serverless slice traces its tenancies, its leadership and its store operations too",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    exporter.reset();
    const store = new MemoryStore();
    const source: SplitSource<{ n: number }> = {
      fingerprint: () => "slice-v1",
      plan: () => Promise.resolve({ finality: "final", splits: [0, 1].map((n) => ({ id: `t${n}`, descriptor: { n } })) }),
      async run(lane) {
        await lane.commit({ watermark: 1 }, { records: 1 });
        await lane.complete({ watermark: 1 });
      },
    };
    const r = await runSlice({ store, source, job: "sliced", budgetMs: 9000, leaseMs: 3000, opTimeoutMs: 1000, drainDeadlineMs: 2000, logger: () => {} });
    await store.close();
    assert.equal(r.outcome, "complete");
    const spans = exporter.getFinishedSpans();
    const tenancies = spans.filter((s) => s.name === "splitlease.tenancy");
    assert.deepEqual(tenancies.map((s) => [attr(s, "split.id"), attr(s, "owner"), attr(s, "outcome")]).sort(), [
      ["t0", r.instance, "completed"],
      ["t1", r.instance, "completed"],
    ]);
    for (const s of tenancies) assert.deepEqual(s.events.map((e) => [e.name, e.attributes?.["splitlease.final"]]), [["commit", false], ["commit", true]]);
    assert.ok(spans.some((s) => s.name === "splitlease.leadership" && events(s).includes("plan.published")));
    assert.ok(spans.some((s) => s.name === "splitlease.store.update" && attr(s, "outcome") === "landed"));
  },
});

Deno.test("tracing: a store span says landed, conflict or maybe-landed (no answer in time), and a read found or absent", async () => {
  exporter.reset();
  const raw = new MemoryStore();
  const flaky: Store = new Proxy(raw, {
    get(t, p) {
      if (p === "delete") return () => Promise.reject(new StoreUnavailableError("delete", 200));
      const v = Reflect.get(t, p, t);
      return typeof v === "function" ? v.bind(t) : v;
    },
  });
  const store = new Tracing("j").store(flaky);
  const created = await store.create("k", "1");
  assert.ok(created.ok);
  assert.equal((await store.create("k", "2")).ok, false);
  await store.get("k");
  await store.get("nope");
  await assert.rejects(store.delete("k"), StoreUnavailableError);
  assert.equal(store instanceof MemoryStore, true, "still the store it wraps");
  await store.close();
  const got = exporter.getFinishedSpans().map((s) => [s.name, attr(s, "outcome"), s.status.code]);
  assert.deepEqual(got, [
    ["splitlease.store.create", "landed", 0],
    ["splitlease.store.create", "conflict", 0],
    ["splitlease.store.get", "found", 0],
    ["splitlease.store.get", "absent", 0],
    ["splitlease.store.delete", "maybe-landed", 2],
  ]);
});

Deno.test("tracing: @opentelemetry/api imports on Deno, Bun and Node, and without an SDK its spans are no-ops", async () => {
  const root = new URL("../../", import.meta.url).pathname;
  const probe = `const { trace } = await import("@opentelemetry/api");
const span = trace.getTracer("probe").startSpan("s");
console.log(JSON.stringify({ recording: span.isRecording(), valid: trace.isSpanContextValid(span.spanContext()) }));
span.end();`;
  const file = `${root}node_modules/.tracing-probe-${crypto.randomUUID().slice(0, 8)}.mjs`;
  await Deno.writeTextFile(file, probe);
  try {
    for (const [rt, args] of [["deno", ["run", "-A", file]], ["bun", [file]], ["node", [file]]] as const) {
      const out = await new Deno.Command(`${root}node_modules/.bin/${rt}`, { args: [...args], cwd: root, stdout: "piped", stderr: "piped" }).output();
      const text = new TextDecoder().decode(out.stdout).trim();
      assert.equal(out.code, 0, `${rt}: ${new TextDecoder().decode(out.stderr)}`);
      assert.deepEqual(JSON.parse(text), { recording: false, valid: false }, `${rt}: a no-op span`);
    }
  } finally {
    await Deno.remove(file);
  }
});
