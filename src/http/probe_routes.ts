/**
 * The routes a platform and Prometheus poll: `GET /healthz` (liveness),
 * `GET /readyz` (readiness, with its reasons), `GET /metrics` and
 * `GET /status`.
 *
 * @module
 */
import type { Hono } from "hono";
import type { Coordinator } from "../coordinator/types.ts";
import type { Worker } from "../runtime/worker_types.ts";
import { PROMETHEUS_CONTENT_TYPE } from "./metrics.ts";
import type { ProcessSample } from "./process_metrics.ts";
import { renderMetrics } from "./render_metrics.ts";

/** What the probe routes report on. */
export interface ProbeRouteOptions {
  coordinator: Coordinator;
  worker: Worker | undefined;
  /** Prefix of every metric name. */
  prefix: string;
  /** Whether the process idles after its job completed (ready, nothing to do). */
  idling?: () => boolean;
  /** The process's heap and event-loop lag, when the host reads them. */
  processMetrics?: () => ProcessSample;
  /** Answers 405 on a path for other methods. */
  allow: (path: string, method: "GET" | "POST") => void;
  /** What an acknowledged write survives on the job's store (`Store.durability`), shown in `/status`. */
  durability?: string;
}

/**
 * Adds the probe routes to `app`.
 *
 * @example
 * ```ts ignore
 * mountProbeRoutes(app, { coordinator, worker, prefix: "etl_coordination_", allow });
 * ```
 */
export function mountProbeRoutes(app: Hono, o: ProbeRouteOptions): void {
  const { coordinator, worker } = o;
  app.get("/healthz", (c) => {
    const st = coordinator.status();
    const failed = st.state === "failed" || (worker?.finished === true && st.state !== "stopped");
    return c.json({ ok: !failed, state: st.state }, failed ? 503 : 200);
  });
  o.allow("/healthz", "GET");

  app.get("/readyz", (c) => {
    if (o.idling?.()) return c.json({ ready: true, reasons: [], idle: true }, 200);
    const st = coordinator.status();
    const reasons: string[] = [];
    if (st.state !== "running") reasons.push(`coordinator is ${st.state}`);
    if (!st.connected) reasons.push("store not connected");
    if (worker?.draining || st.state === "draining") reasons.push("draining");
    if (worker?.finished) reasons.push("worker finished");
    const ready = reasons.length === 0;
    return c.json({ ready, reasons }, ready ? 200 : 503);
  });
  o.allow("/readyz", "GET");

  app.get("/metrics", () => {
    const body = renderMetrics(coordinator.status(), coordinator.stats(), worker, o.prefix, o.processMetrics?.());
    return new Response(body, { headers: { "content-type": PROMETHEUS_CONTENT_TYPE } });
  });
  o.allow("/metrics", "GET");

  app.get("/status", (c) => {
    const st = coordinator.status();
    return c.json({
      ...st,
      ...(o.durability === undefined ? {} : { store: { durability: o.durability } }),
      worker: worker
        ? { ready: worker.ready, draining: worker.draining, finished: worker.finished, stats: worker.stats(), lanes: worker.lanes() }
        : null,
    });
  });
  o.allow("/status", "GET");
}
