/**
 * The Hono app every adapter serves: health, readiness, Prometheus metrics,
 * status and a drain endpoint (docs/DESIGN.md, "Runtime").
 *
 * @module
 */
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { HTTPException } from "hono/http-exception";
import type { Coordinator } from "../coordinator/types.ts";
import { SplitleaseError } from "../errors.ts";
import type { Worker } from "../runtime/worker_types.ts";
import type { Store } from "../store/store.ts";
import { durationIssue, MAX_TIMER_MS } from "../util/timers.ts";
import { type DrainAuthOptions, drainGuardOf } from "./drain_auth.ts";
import { mountFleetRoutes } from "./fleet_routes.ts";
import { MetricsRegistry, PROMETHEUS_CONTENT_TYPE } from "./metrics.ts";
import type { ProcessSample } from "./process_metrics.ts";
import { renderMetrics } from "./render_metrics.ts";


/**
 * The HTTP app as adapters use it: a fetch handler (plus Hono's `request`
 * helper for tests). It is a Hono app underneath.
  *
  * @example
  * ```ts
  * import { createApp, type HttpApp } from "@splitlease/splitlease/host";
  * import { type Coordinator } from "@splitlease/splitlease";
  * declare const coordinator: Coordinator;
  * const app: HttpApp = createApp({ coordinator });
  * console.log((await app.request("/healthz")).status); // 200
  * ```
 */
export interface HttpApp {
  /** Handles one request (hand it to the platform's HTTP server). */
  fetch(request: Request, ...rest: any[]): Response | Promise<Response>;
  /** Dispatches a request in process (path or URL), as Hono's `app.request`. */
  request(input: string | URL | Request, init?: RequestInit): Response | Promise<Response>;
}

/**
 * A Hono app (`new Hono()` of the `hono` package): what {@linkcode createApp}
 * returns, `Service.app`, and the app `routes` is given. Add routes and
 * middleware to it, or mount it in your own Hono app with `route`.
 *
 * @example
 * ```ts
 * import { createApp, type HonoApp } from "@splitlease/splitlease/host";
 * import { type Worker } from "@splitlease/splitlease";
 * declare const worker: Worker;
 * declare const mine: HonoApp; // your own `new Hono()`
 * mine.route("/ops", createApp({ worker })); // GET /ops/healthz, /ops/metrics, …
 * ```
 */
// Named through the module's type, not a type import: `deno doc --lint` counts
// an imported `Hono` as a private type of this package.
export type HonoApp = InstanceType<(typeof import("hono"))["Hono"]>;

/**
 * Options of {@linkcode createApp}. Give a `worker` or a `coordinator`.
 *
 * @example
 * ```ts
 * import { createApp, type AppOptions } from "@splitlease/splitlease/host";
 * import { type Worker } from "@splitlease/splitlease";
 * declare const worker: Worker;
 * const options: AppOptions = { worker, drainToken: "secret" };
 * const app = createApp(options);
 * ```
 */
export interface AppOptions extends DrainAuthOptions {
  /** The worker to report on and shut down (its coordinator is used). */
  worker?: Worker;
  /** A coordinator without a worker (drain calls `coordinator.drain()`). */
  coordinator?: Coordinator;
  /**
   * The job's store. With it the app also serves the fleet: `GET /fleet`,
   * the live fleet page at `GET /`, and the operator actions
   * (`POST /splits/:id/requeue`, `POST /splits/requeue`,
   * `POST /splits/:id/cancel`, `POST /members/:instance/drain`) behind the
   * `POST /drain` token. `serve` passes it.
   */
  store?: Store;
  /** Metric name prefix (default `etl_coordination_`). */
  metricsPrefix?: string;
  /** Deadline handed to `worker.shutdown` by `POST /drain` (ms), unless the body gives one. */
  drainDeadlineMs?: number;
  /**
   * Called instead of the default action when a drain is accepted (adapters
   * use it to run their own shutdown sequence).
   */
  onDrain?: (deadlineMs: number | undefined) => void;
  /**
   * Whether the process idles after its job completed (serve's
   * `afterCompletion: "idle"`): `/readyz` then answers 200 with `idle: true`
   * although the worker finished, so a Deployment's pods stay ready.
   */
  idling?: () => boolean;
  /**
   * Reads the process metrics `/metrics` adds (heap, resident memory,
   * event-loop lag; see `startProcessMetrics`). `serve` passes one.
   */
  processMetrics?: () => ProcessSample;
  /**
   * Adds the user's routes and middleware to the app, before the built-in
   * routes: a route here answers on its path, and middleware (`app.use`)
   * runs for the built-in routes too. A route on a built-in path replaces
   * it. To serve the built-in routes under a prefix of your own Hono app
   * instead, mount the app this returns: `mine.route("/ops", createApp(o))`.
   *
   * @example
   * ```ts
   * import { createApp } from "@splitlease/splitlease/host";
   * import { type Worker } from "@splitlease/splitlease";
   * declare const worker: Worker;
   * const app = createApp({ worker, routes: (app) => app.get("/hello", (c) => c.text("hi")) });
   * ```
   */
  routes?: (app: HonoApp) => unknown;
}

/** Largest `POST /drain` body read (bytes); a larger one is refused with 413 before it is read whole. */
const DRAIN_BODY_LIMIT = 4096;

function problem(status: number, error: string, extra: Record<string, unknown> = {}): Response {
  return new Response(JSON.stringify({ error, ...extra }), {
    status,
    headers: { "content-type": "application/json; charset=utf-8" },
  });
}

/**
 * Creates the HTTP app: `GET /healthz`, `GET /readyz`, `GET /metrics`,
 * `GET /status`, `POST /drain`, and with a `store` the fleet routes (see
 * {@linkcode AppOptions.store}). Unknown routes answer 404 JSON, a wrong
 * method 405 (with `Allow`), a malformed drain body 400, a drain body over
 * 4 KiB 413, a missing or wrong drain token 401 (a malformed Authorization
 * header 400), and a drain with no token configured 403 unless `drainOpen`.
 * It returns the Hono app itself: add routes to it, or mount it under a
 * prefix of your own app with `route` (see {@linkcode AppOptions.routes}).
 *
 * @example
 * ```ts
 * import { createApp } from "@splitlease/splitlease/host";
 * import { type Worker } from "@splitlease/splitlease";
 * declare const worker: Worker;
 * const app = createApp({ worker, drainToken: "s3cret" });
 * const res = await app.request("/readyz");
 * console.log(res.status); // 200 or 503
 * ```
 */
export function createApp(options: AppOptions): HonoApp {
  const coordinator = options.worker?.coordinator ?? options.coordinator;
  if (!coordinator) throw new TypeError("createApp needs a worker or a coordinator");
  const worker = options.worker;
  const prefix = options.metricsPrefix ?? "etl_coordination_";
  new MetricsRegistry(prefix); // validates the prefix now, not at the first scrape
  const drainGuard = drainGuardOf(options);
  if (options.drainDeadlineMs !== undefined) {
    const issue = durationIssue("drainDeadlineMs", options.drainDeadlineMs);
    if (issue) throw new SplitleaseError("INVALID_CONFIG", `createApp: ${issue}`);
  }
  const app = new Hono();
  if (options.routes !== undefined) {
    if (typeof options.routes !== "function") {
      throw new SplitleaseError("INVALID_CONFIG", "createApp: routes must be a function that adds routes to the app");
    }
    options.routes(app);
  }

  const route = (path: string, method: "GET" | "POST") => {
    app.all(path, (c) => {
      // Reached only when the method did not match (handlers are registered first).
      const m = c.req.method;
      return new Response(JSON.stringify({ error: `method ${m} not allowed on ${path}`, allow: [method] }), {
        status: 405,
        headers: {
          "content-type": "application/json; charset=utf-8",
          allow: method === "GET" ? "GET, HEAD" : method,
        },
      });
    });
  };

  app.get("/healthz", (c) => {
    const st = coordinator.status();
    const failed = st.state === "failed" || (worker?.finished === true && st.state !== "stopped");
    return c.json({ ok: !failed, state: st.state }, failed ? 503 : 200);
  });
  route("/healthz", "GET");

  app.get("/readyz", (c) => {
    if (options.idling?.()) return c.json({ ready: true, reasons: [], idle: true }, 200);
    const st = coordinator.status();
    const reasons: string[] = [];
    if (st.state !== "running") reasons.push(`coordinator is ${st.state}`);
    if (!st.connected) reasons.push("store not connected");
    if (worker?.draining || st.state === "draining") reasons.push("draining");
    if (worker?.finished) reasons.push("worker finished");
    const ready = reasons.length === 0;
    return c.json({ ready, reasons }, ready ? 200 : 503);
  });
  route("/readyz", "GET");

  app.get("/metrics", () => {
    const body = renderMetrics(coordinator.status(), coordinator.stats(), worker, prefix, options.processMetrics?.());
    return new Response(body, { headers: { "content-type": PROMETHEUS_CONTENT_TYPE } });
  });
  route("/metrics", "GET");

  app.get("/status", (c) => {
    const st = coordinator.status();
    return c.json({
      ...st,
      worker: worker
        ? {
          ready: worker.ready,
          draining: worker.draining,
          finished: worker.finished,
          stats: worker.stats(),
          lanes: worker.lanes(),
        }
        : null,
    });
  });
  route("/status", "GET");

  const tooLarge = bodyLimit({
    maxSize: DRAIN_BODY_LIMIT,
    onError: (c) => c.json({ error: `body is larger than ${DRAIN_BODY_LIMIT} bytes` }, 413),
  });
  app.post("/drain", drainGuard, tooLarge, async (c) => {
    let deadlineMs = options.drainDeadlineMs;
    const text = await c.req.text();
    if (text.trim() !== "") {
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        return problem(400, "body must be JSON (or empty)");
      }
      if (!body || typeof body !== "object" || Array.isArray(body)) {
        return problem(400, "body must be a JSON object");
      }
      const extra = Object.keys(body).filter((k) => k !== "deadlineMs");
      if (extra.length) return problem(400, `unknown field(s): ${extra.join(", ")}`);
      const d = (body as { deadlineMs?: unknown }).deadlineMs;
      if (d !== undefined) {
        if (typeof d !== "number" || !Number.isInteger(d) || d < 0 || d > MAX_TIMER_MS) {
          // Above 2^31 - 1 ms a timer overflows and fires at once: refuse, never clamp silently.
          return problem(
            400,
            `deadlineMs must be an integer from 0 to ${MAX_TIMER_MS} (ms), got ${JSON.stringify(d) ?? String(d)}`,
          );
        }
        deadlineMs = d;
      }
    }
    const already = worker ? worker.draining || worker.finished : coordinator.status().state !== "running";
    if (!already) {
      if (options.onDrain) options.onDrain(deadlineMs);
      else if (worker) void worker.shutdown({ deadlineMs, reason: "POST /drain" });
      else void coordinator.drain().catch(() => {});
    }
    return c.json({ draining: true, alreadyDraining: already, deadlineMs: deadlineMs ?? null }, 202);
  });
  route("/drain", "POST");

  if (options.store) {
    mountFleetRoutes(app, { store: options.store, coordinator, guard: drainGuard, bodyLimit: tooLarge, allow: route });
  }

  app.notFound((c) => c.json({ error: `no route for ${c.req.method} ${new URL(c.req.url).pathname}` }, 404));
  app.onError((err, c) => {
    if (err instanceof HTTPException) return err.getResponse();
    return c.json({ error: "internal error", message: err.message }, 500);
  });
  return app;
}
