/**
 * Tracing on each runtime (issue 31, item 4), as a process: with
 * AsyncLocalStorage registered as the context manager
 * (`@opentelemetry/context-async-hooks`) a source's spans nest under their
 * tenancy on Deno, Bun and Node; Deno's built-in OpenTelemetry
 * (`OTEL_DENO=true`, nothing registered) does the same, checked from what it
 * exports over OTLP/JSON to a receiver here; with nothing registered every
 * span is a no-op and the lane has no span.
 */
import assert from "node:assert/strict";
import { bin, root } from "../helpers/worker_procs.ts";
import { runCmd } from "../helpers/cmd.ts";

type Probe = { outcome: string; lanes: { split: string; tenancy?: string; traceparent?: string }[]; work: { split: string; parent?: string }[] };
const fixture = "tests/runtime/fixtures/tracing_probe.ts";

async function probe(cmd: string, args: string[], env: Record<string, string>): Promise<Probe> {
  const r = await runCmd(cmd, args, { cwd: root, env: { PATH: Deno.env.get("PATH") ?? "", HOME: Deno.env.get("HOME") ?? "/tmp", ...env }, timeoutMs: 60_000, what: `${cmd} ${args.join(" ")}` });
  const line = r.stdout.trim().split("\n").pop()!;
  return JSON.parse(line) as Probe;
}

/** Each lane's source span is the child of its tenancy span, which the lane knows, with its traceparent. */
function assertNested(p: Probe, work: { split: string; parent?: string }[], rt: string): void {
  assert.equal(p.outcome, "complete", rt);
  assert.deepEqual(p.lanes.map((l) => l.split).sort(), ["a", "b"], rt);
  for (const l of p.lanes) {
    assert.match(l.tenancy ?? "", /^[0-9a-f]{16}$/, `${rt}: lane.span`);
    assert.match(l.traceparent ?? "", new RegExp(`^00-[0-9a-f]{32}-${l.tenancy}-01$`), `${rt}: lane.traceparent`);
    const w = work.find((x) => x.split === l.split);
    assert.equal(w?.parent, l.tenancy, `${rt}: the source span of ${l.split} is a child of its tenancy`);
  }
}

Deno.test({
  name: "tracing on each runtime: AsyncLocalStorage on Deno, Bun and Node nests a source's spans under its tenancy; nothing registered, no spans",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    // Node runs the fixture bundled (its imports resolved from node_modules, as an installed package's would be).
    const bundle = `node_modules/.tracing-probe-${crypto.randomUUID().slice(0, 8)}.mjs`;
    await runCmd(bin("esbuild"), [fixture, "--bundle", "--platform=node", "--format=esm", "--packages=external", "--log-level=warning", `--outfile=${bundle}`], { cwd: root, timeoutMs: 60_000 });
    try {
      for (const [rt, cmd, args] of [
        ["deno", bin("deno"), ["run", "-A", fixture]],
        ["bun", bin("bun"), [fixture]],
        ["node", bin("node"), [bundle]],
      ] as const) {
        const p = await probe(cmd, [...args], { PROBE_MODE: "als" });
        assertNested(p, p.work, rt);
        const off = await probe(cmd, [...args], { PROBE_MODE: "none" });
        assert.equal(off.outcome, "complete", `${rt}, no SDK`);
        assert.deepEqual(off.lanes.map((l) => [l.tenancy, l.traceparent]), [[undefined, undefined], [undefined, undefined]], `${rt}: no span without an SDK`);
      }
    } finally {
      await Deno.remove(`${root}${bundle}`).catch(() => {});
    }
  },
});

Deno.test({
  name: "tracing on Deno's built-in OpenTelemetry (OTEL_DENO=true, nothing registered): the exported source spans are children of their tenancy",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const spans: { name: string; spanId: string; parentSpanId?: string; attributes?: { key: string; value: { stringValue?: string } }[] }[] = [];
    await using server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (req) => {
      const body = await req.json().catch(() => ({}));
      if (new URL(req.url).pathname === "/v1/traces") {
        for (const rs of body.resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) spans.push(...(ss.spans ?? []));
      }
      return Response.json({});
    });
    const p = await probe(bin("deno"), ["run", "-A", fixture], {
      PROBE_MODE: "deno",
      OTEL_DENO: "true",
      OTEL_DENO_CONSOLE: "ignore",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${server.addr.port}`,
      OTEL_SERVICE_NAME: "splitlease-probe",
    });
    // Exported before the process ended; the receiver may still be reading the last request.
    for (let i = 0; i < 100 && spans.filter((s) => s.name === "source.work").length < 2; i++) await new Promise((r) => setTimeout(r, 20));
    const work = spans.filter((s) => s.name === "source.work").map((s) => ({
      split: s.attributes?.find((a) => a.key === "split")?.value.stringValue ?? "",
      parent: s.parentSpanId,
    }));
    assertNested(p, work, "deno (built-in)");
    const tenancies = spans.filter((s) => s.name === "splitlease.tenancy");
    assert.deepEqual(tenancies.map((t) => t.spanId).sort(), p.lanes.map((l) => l.tenancy).sort(), "the tenancies were exported");
  },
});
