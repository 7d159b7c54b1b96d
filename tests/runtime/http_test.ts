import assert from "node:assert/strict";
import { createApp, MetricsRegistry } from "../../host.ts";
import { escapeLabelValue } from "../../src/http/metrics.ts";
import { MemoryStore, startWorker } from "../../mod.ts";
import { ManualClock } from "../../testing.ts";
import { withTimeout } from "../helpers/deadline.ts";
import { idleSource } from "../helpers/idle_source.ts";
import { settle } from "../helpers/settle.ts";
import { ScriptedCoordinator } from "../helpers/scripted_coordinator.ts";

function setup(opts: { drainToken?: string; drainOpen?: boolean; metricsPrefix?: string } = {}) {
  const coordinator = new ScriptedCoordinator();
  const worker = startWorker({ coordinator, clock: new ManualClock(), logger: () => {}, source: idleSource });
  const app = createApp({ worker, ...opts });
  return { coordinator, worker, app };
}

// --- Prometheus text format validation (0.0.4) ----------------------------
const NAME = "[a-zA-Z_:][a-zA-Z0-9_:]*";
const LABELS =
  `\\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\[\\\\"n])*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\[\\\\"n])*")*)?\\}`;
const SAMPLE = new RegExp(`^(${NAME})(${LABELS})? (-?[0-9.e+-]+|\\+Inf|-Inf|NaN)$`);

interface Parsed {
  types: Map<string, string>;
  samples: { name: string; labels: string; value: string }[];
}

function validateExposition(text: string): Parsed {
  assert.ok(text.endsWith("\n"), "exposition ends with a newline");
  const types = new Map<string, string>();
  const helps = new Set<string>();
  const samples: Parsed["samples"] = [];
  let current = "";
  for (const [i, line] of text.slice(0, -1).split("\n").entries()) {
    const where = `line ${i + 1}: ${line}`;
    if (line.startsWith("# HELP ")) {
      const m = new RegExp(`^# HELP (${NAME}) (.*)$`).exec(line);
      assert.ok(m, where);
      assert.ok(!helps.has(m[1]), `duplicate HELP ${where}`);
      helps.add(m[1]);
      current = m[1];
      continue;
    }
    if (line.startsWith("# TYPE ")) {
      const m = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`).exec(line);
      assert.ok(m, where);
      assert.equal(m[1], current, `TYPE follows its HELP ${where}`);
      assert.ok(!types.has(m[1]), `duplicate TYPE ${where}`);
      types.set(m[1], m[2]);
      continue;
    }
    assert.ok(!line.startsWith("#"), `unexpected comment ${where}`);
    const m = SAMPLE.exec(line);
    assert.ok(m, `malformed sample ${where}`);
    const [, name, labels = "", value] = m;
    const type = types.get(current);
    if (type === "histogram") {
      assert.ok([`${current}_bucket`, `${current}_sum`, `${current}_count`].includes(name), where);
      if (name.endsWith("_bucket")) assert.match(labels, /le="/, where);
    } else {
      assert.equal(name, current, `sample belongs to the family announced last ${where}`);
    }
    if (type === "counter") assert.ok(Number(value) >= 0, where);
    samples.push({ name, labels, value });
  }
  return { types, samples };
}

/** The value of `name` with `labels` besides the job label every sample carries (`{splitlease_job="job1"}`). */
function find(p: Parsed, name: string, labels = "", job = "job1"): string | undefined {
  const all = `{splitlease_job="${job}"${labels ? "," + labels.slice(1) : "}"}`;
  return p.samples.find((s) => s.name === name && s.labels === all)?.value;
}

Deno.test("http: /healthz and /readyz follow the coordinator and the worker", async () => {
  const { coordinator, worker, app } = setup();
  let res = await app.request("/healthz");
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { ok: true, state: "running" });
  res = await app.request("/readyz");
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { ready: true, reasons: [] });
  coordinator.connected = false;
  res = await app.request("/readyz");
  assert.equal(res.status, 503);
  assert.deepEqual((await res.json()).reasons, ["store not connected"]);
  coordinator.connected = true;
  coordinator.state = "starting";
  assert.equal((await app.request("/readyz")).status, 503);
  coordinator.state = "running";
  const head = await app.request("/readyz", { method: "HEAD" });
  assert.equal(head.status, 200);
  coordinator.state = "failed";
  assert.equal((await app.request("/healthz")).status, 503);
  coordinator.state = "running";
  await withTimeout(worker.shutdown(), 20_000, "the worker to shut down");
  res = await app.request("/readyz");
  assert.equal(res.status, 503);
  assert.equal((await app.request("/healthz")).status, 200, "a cleanly stopped worker is healthy");
});

Deno.test("http: /metrics is valid Prometheus 0.0.4 text with every required family", async () => {
  const { coordinator, worker, app } = setup();
  coordinator.gain("a", 1);
  coordinator.isLeader = true;
  await settle();
  const res = await app.request("/metrics");
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  const text = await res.text();
  const p = validateExposition(text);
  const P = "etl_coordination_";
  const required: [string, string][] = [
    ["splits_owned", "gauge"],
    ["splits_unclaimed", "gauge"],
    ["splits_completed", "gauge"],
    ["splits_quarantined", "gauge"],
    ["live_workers", "gauge"],
    ["leader", "gauge"],
    ["idle", "gauge"],
    ["splits_draining", "gauge"],
    ["acquisitions_total", "counter"],
    ["split_losses_total", "counter"],
    ["releases_total", "counter"],
    ["revocations_total", "counter"],
    ["writes_total", "counter"],
    ["self_fences_total", "counter"],
    ["store_op_duration_seconds", "histogram"],
    ["handover_seconds", "histogram"],
  ];
  for (const [name, type] of required) assert.equal(p.types.get(P + name), type, name);
  assert.equal(find(p, P + "splits_owned"), "1");
  assert.equal(find(p, P + "idle"), "0");
  assert.equal(find(p, P + "leader"), "1");
  assert.equal(find(p, P + "live_workers"), "2");
  assert.equal(find(p, P + "splits_unclaimed"), "4");
  assert.equal(find(p, P + "acquisitions_total", '{reason="claim"}'), "3");
  assert.equal(find(p, P + "writes_total", '{outcome="conflict"}'), "2");
  // Histogram: cumulative buckets, +Inf = count, sum and count.
  assert.equal(find(p, P + "store_op_duration_seconds_bucket", '{op="update",le="0.005"}'), "1");
  assert.equal(find(p, P + "store_op_duration_seconds_bucket", '{op="update",le="0.01"}'), "2");
  assert.equal(find(p, P + "store_op_duration_seconds_bucket", '{op="update",le="0.1"}'), "2");
  assert.equal(find(p, P + "store_op_duration_seconds_bucket", '{op="update",le="+Inf"}'), "3");
  assert.equal(find(p, P + "store_op_duration_seconds_count", '{op="update"}'), "3");
  assert.equal(Number(find(p, P + "store_op_duration_seconds_sum", '{op="update"}')).toFixed(3), "0.208");
  assert.equal(find(p, P + "handover_seconds_bucket", '{le="+Inf"}'), "1");
  assert.equal(find(p, P + "lanes_running"), "1");
  assert.ok(p.samples.every((s) => s.labels.startsWith('{splitlease_job="job1"')), "every sample names the job");
  await withTimeout(worker.shutdown(), 20_000, "the worker to shut down");
});

Deno.test("http: /metrics labels fit Prometheus: no job or instance label, every known counter series at 0 from the start", async () => {
  const { coordinator, worker, app } = setup();
  coordinator.statsOverride = { acquisitions: {}, losses: {}, revocations: {}, writes: {}, storeOpSeconds: {} };
  const p = validateExposition(await (await app.request("/metrics")).text());
  const P = "etl_coordination_";
  // Prometheus attaches `job` and `instance` to every target: a scraped label of that name is renamed exported_*.
  for (const s of p.samples) assert.doesNotMatch(s.labels, /[{,](job|instance)="/, `${s.name}${s.labels}`);
  assert.equal(find(p, P + "info", '{worker="w1",session="sess-w1"}'), "1");
  const known: [string, string, string[]][] = [
    ["acquisitions_total", "reason", ["claim", "grant", "takeover", "reclaim", "handoff", "resume"]],
    ["split_losses_total", "reason", ["fenced", "expired", "starved", "revoked"]],
    ["revocations_total", "outcome", ["requested", "drained", "forced", "cancelled", "withdrawn", "fenced"]],
    ["writes_total", "outcome", ["ok", "conflict", "unavailable", "error"]],
  ];
  for (const [name, label, values] of known) {
    for (const v of values) assert.equal(find(p, P + name, `{${label}="${v}"}`), "0", `${name}{${label}="${v}"}`);
  }
  for (const op of ["create", "update", "delete", "get", "list"]) {
    assert.equal(find(p, P + "store_op_duration_seconds_count", `{op="${op}"}`), "0", op);
  }
  await withTimeout(worker.shutdown(), 20_000, "the worker to shut down");
});

Deno.test("http: job-wide gauges come from the leader only; every replica exports its own and the leader flag", async () => {
  const P = "etl_coordination_";
  const jobWide = ["splits_planned", "splits_runnable", "splits_unclaimed", "splits_completed", "splits_quarantined", "splits_cancelled", "live_workers", "job_stalled", "job_paused"];
  const member = setup();
  member.coordinator.gain("a", 1);
  await settle();
  let p = validateExposition(await (await member.app.request("/metrics")).text());
  for (const name of jobWide) {
    assert.equal(p.types.get(P + name), "gauge", `${name} is announced on a member`);
    assert.ok(!p.samples.some((s) => s.name === P + name), `${name} has no sample on a member`);
  }
  assert.equal(find(p, P + "leader"), "0");
  assert.equal(find(p, P + "splits_owned"), "1");
  member.coordinator.isLeader = true;
  p = validateExposition(await (await member.app.request("/metrics")).text());
  assert.equal(find(p, P + "leader"), "1");
  const expected: Record<string, string> = {
    splits_planned: "10",
    splits_runnable: "7",
    splits_unclaimed: "4",
    splits_completed: "2",
    splits_quarantined: "1",
    splits_cancelled: "0",
    live_workers: "2",
    job_stalled: "0",
    job_paused: "0",
  };
  for (const name of jobWide) assert.equal(find(p, P + name), expected[name], name);
  await withTimeout(member.worker.shutdown(), 20_000, "the member's worker to shut down");
});

Deno.test("http: metric label values and HELP are escaped; the prefix is configurable", async () => {
  const r = new MetricsRegistry("x_");
  r.gauge("g", "a \\ help\nline").set(1, { v: 'q"u\\o\nte' });
  const text = r.render();
  assert.equal(text, '# HELP x_g a \\\\ help\\nline\n# TYPE x_g gauge\nx_g{v="q\\"u\\\\o\\nte"} 1\n');
  validateExposition(text);
  assert.equal(escapeLabelValue("plain"), "plain");
  assert.throws(() => r.gauge("bad-name", "h"), TypeError);
  assert.throws(() => r.gauge("g2", "h").set(1, { __x: "y" }), TypeError);
  const { app, coordinator, worker } = setup({ metricsPrefix: "my_" });
  coordinator.statsOverride = { acquisitions: { 'we"ird\\': 1 } };
  const p = validateExposition(await (await app.request("/metrics")).text());
  assert.equal(find(p, "my_acquisitions_total", '{reason="we\\"ird\\\\"}'), "1");
  assert.equal(find(p, "my_acquisitions_total", '{reason="claim"}'), "0", "known reasons render beside unknown ones");
  assert.ok([...p.types.keys()].every((k) => k.startsWith("my_")));
  assert.throws(() => createApp({ worker, metricsPrefix: "9bad" }), TypeError);
  await withTimeout(worker.shutdown(), 20_000, "the worker to shut down");
});

Deno.test("http: /status is JSON with the coordinator snapshot and the worker's lanes", async () => {
  const { coordinator, worker, app } = setup();
  coordinator.gain("a", 4);
  await settle();
  const res = await app.request("/status");
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /application\/json/);
  const body = await res.json();
  assert.equal(body.instance, "w1");
  assert.deepEqual(body.quarantined, ['q"1']);
  assert.equal(body.held[0].id, "a");
  assert.equal(body.worker.lanes[0].splitId, "a");
  assert.equal(body.worker.lanes[0].epoch, 4);
  assert.equal(body.worker.ready, true);
  await withTimeout(worker.shutdown(), 20_000, "the worker to shut down");
});

Deno.test("http: /status shows what an acknowledged write survives on the store, for a store that says (Redis), and nothing for one that does not", async () => {
  const coordinator = new ScriptedCoordinator();
  const worker = startWorker({ coordinator, clock: new ManualClock(), logger: () => {}, source: idleSource });
  const mode = 'durability "everysec" (accepts "everysec"): appendonly yes, appendfsync everysec; no replicas';
  const said = Object.assign(new MemoryStore(), { durability: mode });
  const body = await (await createApp({ worker, store: said }).request("/status")).json();
  assert.deepEqual(body.store, { durability: mode });
  const silent = await (await createApp({ worker, store: new MemoryStore() }).request("/status")).json();
  assert.equal(silent.store, undefined);
  await withTimeout(worker.shutdown(), 20_000, "the worker to shut down");
});

Deno.test("http: POST /drain with no token configured is refused (403) unless drainOpen, and changes nothing", async () => {
  const { coordinator, worker, app } = setup();
  const res = await app.request("/drain", { method: "POST" });
  assert.equal(res.status, 403);
  assert.match((await res.json()).error, /no drainToken is configured .*drainOpen/);
  assert.equal(coordinator.calls.length, 0);
  assert.equal(worker.draining, false);
  await withTimeout(worker.shutdown(), 20_000, "the worker to shut down");
  assert.throws(() => createApp({ worker, drainToken: "a", drainOpen: true }), /exclude each other/);
  assert.throws(() => createApp({ worker, drainToken: "s3cret!" }), /RFC 6750/);
  assert.throws(() => createApp({ worker, drainDeadlineMs: 3e9 }), /drainDeadlineMs .*got 3000000000/);
});

Deno.test("http: POST /drain with drainOpen and no token shuts the worker down gracefully", async () => {
  const { coordinator, worker, app } = setup({ drainOpen: true });
  coordinator.gain("a", 1);
  await settle();
  const res = await app.request("/drain", { method: "POST" });
  assert.equal(res.status, 202);
  assert.deepEqual(await res.json(), { draining: true, alreadyDraining: false, deadlineMs: null });
  const outcome = await withTimeout(worker.done, 20_000, "the worker to finish");
  assert.equal(outcome.kind, "drained");
  assert.deepEqual(coordinator.calls.map((c) => c.op), ["drain", "release", "close"]);
  const again = await app.request("/drain", { method: "POST" });
  assert.equal((await again.json()).alreadyDraining, true);
});

Deno.test("http: POST /drain with a token: missing or wrong bearer is 401, a malformed header 400; nothing changes", async () => {
  const { coordinator, worker, app } = setup({ drainToken: "s3cret" });
  const cases: [Record<string, string>, number, string][] = [
    [{}, 401, 'Bearer realm="splitlease"'],
    [{ authorization: "Bearer nope" }, 401, 'Bearer realm="splitlease", error="invalid_token"'],
    [{ authorization: "Bearer s3cret-and-more" }, 401, 'Bearer realm="splitlease", error="invalid_token"'],
    [{ authorization: "Bearer s3cre" }, 401, 'Bearer realm="splitlease", error="invalid_token"'],
    [{ authorization: "Basic s3cret" }, 400, 'Bearer realm="splitlease", error="invalid_request"'],
    [{ authorization: "Bearer s3 cret" }, 400, 'Bearer realm="splitlease", error="invalid_request"'],
  ];
  for (const [headers, status, challenge] of cases) {
    const res = await app.request("/drain", { method: "POST", headers, body: '{"deadlineMs":1}' });
    assert.equal(res.status, status, JSON.stringify(headers));
    assert.equal(res.headers.get("www-authenticate"), challenge);
    assert.ok((await res.json()).error);
  }
  assert.equal(coordinator.calls.length, 0);
  assert.equal(worker.draining, false);
  const ok = await app.request("/drain", {
    method: "POST",
    headers: { authorization: "bearer s3cret", "content-type": "application/json" },
    body: JSON.stringify({ deadlineMs: 1234 }),
  });
  assert.equal(ok.status, 202);
  assert.equal((await ok.json()).deadlineMs, 1234);
  assert.equal((await withTimeout(worker.done, 20_000, "the worker to finish")).kind, "drained");
});

Deno.test("http: unknown routes 404, wrong methods 405 with Allow, malformed drain bodies 400", async () => {
  const { coordinator, worker, app } = setup({ drainOpen: true });
  let res = await app.request("/nope");
  assert.equal(res.status, 404);
  assert.match((await res.json()).error, /no route for GET \/nope/);
  res = await app.request("/metrics", { method: "POST" });
  assert.equal(res.status, 405);
  assert.equal(res.headers.get("allow"), "GET, HEAD");
  res = await app.request("/drain");
  assert.equal(res.status, 405);
  assert.equal(res.headers.get("allow"), "POST");
  res = await app.request("/status", { method: "DELETE" });
  assert.equal(res.status, 405);
  for (const body of ["{not json", "[1]", '{"deadlineMs":-1}', '{"deadlineMs":"5"}', '{"force":true}']) {
    res = await app.request("/drain", { method: "POST", body });
    assert.equal(res.status, 400, body);
    assert.ok((await res.json()).error);
  }
  assert.equal(coordinator.calls.length, 0, "bad requests change nothing");
  await withTimeout(worker.shutdown(), 20_000, "the worker to shut down");
});

Deno.test("http: POST /drain with a deadline a timer cannot hold is 400 naming the field, not an instant abort", async () => {
  const { coordinator, worker, app } = setup({ drainOpen: true });
  for (const d of [3_000_000_000, 2 ** 31, 1e300]) {
    const res = await app.request("/drain", { method: "POST", body: JSON.stringify({ deadlineMs: d }) });
    assert.equal(res.status, 400, String(d));
    const { error } = await res.json();
    assert.match(error, /deadlineMs must be an integer from 0 to 2147483647 \(ms\), got /);
    assert.ok(error.includes(JSON.stringify(d)), error);
  }
  assert.equal(coordinator.calls.length, 0, "nothing drained");
  assert.equal(worker.draining, false);
  const ok = await app.request("/drain", { method: "POST", body: JSON.stringify({ deadlineMs: 2 ** 31 - 1 }) });
  assert.equal(ok.status, 202);
  assert.equal((await ok.json()).deadlineMs, 2 ** 31 - 1);
  await withTimeout(worker.done, 20_000, "the worker to finish");
});

Deno.test("http: POST /drain refuses a body over 4 KiB with 413 without reading it whole", async () => {
  const { coordinator, worker, app } = setup({ drainOpen: true });
  // A body of known length: refused from the header.
  let res = await app.request("/drain", {
    method: "POST",
    headers: { "content-length": String(20 * 1024 * 1024) },
    body: "x".repeat(5000),
  });
  assert.equal(res.status, 413);
  assert.match((await res.json()).error, /larger than 4096 bytes/);
  // A streamed body without a length (chunked): reading stops at the limit.
  let pulled = 0;
  const endless = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulled += 1024;
      controller.enqueue(new Uint8Array(1024).fill(32));
      if (pulled >= 20 * 1024 * 1024) controller.close();
    },
  });
  res = await app.request("/drain", { method: "POST", body: endless, duplex: "half" } as RequestInit);
  assert.equal(res.status, 413);
  await res.body?.cancel();
  assert.ok(pulled <= 16 * 1024, `read ${pulled} bytes of a 20 MiB body`);
  // A whitespace body at the limit is still fine.
  res = await app.request("/drain", { method: "POST", body: " ".repeat(4096) });
  assert.equal(res.status, 202);
  await res.body?.cancel();
  assert.deepEqual(coordinator.calls.map((c) => c.op).slice(0, 1), ["drain"]);
  await withTimeout(worker.done, 20_000, "the worker to finish");
});

Deno.test("http: createApp over a bare coordinator drains it on POST /drain", async () => {
  const coordinator = new ScriptedCoordinator();
  const app = createApp({ coordinator, drainOpen: true });
  assert.equal((await app.request("/readyz")).status, 200);
  const text = await (await app.request("/metrics")).text();
  assert.ok(!text.includes("lanes_running"));
  assert.equal((await app.request("/drain", { method: "POST" })).status, 202);
  await settle();
  assert.deepEqual(coordinator.calls.map((c) => c.op), ["drain"]);
  assert.throws(() => createApp({}), TypeError);
});
