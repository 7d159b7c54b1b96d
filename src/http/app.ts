/**
 * The Hono app every adapter serves: health, readiness, Prometheus metrics,
 * status and a drain endpoint (docs/DESIGN.md, "Runtime").
 *
 * @module
 */
import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import type { Coordinator } from "../coordinator/types.ts";
import { SplitleaseError } from "../errors.ts";
import type { Worker } from "../runtime/worker_types.ts";
import type { Store } from "../store/store.ts";
import { durationIssue } from "../util/timers.ts";
import { allowOnly } from "./allow_only.ts";
import { type DrainAuthOptions, drainGuardOf } from "./drain_auth.ts";
import { drainBodyLimit, mountDrainRoute } from "./drain_route.ts";
import { mountFleetRoutes } from "./fleet_routes.ts";
import { MetricsRegistry } from "./metrics.ts";
import { mountProbeRoutes } from "./probe_routes.ts";
import type { ProcessSample } from "./process_metrics.ts";


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
  /**
   * A sharded job's stores, one per shard in shard order (docs/OPERATIONS.md,
   * "Sharding a job"), instead of `store`: `GET /fleet` and the page show
   * the job folded from every shard, the job's actions (pause, resume,
   * requeue all, drain a member) act on every shard and a split's on the
   * shard that holds it. `serve` passes them for `shards` above 1.
   */
  stores?: readonly Store[];
  /**
   * How `GET /fleet` reads a large job: above `above` splits (default
   * 10 000) from a live index of its records, closed `idleMs` after the
   * last request (default 60 000); at or below, every record each second.
   */
  fleetIndex?: { above?: number; idleMs?: number };
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

/**
 * Creates the HTTP app: `GET /healthz`, `GET /readyz`, `GET /metrics`,
 * `GET /status`, `POST /drain`, and with a `store` (or a sharded job's
 * `stores`) the fleet routes (see {@linkcode AppOptions.store}). Unknown routes answer 404 JSON, a wrong
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
  const guard = drainGuardOf(options);
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
  if (options.store && options.stores) throw new SplitleaseError("INVALID_CONFIG", "createApp: give store (one job's) or stores (a sharded job's), not both");
  if (options.stores !== undefined && (!Array.isArray(options.stores) || options.stores.length === 0)) {
    throw new SplitleaseError("INVALID_CONFIG", "createApp: stores must be a non-empty array of the job's stores, one per shard in shard order");
  }
  const shards = coordinator.status().shards?.length;
  if (options.store && shards !== undefined && shards > 1) {
    throw new SplitleaseError("INVALID_CONFIG", `createApp: the coordinator's job has ${shards} shards: give stores, one per shard in shard order, not store (one shard's)`);
  }
  if (options.stores && shards !== undefined && options.stores.length !== shards) {
    throw new SplitleaseError("INVALID_CONFIG", `createApp: stores has ${options.stores.length} store(s), the coordinator's job ${shards} shards: give one store per shard`);
  }
  const stores = options.stores ?? (options.store ? [options.store] : undefined);
  const allow = (path: string, method: "GET" | "POST") => allowOnly(app, path, method);
  mountProbeRoutes(app, { coordinator, worker, prefix, idling: options.idling, processMetrics: options.processMetrics, allow, durability: stores?.[0].durability });
  const bodyLimit = drainBodyLimit();
  mountDrainRoute(app, { coordinator, worker, guard, bodyLimit, deadlineMs: options.drainDeadlineMs, onDrain: options.onDrain, allow });
  if (stores) {
    const access = options.drainToken !== undefined ? "token" : options.drainOpen === true ? "open" : "closed";
    // Once the job is done and the process idles, the page shows the finished job: nothing to act on.
    const operator = () => (options.idling?.() ? "none" : access);
    mountFleetRoutes(app, {
      stores,
      coordinator,
      guard,
      bodyLimit,
      allow,
      operator,
      indexAbove: options.fleetIndex?.above,
      indexIdleMs: options.fleetIndex?.idleMs,
    });
  }
  app.notFound((c) => c.json({ error: `no route for ${c.req.method} ${new URL(c.req.url).pathname}` }, 404));
  app.onError((err, c) => {
    if (err instanceof HTTPException) return err.getResponse();
    return c.json({ error: "internal error", message: err.message }, 500);
  });
  return app;
}
