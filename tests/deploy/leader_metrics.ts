/**
 * What /metrics renders on a leader running a worker (the most any replica
 * renders), parsed for the deployment kit's checks: the alert rules, KEDA's
 * trigger and the Grafana dashboard may name only metrics it renders.
 * @module
 */
import { ManualClock } from "../../testing.ts";
import { createApp, startProcessMetrics } from "../../host.ts";
import { startWorker } from "../../mod.ts";
import { withTimeout } from "../helpers/deadline.ts";
import { idleSource } from "../helpers/idle_source.ts";
import { ScriptedCoordinator } from "../helpers/scripted_coordinator.ts";
import { settle } from "../helpers/settle.ts";

/** /metrics of a leader running a worker, as text and parsed. */
export interface Rendered {
  /** The exposition text. */
  text: string;
  /** Family name → type. */
  types: Map<string, string>;
  /** Family name → HELP text. */
  help: Map<string, string>;
  /** Every sample name (histograms as _bucket, _sum, _count). */
  samples: Set<string>;
  /** Label names seen on samples. */
  labels: Set<string>;
}

/**
 * What /metrics renders on a leader holding one split; with `processMetrics`,
 * also the process metrics (heap from Deno's reading, event-loop lag after a
 * few probes).
 */
export async function leaderMetrics(opts: { processMetrics?: boolean } = {}): Promise<Rendered> {
  const coordinator = new ScriptedCoordinator();
  coordinator.isLeader = true;
  const worker = startWorker({ coordinator, clock: new ManualClock(), logger: () => {}, source: idleSource });
  coordinator.gain("a", 1);
  await settle();
  const monitor = opts.processMetrics ? startProcessMetrics({ memoryUsage: () => Deno.memoryUsage(), intervalMs: 5 }) : undefined;
  let text: string;
  try {
    if (monitor) await new Promise((r) => setTimeout(r, 40)); // a few lag probes
    const app = createApp({ worker, ...(monitor ? { processMetrics: () => monitor.sample() } : {}) });
    text = await (await app.request("/metrics")).text();
  } finally {
    monitor?.stop();
    await withTimeout(worker.shutdown(), 20_000, "the worker rendering /metrics to shut down");
  }
  const r: Rendered = { text, types: new Map(), help: new Map(), samples: new Set(), labels: new Set() };
  for (const line of text.split("\n")) {
    let m = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (m) r.types.set(m[1], m[2]);
    m = /^# HELP (\S+) (.*)$/.exec(line);
    if (m) r.help.set(m[1], m[2]);
    m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? /.exec(line);
    if (m) {
      r.samples.add(m[1]);
      for (const l of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="/g)) r.labels.add(l[1]);
    }
  }
  return r;
}
