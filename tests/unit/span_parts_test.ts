// Long-lived spans stay bounded (issue 31, item 4): a membership or a
// leadership is cut into parts (by time, by events, by children), each
// linked to the one before; a tenancy or a planner run traces at most a
// budget of store operations and counts the rest, its terminal write
// always traced. An injected clock and a tracer of its own (not the global).
import assert from "node:assert/strict";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { ManualClock } from "../../testing.ts";
import { PART_CHILDREN, PART_EVENTS, PART_MS, SpanParts } from "../../src/tracing/span_parts.ts";
import { SPAN_CHILDREN } from "../../src/tracing/span_cause.ts";
import { TenancyTrace } from "../../src/tracing/tenancy_trace.ts";
import type { TraceEnv } from "../../src/tracing/spans.ts";

function setup() {
  const exporter = new InMemorySpanExporter();
  const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer("t");
  const clock = new ManualClock();
  const env: TraceEnv = { tracer, job: "j", owner: "w1", clock, enabled: true };
  return { exporter, clock, env };
}

Deno.test("span parts: a membership of 250 heartbeats is 3 parts of at most 100 events, each linked to the one before", () => {
  const { exporter, env } = setup();
  const parts = new SpanParts(env, "splitlease.membership", { "splitlease.owner": "w1" });
  parts.start();
  for (let i = 0; i < 250; i++) parts.events.op("update", "member.w1")!.end("landed");
  parts.close({ "splitlease.outcome": "left" });
  const spans = exporter.getFinishedSpans();
  assert.deepEqual(spans.map((s) => [s.attributes["splitlease.part"], s.events.length]), [[1, PART_EVENTS], [2, PART_EVENTS], [3, 50]]);
  assert.deepEqual(spans.map((s) => s.attributes["splitlease.continued"]), [true, true, undefined]);
  assert.equal(spans[2].attributes["splitlease.outcome"], "left");
  for (let i = 1; i < 3; i++) {
    assert.equal(spans[i].links[0].context.spanId, spans[i - 1].spanContext().spanId, "linked to the part before");
    assert.notEqual(spans[i].spanContext().traceId, spans[i - 1].spanContext().traceId, "each part is a trace of its own");
    assert.equal(spans[i].parentSpanContext, undefined);
  }
  assert.equal(spans[0].events[0].attributes?.["splitlease.store.key"], "member.w1");
});

Deno.test("span parts: a part ends after ten minutes, or after 100 child spans; a leadership's part is a child of the current membership part", async () => {
  const { exporter, clock, env } = setup();
  const member = new SpanParts(env, "splitlease.membership", {});
  member.start();
  const lead = new SpanParts(env, "splitlease.leadership", {}, () => member.span);
  lead.start();
  lead.set({ "splitlease.term": 7 });
  await clock.advance(PART_MS);
  member.event("tick"); // the membership rolls over to its part 2
  lead.event("plan.published"); // and so does the leadership, under the membership's part 2
  for (let i = 0; i < PART_CHILDREN + 1; i++) lead.op("update", `assign.w${i}`)!.end("landed");
  lead.close({ "splitlease.outcome": "resigned" });
  member.close({ "splitlease.outcome": "left" });
  const spans = exporter.getFinishedSpans();
  const leads = spans.filter((s) => s.name === "splitlease.leadership");
  const members = spans.filter((s) => s.name === "splitlease.membership");
  assert.equal(members.length, 2);
  assert.deepEqual(leads.map((s) => s.attributes["splitlease.part"]), [1, 2, 3]);
  for (const l of leads) assert.equal(l.attributes["splitlease.term"], 7, "attributes set later carry over to later parts");
  assert.equal(leads[0].parentSpanContext?.spanId, members[0].spanContext().spanId);
  assert.equal(leads[1].parentSpanContext?.spanId, members[1].spanContext().spanId, "part 2 under the membership's part 2");
  const children = (id: string) => spans.filter((s) => s.parentSpanContext?.spanId === id && s.name.startsWith("splitlease.store."));
  assert.equal(children(leads[1].spanContext().spanId).length, PART_CHILDREN);
  assert.equal(children(leads[2].spanContext().spanId).length, 1);
  assert.equal(leads[2].attributes["splitlease.outcome"], "resigned");
});

Deno.test("span parts: tracing off makes nothing, not even an op trace", () => {
  const { exporter, env } = setup();
  env.enabled = false;
  const parts = new SpanParts(env, "splitlease.membership", {});
  parts.start().end();
  assert.equal(parts.span, undefined);
  assert.equal(parts.op("update", "k"), undefined);
  assert.equal(parts.events.op("update", "k"), undefined);
  parts.close({});
  assert.equal(exporter.getFinishedSpans().length, 1, "only the probe span that found tracing off");
});

Deno.test("tenancy trace: at most a budget of store operations as children, the rest counted; the terminal write always traced; ends when both holders let go", () => {
  const { exporter, env } = setup();
  let forgotten = 0;
  const span = env.tracer.startSpan("splitlease.tenancy");
  const t = new TenancyTrace(env, span, "s1", 3, () => forgotten++);
  assert.equal(t.attach(), t, "the lane attaches");
  const commit = t.write("commit", false);
  for (let i = 0; i < SPAN_CHILDREN + 50; i++) commit.op("update", "split.s1")?.end("landed");
  t.write("complete", true).op("update", "split.s1")!.end("landed");
  t.finish("completed");
  assert.equal(forgotten, 1);
  assert.equal(exporter.getFinishedSpans().filter((s) => s.name === "splitlease.tenancy").length, 0, "open while the lane runs");
  t.detach();
  assert.equal(t.attach(), undefined, "nothing attaches to an ended span");
  const spans = exporter.getFinishedSpans();
  const tenancy = spans.find((s) => s.name === "splitlease.tenancy")!;
  const ops = spans.filter((s) => s.name === "splitlease.store.update");
  assert.equal(ops.length, SPAN_CHILDREN + 1);
  assert.equal(ops.at(-1)!.attributes["splitlease.write"], "complete");
  assert.equal(tenancy.attributes["splitlease.store.untraced"], 50);
  assert.equal(tenancy.attributes["splitlease.outcome"], "completed");
  assert.equal(tenancy.status.code, 0);
});

Deno.test("tenancy trace: an abandoned lane ends the span in error; a failure without a stack still gets an exception event", () => {
  const { exporter, env } = setup();
  const a = new TenancyTrace(env, env.tracer.startSpan("a"), "a", 1, () => {});
  a.attach();
  a.finish("lost", "expired");
  a.abandoned("lane ignored its abort signal for 1000 ms (expired)");
  a.detach();
  const b = new TenancyTrace(env, env.tracer.startSpan("b"), "b", 1, () => {});
  b.finish("failed", "bad input");
  const [sa, sb] = exporter.getFinishedSpans();
  assert.equal(sa.attributes["splitlease.outcome"], "abandoned");
  assert.equal(sa.status.code, 2);
  assert.match(sa.status.message!, /ignored its abort signal/);
  assert.equal(sb.status.code, 2);
  assert.equal(sb.status.message, "bad input");
  assert.equal(sb.events.find((e) => e.name === "exception")?.attributes?.["exception.message"], "bad input");
});
