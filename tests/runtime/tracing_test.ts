/**
 * OpenTelemetry tracing as instrumentation (issue 24 item 2, issue 31 item
 * 4), with the SDK's in-memory exporter as the global tracer provider and
 * AsyncLocalStorage as the context manager (as an application registers
 * them): the tree of a 3-split job on three workers — a source's spans
 * nest under its tenancy, a tenancy's writes are its children, a failed
 * tenancy carries the exception with its stack, no store operation is a
 * root, heartbeats are events, a handful of roots — then a job with a
 * crash, a takeover and a drain handoff, a serverless slice, the store
 * operations' outcomes, and tracing off.
 */
import assert from "node:assert/strict";
import { context, SpanStatusCode, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { MemoryStore, SplitCoordinator, startWorker, StoreUnavailableError } from "../../mod.ts";
import { serveWith, type ServeHost, type Service } from "../../host.ts";
import type { ServeOptions } from "../../host.ts";
import type { Lane, SplitSource, Store } from "../../mod.ts";
import { runSlice } from "../../src/slice/slice_run.ts";
import { systemClock } from "../../src/coordinator/clock.ts";
import { InstrumentedStore, newStats } from "../../src/coordinator/stats.ts";
import { CoordinatorTrace, traceOf } from "../../src/tracing/coordinator_trace.ts";
import { withTimeout } from "../helpers/deadline.ts";

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
trace.setGlobalTracerProvider(provider);
const tracer = trace.getTracer("source-under-test");

const host: ServeHost = {
  runtime: "test",
  listen: () => Promise.resolve({ port: 1, close: () => Promise.resolve() }),
  onSignal: () => () => {},
  exit: () => {},
};

const attr = (s: ReadableSpan, k: string) => s.attributes[`splitlease.${k}`];
const events = (s: ReadableSpan) => s.events.map((e) => e.name);
const idOf = (s: ReadableSpan) => s.spanContext().spanId;
const parentId = (s: ReadableSpan) => s.parentSpanContext?.spanId;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The exported spans, indexed: by id, children of each, the roots (no parent among them). */
function forest(spans: ReadableSpan[]) {
  const byId = new Map(spans.map((s) => [idOf(s), s]));
  const children = (s: ReadableSpan) => spans.filter((c) => parentId(c) === idOf(s));
  const parent = (s: ReadableSpan) => (parentId(s) ? byId.get(parentId(s)!) : undefined);
  const roots = spans.filter((s) => parent(s) === undefined);
  return { byId, children, parent, roots };
}

async function until(what: string, ok: () => boolean, ms = 20_000): Promise<void> {
  const limit = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > limit) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** Throws from a named frame, so the stack can be checked. */
function parseRow(split: string): never {
  throw new SyntaxError(`unexpected token in ${split}`);
}

Deno.test({
  name: "tracing: the tree of a 3-split job on three workers: source spans under their tenancy, writes as its children, the failure's stack, few roots",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    exporter.reset();
    const store = new MemoryStore();
    let failedOnce = false;
    const lanes: { split: string; span?: string; traceparent?: string }[] = [];
    const source: SplitSource<{ n: number }> = {
      fingerprint: () => "tree-v1",
      plan: () => Promise.resolve({ finality: "final", splits: [0, 1, 2].map((n) => ({ id: `s${n}`, descriptor: { n } })) }),
      async run(lane: Lane<{ n: number }>) {
        lanes.push({ split: lane.splitId, span: lane.span?.spanContext().spanId, traceparent: lane.traceparent });
        // A span of the source, started after an await (the context must flow across it), with a child after another.
        await sleep(5);
        await tracer.startActiveSpan("source.read", { attributes: { split: lane.splitId } }, async (span) => {
          await sleep(5);
          tracer.startSpan("source.write").end();
          span.end();
        });
        await lane.commit({ watermark: 1 }, { records: 1 });
        if (lane.splitId === "s1" && !failedOnce) {
          failedOnce = true;
          parseRow(lane.splitId);
        }
        await lane.complete({ watermark: 2 });
      },
    };
    const options = (instance: string): ServeOptions<{ n: number }> => ({
      store,
      source,
      job: "tree",
      instance,
      exit: false,
      logger: () => {},
      leaseMs: 1500,
      opTimeoutMs: 300,
      retryBackoffMs: 20,
      maxInFlight: 1,
    });
    const services: Service[] = [];
    try {
      for (const w of ["w1", "w2", "w3"]) services.push(await withTimeout(serveWith(options(w), host), 10_000, `${w} to start`));
      for (const s of services) assert.equal((await withTimeout(s.done, 20_000, "the job to complete")).exitCode, 0);
    } finally {
      for (const s of services) await withTimeout(s.shutdown("cleanup").catch(() => {}), 10_000, "cleanup");
      await store.close();
    }

    const spans = exporter.getFinishedSpans();
    const { children, parent, roots } = forest(spans);
    const named = (name: string) => spans.filter((s) => s.name === name);
    const tenancies = named("splitlease.tenancy");

    // A handful of roots: one membership per worker, one tenancy per split and attempt. Nothing else.
    assert.deepEqual([...new Set(roots.map((s) => s.name))].sort(), ["splitlease.membership", "splitlease.tenancy"]);
    assert.equal(named("splitlease.membership").length, 3);
    assert.equal(tenancies.length, 4, tenancies.map((t) => `${attr(t, "split.id")}@${attr(t, "split.epoch")}`).join(" "));
    assert.equal(roots.length, 7);
    for (const m of named("splitlease.membership")) {
      assert.ok(roots.includes(m));
      assert.equal(attr(m, "outcome"), "left");
      assert.equal(attr(m, "runtime"), "test");
    }

    // The source's spans nest under the tenancy that ran them (the run's context flows across its awaits).
    const reads = named("source.read");
    assert.equal(reads.length, 4);
    for (const r of reads) {
      const t = parent(r)!;
      assert.equal(t?.name, "splitlease.tenancy", "source.read is a child of its tenancy");
      assert.equal(attr(t, "split.id"), r.attributes.split);
      assert.equal(r.spanContext().traceId, t.spanContext().traceId);
      const w = children(r);
      assert.deepEqual(w.map((c) => c.name), ["source.write"], "and what it starts nests under it");
    }
    // lane.span is the tenancy's span; lane.traceparent names it.
    assert.equal(lanes.length, 4);
    for (const l of lanes) {
      const t = tenancies.find((s) => idOf(s) === l.span);
      assert.ok(t, `lane.span of ${l.split} is its tenancy`);
      assert.equal(l.traceparent, `00-${t.spanContext().traceId}-${idOf(t)}-01`);
    }

    // A tenancy's writes are its children, named by what they are; no other store operation is.
    // Progress commits go to the split's progress record (its first one creates it), the end to its split record.
    for (const t of tenancies) {
      const ops = children(t).filter((c) => c.name.startsWith("splitlease.store."));
      for (const op of ops) {
        const commit = attr(op, "write") === "commit";
        assert.ok(commit ? /^splitlease\.store\.(create|update)$/.test(op.name) : op.name === "splitlease.store.update", op.name);
        assert.equal(attr(op, "store.key"), `${commit ? "prog" : "split"}.${attr(t, "split.id")}`);
        assert.equal(attr(op, "outcome"), "landed");
      }
      const writes = ops.map((o) => attr(o, "write"));
      if (attr(t, "outcome") === "completed") assert.deepEqual(writes, ["commit", "complete"]);
      else assert.deepEqual(writes, ["commit", "fail"]);
    }

    // The failed tenancy: error status, an exception event with the stack of where the source threw.
    const failed = tenancies.filter((t) => attr(t, "outcome") === "failed");
    assert.equal(failed.length, 1);
    const f = failed[0];
    assert.equal(attr(f, "split.id"), "s1");
    assert.equal(f.status.code, SpanStatusCode.ERROR);
    assert.match(f.status.message!, /SyntaxError: unexpected token in s1/);
    const exception = f.events.find((e) => e.name === "exception")!;
    assert.ok(exception, "an exception event");
    assert.equal(exception.attributes?.["exception.type"], "SyntaxError");
    assert.match(String(exception.attributes?.["exception.stacktrace"]), /at parseRow .*tracing_test\.ts:\d+:\d+/);
    const retried = tenancies.filter((t) => attr(t, "split.id") === "s1" && attr(t, "outcome") === "completed");
    assert.equal(retried.length, 1, "s1 completed on its next tenancy");
    assert.equal(attr(retried[0], "attempts"), 1);
    for (const t of tenancies.filter((t) => t !== f)) assert.equal(t.status.code, SpanStatusCode.UNSET);

    // No store operation is a root: each is a child of the tenancy, leadership, plan run or membership that caused it.
    const ops = spans.filter((s) => s.name.startsWith("splitlease.store."));
    for (const op of ops) {
      const p = parent(op);
      assert.ok(p && ["splitlease.tenancy", "splitlease.leadership", "splitlease.plan", "splitlease.membership"].includes(p.name), op.name);
    }
    // Heartbeats (member and leader beats) are events of the membership and the leadership, never spans.
    assert.equal(ops.filter((o) => /^member\./.test(String(attr(o, "store.key"))) && o.name === "splitlease.store.update").length, 0);
    const members = named("splitlease.membership");
    assert.ok(members.some((m) => m.events.some((e) => e.name === "splitlease.store.update" && e.attributes?.["splitlease.outcome"] === "landed")));

    // The leader: one term under its membership, the plan run under it (the seeds and the publish its children), its decisions as events.
    const [lead] = named("splitlease.leadership");
    assert.equal(named("splitlease.leadership").length, 1);
    assert.equal(parent(lead)?.name, "splitlease.membership");
    assert.equal(attr(lead, "term"), 1);
    assert.equal(attr(lead, "outcome"), "resigned");
    for (const e of ["plan.published", "outcome.decided"]) assert.ok(events(lead).includes(e), `${e}: ${events(lead)}`);
    const [plan] = named("splitlease.plan");
    assert.equal(parent(plan), lead);
    // The plan's page, then the splits dealt to idle lanes (records the leader creates as grants).
    const seeds = children(plan).filter((c) => c.name === "splitlease.store.create");
    assert.deepEqual(seeds.map((s) => attr(s, "store.key")).sort(), ["page.00000000", "split.s0", "split.s1", "split.s2"]);
    assert.ok(children(plan).some((c) => c.name === "splitlease.store.update" && attr(c, "store.key") === "plan"), "the publish");
  },
});

Deno.test({
  name: "tracing: a small job with a takeover and a handoff: tenancy spans and their events, the leader's decisions",
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
          await sleep(20);
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
    const { children, parent } = forest(spans);
    const tenancies = spans.filter((s) => s.name === "splitlease.tenancy");
    const of = (owner: string) => tenancies.filter((s) => attr(s, "owner") === owner);
    const commits = (t: ReadableSpan) => children(t).filter((c) => attr(c, "write") === "commit" && attr(c, "outcome") === "landed");
    for (const s of tenancies) {
      assert.equal(attr(s, "job"), "traced");
      assert.match(String(attr(s, "split.id")), /^s[0-3]$/);
      assert.equal(typeof attr(s, "split.epoch"), "number");
      assert.equal(typeof attr(s, "outcome"), "string", "every tenancy ends with an outcome");
      assert.equal(parent(s), undefined, "a tenancy is a root");
    }
    // a: every split, with commits that landed; none completed there; they ended when a stopped.
    assert.deepEqual(of("a").map((s) => attr(s, "split.id")).sort(), ["s0", "s1", "s2", "s3"]);
    for (const s of of("a")) {
      assert.ok(commits(s).length > 0, "a committed");
      assert.equal(attr(s, "outcome"), "stopped");
    }
    // b: took every split over from a (a higher epoch), an event on each.
    const taken = of("b").filter((s) => attr(s, "acquired") === "takeover");
    assert.deepEqual(taken.map((s) => attr(s, "split.id")).sort(), ["s0", "s1", "s2", "s3"]);
    for (const s of taken) {
      assert.ok(events(s).includes("takeover"), "a takeover event");
      const before = of("a").find((x) => attr(x, "split.id") === attr(s, "split.id"))!;
      assert.ok(Number(attr(s, "split.epoch")) > Number(attr(before, "split.epoch")), "the takeover's epoch is higher");
    }
    // The handoffs: b's tenancies revoked and handed to c (the release a write of theirs); c's came by handoff.
    const handedOff = of("b").filter((s) => attr(s, "outcome") === "released");
    assert.equal(handedOff.length, 4, "b released every split to c");
    for (const s of handedOff) {
      assert.ok(events(s).includes("revocation"), "a revocation event");
      const h = s.events.find((e) => e.name === "handoff");
      assert.equal(h?.attributes?.["splitlease.to"], "c", "the handoff names its successor");
      assert.ok(children(s).some((c) => attr(c, "write") === "release" && attr(c, "outcome") === "landed"));
    }
    const received = of("c").filter((s) => attr(s, "acquired") === "handoff");
    assert.equal(received.length, 4, `c received every split by handoff: ${of("c").map((s) => attr(s, "acquired"))}`);
    for (const s of received) assert.ok(events(s).includes("handoff.received"));
    // The job completed: every split's last tenancy completed, with a final write.
    const completed = tenancies.filter((s) => attr(s, "outcome") === "completed");
    assert.deepEqual(completed.map((s) => attr(s, "split.id")).sort(), ["s0", "s1", "s2", "s3"]);
    for (const s of completed) assert.ok(children(s).some((c) => attr(c, "write") === "complete" && attr(c, "outcome") === "landed"));

    // The leaders' decisions: a planned; b judged a dead and took its splits over; the last leader decided the outcome.
    const leaderships = spans.filter((s) => s.name === "splitlease.leadership");
    const led = (owner: string) => leaderships.filter((s) => attr(s, "owner") === owner).flatMap(events);
    assert.ok(led("a").includes("plan.published"), `a's term: ${led("a")}`);
    for (const e of ["member.judged_dead", "takeover"]) assert.ok(led("b").includes(e), `b's term has ${e}: ${led("b")}`);
    assert.ok(leaderships.flatMap(events).includes("outcome.decided"), "the job's outcome was decided");
    for (const s of leaderships) {
      assert.equal(typeof attr(s, "term"), "number");
      assert.equal(parent(s)?.name, "splitlease.membership");
    }
    const takeover = leaderships.flatMap((s) => s.events).find((e) => e.name === "takeover")!;
    assert.equal(takeover.attributes?.["splitlease.owner"], "a", "the takeover names the member that is gone");
    assert.equal(takeover.attributes?.["splitlease.splits"], 4);
    // b's takeover writes are its term's children.
    const bLead = leaderships.find((s) => attr(s, "owner") === "b")!;
    assert.ok(children(bLead).filter((c) => c.name === "splitlease.store.update" && /^split\./.test(String(attr(c, "store.key")))).length >= 4);
    // The crashed member's membership ended when it stopped, without leaving.
    const aMember = spans.find((s) => s.name === "splitlease.membership" && attr(s, "owner") === "a")!;
    assert.equal(attr(aMember, "outcome"), "stopped");
  },
});

/** Lists a planner's input; throws on its first call, from a named frame (its stack is checked). */
function listInput(calls: { n: number }): never | void {
  if (++calls.n === 1) throw new RangeError("the input listing timed out");
}

Deno.test({
  name: "tracing: a quarantined tenancy's span and a planner run that throws carry the exception and an error status (the exporter's spans)",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    exporter.reset();
    const store = new MemoryStore();
    const calls = { n: 0 };
    const source: SplitSource<{ n: number }> = {
      fingerprint: () => "quarantine-v1",
      plan: () => {
        listInput(calls); // the first run throws; the planner is retried
        return Promise.resolve({ finality: "final", splits: ["thrown", "failed", "fine"].map((id, n) => ({ id, descriptor: { n } })) });
      },
      async run(lane: Lane<{ n: number }>) {
        if (lane.splitId === "thrown") parseRow(lane.splitId); // every attempt throws
        if (lane.splitId === "failed") return await lane.fail("row 7 does not parse"); // a reason, no exception
        await lane.complete({ watermark: 1 });
      },
    };
    const service = await withTimeout(serveWith({
      store,
      source,
      job: "quarantine",
      instance: "q1",
      exit: false,
      logger: () => {},
      leaseMs: 1500,
      opTimeoutMs: 300,
      retryBackoffMs: 20,
      maxAttempts: 2,
      stalledIsFatal: false,
    }, host), 10_000, "q1 to start");
    try {
      assert.equal((await withTimeout(service.done, 20_000, "the job to stall")).exitCode, 0);
    } finally {
      await withTimeout(service.shutdown("cleanup").catch(() => {}), 10_000, "cleanup");
      await store.close();
    }
    const spans = exporter.getFinishedSpans();
    const tenancies = (id: string) => spans.filter((s) => s.name === "splitlease.tenancy" && attr(s, "split.id") === id);

    // Each split that failed twice: a failed tenancy, then a quarantined one; both with an exception and an error status.
    for (const [id, message, type] of [["thrown", /SyntaxError: unexpected token in thrown/, "SyntaxError"], ["failed", /row 7 does not parse/, undefined]] as const) {
      const ts = tenancies(id);
      assert.deepEqual(ts.map((t) => attr(t, "outcome")), ["failed", "quarantined"], id);
      for (const t of ts) {
        const what = `${id} ${attr(t, "outcome")}`;
        assert.equal(t.status.code, SpanStatusCode.ERROR, `${what}: error status`);
        assert.match(t.status.message ?? "", message, what);
        const ex = t.events.filter((e) => e.name === "exception");
        assert.equal(ex.length, 1, `${what}: one exception event`);
        if (type) {
          assert.equal(ex[0].attributes?.["exception.type"], type, what);
          assert.match(String(ex[0].attributes?.["exception.stacktrace"]), /at parseRow .*tracing_test\.ts:\d+:\d+/, what);
        } else assert.match(String(ex[0].attributes?.["exception.message"]), message, what);
      }
    }
    const [fine] = tenancies("fine");
    assert.deepEqual([attr(fine, "outcome"), fine.status.code, fine.events.filter((e) => e.name === "exception").length], ["completed", SpanStatusCode.UNSET, 0]);

    // The planner threw once, then planned: the first run's span has the exception (with its stack) and an error status.
    const runs = spans.filter((s) => s.name === "splitlease.plan");
    assert.equal(runs.length, 2, "a failed run and the retry");
    const [failedRun, retry] = runs;
    assert.equal(failedRun.status.code, SpanStatusCode.ERROR);
    assert.equal(failedRun.status.message, "the input listing timed out");
    const ex = failedRun.events.filter((e) => e.name === "exception");
    assert.equal(ex.length, 1);
    assert.equal(ex[0].attributes?.["exception.type"], "RangeError");
    assert.match(String(ex[0].attributes?.["exception.stacktrace"]), /at listInput .*tracing_test\.ts:\d+:\d+/);
    assert.equal(retry.status.code, SpanStatusCode.UNSET);
    assert.equal(retry.events.filter((e) => e.name === "exception").length, 0);
    const lead = spans.find((s) => s.name === "splitlease.leadership")!;
    assert.ok(events(lead).includes("plan.failed") && events(lead).includes("plan.published"), `${events(lead)}`);
  },
});

Deno.test({
  name: "tracing: a serverless slice traces the same tree: tenancies with the source's spans and their writes, its membership and leadership",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    exporter.reset();
    const store = new MemoryStore();
    const source: SplitSource<{ n: number }> = {
      fingerprint: () => "slice-v1",
      plan: () => Promise.resolve({ finality: "final", splits: [0, 1].map((n) => ({ id: `t${n}`, descriptor: { n } })) }),
      async run(lane) {
        await sleep(2);
        tracer.startSpan("source.slice").end();
        await lane.commit({ watermark: 1 }, { records: 1 });
        await lane.complete({ watermark: 1 });
      },
    };
    const r = await runSlice({ store, source, job: "sliced", budgetMs: 9000, leaseMs: 3000, opTimeoutMs: 1000, drainDeadlineMs: 2000, logger: () => {} });
    await store.close();
    assert.equal(r.outcome, "complete");
    const spans = exporter.getFinishedSpans();
    const { children, parent, roots } = forest(spans);
    const tenancies = spans.filter((s) => s.name === "splitlease.tenancy");
    assert.deepEqual(tenancies.map((s) => [attr(s, "split.id"), attr(s, "owner"), attr(s, "outcome")]).sort(), [
      ["t0", r.instance, "completed"],
      ["t1", r.instance, "completed"],
    ]);
    for (const t of tenancies) {
      assert.deepEqual(children(t).map((c) => [c.name, attr(c, "write")]).sort(), [
        ["source.slice", undefined],
        ["splitlease.store.create", "commit"], // its progress record's first write
        ["splitlease.store.update", "complete"],
      ]);
    }
    assert.deepEqual(roots.map((s) => s.name).sort(), ["splitlease.membership", "splitlease.tenancy", "splitlease.tenancy"]);
    const lead = spans.find((s) => s.name === "splitlease.leadership")!;
    assert.ok(events(lead).includes("plan.published"));
    assert.equal(parent(lead)?.name, "splitlease.membership");
  },
});

Deno.test("tracing: a store operation's span says landed, conflict or maybe-landed (no answer in time), and a read found or absent", async () => {
  exporter.reset();
  const raw = new MemoryStore();
  const flaky: Store = new Proxy(raw, {
    get(t, p) {
      if (p === "delete") return () => Promise.reject(new StoreUnavailableError("delete", 200));
      const v = Reflect.get(t, p, t);
      return typeof v === "function" ? v.bind(t) : v;
    },
  });
  const tr = new CoordinatorTrace({}, "j", { instance: "i", session: "s" }, "test", systemClock);
  assert.equal(tr.enabled, true);
  const store = new InstrumentedStore(flaky, newStats(), systemClock, tr);
  assert.ok((await store.create("k", "1")).ok);
  assert.equal((await store.create("k", "2")).ok, false);
  await store.get("k");
  await store.get("nope");
  await assert.rejects(store.delete("k"), StoreUnavailableError);
  // Under an events cause (heartbeats): an event of the membership, not a span.
  await store.update("k", "3", 1, tr.membership.events);
  tr.close("stopped");
  await raw.close();
  const spans = exporter.getFinishedSpans();
  const member = spans.find((s) => s.name === "splitlease.membership")!;
  const got = spans.filter((s) => s.name.startsWith("splitlease.store.")).map((s) => [s.name, attr(s, "outcome"), s.status.code, parentId(s)]);
  assert.deepEqual(got, [
    ["splitlease.store.create", "landed", 0, idOf(member)],
    ["splitlease.store.create", "conflict", 0, idOf(member)],
    ["splitlease.store.get", "found", 0, idOf(member)],
    ["splitlease.store.get", "absent", 0, idOf(member)],
    ["splitlease.store.delete", "maybe-landed", 2, idOf(member)],
  ]);
  const beat = member.events.find((e) => e.name === "splitlease.store.update")!;
  assert.equal(beat.attributes?.["splitlease.outcome"], "landed");
  assert.equal(beat.attributes?.["splitlease.store.key"], "k");
});

Deno.test({
  name: "tracing: off (no SDK when the coordinator joins): no span, lane.span and lane.traceparent undefined",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    exporter.reset();
    trace.disable();
    const store = new MemoryStore();
    const seen: unknown[] = [];
    try {
      const source: SplitSource<null> = {
        fingerprint: () => "off",
        plan: () => Promise.resolve({ finality: "final", splits: [{ id: "x", descriptor: null }] }),
        async run(lane) {
          seen.push(lane.span, lane.traceparent, trace.getActiveSpan());
          await lane.complete({ watermark: 1 });
        },
      };
      const coordinator = await SplitCoordinator.join({ store, job: "off", fingerprint: "off", planner: (c) => source.plan(c) });
      assert.equal(traceOf(coordinator)?.enabled, false);
      const worker = startWorker({ coordinator, source, logger: () => {} });
      assert.equal((await withTimeout(worker.done, 10_000, "the job")).kind, "drained");
      await coordinator.close();
    } finally {
      trace.setGlobalTracerProvider(provider);
      await store.close();
    }
    assert.deepEqual(seen, [undefined, undefined, undefined]);
    assert.equal(exporter.getFinishedSpans().length, 0);
  },
});

Deno.test("tracing: a failed join ends its membership span with the exception and its stack", async () => {
  exporter.reset();
  const store = new MemoryStore();
  const first = await SplitCoordinator.join({ store, job: "j", instance: "w1", fingerprint: "v1" });
  await assert.rejects(SplitCoordinator.join({ store, job: "j", instance: "w2", fingerprint: "v2" }), /fingerprint/i);
  await first.close();
  await store.close();
  const members = exporter.getFinishedSpans().filter((s) => s.name === "splitlease.membership");
  const failed = members.find((s) => attr(s, "owner") === "w2")!;
  assert.equal(attr(failed, "outcome"), "join failed");
  assert.equal(failed.status.code, SpanStatusCode.ERROR);
  const ex = failed.events.find((e) => e.name === "exception")!;
  assert.match(String(ex.attributes?.["exception.message"]), /fingerprint/i);
  assert.match(String(ex.attributes?.["exception.stacktrace"]), /at /);
  assert.equal(attr(members.find((s) => attr(s, "owner") === "w1")!, "outcome"), "left");
});
