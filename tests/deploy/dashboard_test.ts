/**
 * The Grafana dashboard (deploy/grafana/splitlease-dashboard.json) against
 * docs/OPERATIONS.md's PromQL and the code (issue 24, item 3): its queries
 * are the documented ones, each filtered by the `job` variable, and every
 * metric they name is one /metrics renders, the process metrics included;
 * and the process metrics themselves (heap from the host's reading,
 * event-loop lag measured with a timer).
 */
import assert from "node:assert/strict";
import { startProcessMetrics } from "../../host.ts";
import { leaderMetrics } from "./leader_metrics.ts";

const root = new URL("../../", import.meta.url).pathname;
const read = (path: string) => Deno.readTextFileSync(`${root}${path}`);

/** The queries of OPERATIONS' "PromQL for dashboards" block, continuation lines joined, comments dropped. */
function documentedQueries(): string[] {
  const page = read("docs/OPERATIONS.md");
  const at = page.indexOf("### PromQL for dashboards");
  const block = /```promql\n([\s\S]*?)```/.exec(page.slice(at))![1];
  const out: string[] = [];
  for (const line of block.split("\n")) {
    if (line.trim() === "" || line.startsWith("#")) continue;
    if (/^\s/.test(line)) out[out.length - 1] += " " + line.trim();
    else out.push(line.trim());
  }
  return out;
}

interface Panel {
  title: string;
  type: string;
  targets?: { expr: string; refId: string; legendFormat?: string }[];
  datasource?: { uid: string };
}

// deno-lint-ignore no-explicit-any
const dashboard: any = JSON.parse(read("deploy/grafana/splitlease-dashboard.json"));
const panels = dashboard.panels as Panel[];
const exprs = panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));
const JOB = 'splitlease_job=~"$job"';
/** A dashboard query without its job filter: the form OPERATIONS documents. */
const unfiltered = (expr: string) => expr.replaceAll(`${JOB},`, "").replaceAll(JOB, "").replaceAll("{}", "");

Deno.test("dashboard: a Grafana dashboard with a data source and a job variable every query filters on", () => {
  assert.equal(dashboard.uid, "splitlease");
  assert.equal(typeof dashboard.schemaVersion, "number");
  const vars = new Map((dashboard.templating.list as { name: string; type: string; query: unknown }[]).map((v) => [v.name, v]));
  assert.equal(vars.get("datasource")?.type, "datasource");
  assert.equal(vars.get("datasource")?.query, "prometheus");
  assert.equal(vars.get("job")?.type, "query");
  assert.match(JSON.stringify(vars.get("job")?.query), /label_values\(etl_coordination_info, splitlease_job\)/);
  assert.ok(panels.length >= 10, "a panel per theme");
  const ids = new Set<number>();
  for (const p of panels as (Panel & { id: number; gridPos: { x: number; w: number } })[]) {
    assert.ok(!ids.has(p.id), `panel ids are unique (${p.id})`);
    ids.add(p.id);
    assert.ok(p.gridPos.x + p.gridPos.w <= 24, `${p.title} fits the 24-column grid`);
    assert.equal(p.datasource?.uid, "${datasource}", `${p.title} uses the data source variable`);
    assert.ok((p.targets ?? []).length > 0, `${p.title} has a query`);
  }
  for (const { panel, expr } of exprs) {
    for (const selector of expr.matchAll(/\betl_coordination_[a-z_]+(\{[^}]*\})?/g)) {
      assert.ok(selector[1]?.includes(JOB), `${panel}: ${selector[0]} filters on the job variable`);
    }
  }
});

Deno.test("dashboard: its queries are OPERATIONS' PromQL for dashboards, and each names a metric /metrics renders", async () => {
  const documented = documentedQueries();
  const onDashboard = exprs.map((e) => unfiltered(e.expr));
  assert.deepEqual([...new Set(onDashboard)].sort(), [...new Set(documented)].sort(), "the dashboard's queries (without the job filter) are the documented ones");
  const { samples, help } = await leaderMetrics({ processMetrics: true });
  for (const { panel, expr } of exprs) {
    const names = [...new Set(expr.match(/\betl_coordination_[a-z_]+/g) ?? [])];
    assert.ok(names.length > 0, `${panel}: names a metric`);
    for (const n of names) assert.ok(samples.has(n), `${panel}: ${n} is rendered by /metrics`);
    // Job-wide gauges come from the leader only: never summed per pod.
    for (const n of names) {
      if (/exported by the leader only/.test(help.get(n) ?? "")) assert.doesNotMatch(expr, new RegExp(`sum by \\([^)]*\\) \\(${n}`), `${panel}: ${n} aggregated with max`);
    }
  }
});

Deno.test("dashboard: /metrics renders heap, resident memory and event-loop lag from a process-metrics reading", async () => {
  const { text } = await leaderMetrics({ processMetrics: true });
  const value = (name: string) => {
    const m = new RegExp(`^etl_coordination_${name}\\{splitlease_job="[^"]+"\\} (\\S+)$`, "m").exec(text);
    assert.ok(m, `${name} has a sample`);
    return Number(m[1]);
  };
  assert.ok(value("heap_used_bytes") > 0);
  assert.ok(value("heap_total_bytes") >= value("heap_used_bytes"));
  assert.ok(value("resident_memory_bytes") > 0);
  assert.ok(value("event_loop_lag_seconds") >= 0);
  assert.ok(value("event_loop_lag_max_seconds") >= value("event_loop_lag_seconds"));
  assert.match(text, /^# TYPE etl_coordination_event_loop_lag_max_seconds gauge$/m);
});

Deno.test("dashboard: the lag probe reports how late its timer fired, the largest over the window, and nothing before the first probe", async () => {
  let t = 0;
  const monitor = startProcessMetrics({ intervalMs: 5, now: () => t });
  /** Polls the monitor (its timer fires on the real clock; `t` is what it reads) until `ok` holds. */
  const until = async (ok: (s: ReturnType<typeof monitor.sample>) => boolean, what: string) => {
    for (let i = 0; i < 200; i++) {
      const s = monitor.sample();
      if (ok(s)) return s;
      await new Promise((r) => setTimeout(r, 5));
    }
    assert.fail(`the lag probe never reported ${what}: ${JSON.stringify(monitor.sample())}`);
  };
  try {
    assert.deepEqual(monitor.sample(), {}, "no memory provider, no probe yet: no fields");
    t = 5 + 250; // the loop was blocked 250 ms past the first timer's time
    const blocked = await until((s) => s.eventLoopLagMaxSeconds !== undefined, "a lag");
    assert.equal(blocked.eventLoopLagMaxSeconds, 0.25);
    // Later probes on time (the clock stands still: each fires no later than it was due).
    const after = await until((s) => s.eventLoopLagSeconds === 0, "a probe on time");
    assert.equal(after.eventLoopLagMaxSeconds, 0.25, "the max holds over the window");
  } finally {
    monitor.stop();
  }
});
