/**
 * The options of `serve` (and of `serveWith`), their defaults, and the
 * check that refuses unusable ones before anything connects.
 *
 * @module
 */
import { SplitleaseError } from "../errors.ts";
import { HOST_SCHEMA, type HostOptions } from "../host/host_options.ts";
import type { HonoApp } from "../http/app.ts";
import { checkDrainOptions, type DrainAuthOptions } from "../http/drain_auth.ts";
import * as z from "zod";
import { choiceOption, durationOption, type Equal, givenOption, parseOptions } from "../util/option_schema.ts";
import { LANE_OPTIONS } from "../runtime/worker_options.ts";

/**
 * Default `shutdownMarginMs`: time on top of `drainDeadlineMs` for a SIGTERM
 * drain before lanes are aborted. A pod's termination grace period should
 * exceed their sum plus one store write (`opTimeoutMs`, the leave).
 *
 * @example
 * ```ts
 * import { DEFAULT_SHUTDOWN_MARGIN_MS } from "./serve_options.ts";
 * const graceSeconds = (10_000 + DEFAULT_SHUTDOWN_MARGIN_MS + 5_000) / 1000; // 20
 * ```
 */
export const DEFAULT_SHUTDOWN_MARGIN_MS = 5000;

/**
 * Options of the adapters' `serve` (and of {@linkcode serveWith}).
 *
 * @example
 * ```ts
 * import { MemoryStore, type SplitSource } from "@splitlease/splitlease";
 * import { type ServeOptions } from "@splitlease/splitlease/host";
 * declare const source: SplitSource;
 * const options: ServeOptions<unknown> = { store: new MemoryStore(), source, job: "backfill", port: 8080 };
 * ```
 */
export interface ServeOptions<D = unknown> extends HostOptions<D>, DrainAuthOptions {
  /** Instance id (pod name); generated when absent. */
  instance?: string;
  /** HTTP port (default 8080; 0 picks a free one). */
  port?: number;
  /** HTTP bind address (default `0.0.0.0`). */
  hostname?: string;
  /** Metric name prefix (default `etl_coordination_`). */
  metricsPrefix?: string;
  /**
   * Adds your routes and middleware to the served Hono app, before the
   * built-in ones (`/healthz`, `/metrics`, …): `routes: (app) =>
   * app.get("/hello", (c) => c.text("hi"))`. Middleware (`app.use`) also
   * runs for the built-in routes; a route on a built-in path replaces it.
   */
  routes?: (app: HonoApp) => unknown;
  /**
   * What a stall (only quarantined splits left) does to the process:
   * `"exit"` (default) ends it as `stalledIsFatal` says (exit 3, or 0);
   * `"wait"` keeps it in the job, serving the fleet page, `/fleet`, the
   * operator routes and (when it leads) the job-wide metrics, until an
   * operator's requeue or cancel reopens the job and it takes work again.
   * With `maxInFlight: 0` it is an observer: it holds no work and outlives
   * the stalls of the workers it watches. Default `"exit"`, or `"wait"`
   * with `afterCompletion: "idle"` and `stalledIsFatal: false` (idling on
   * a stall would leave the job, and a requeued split would wait for ever).
   */
  afterStall?: "exit" | "wait";
  /**
   * Time on top of `drainDeadlineMs` for the whole shutdown (release, leave,
   * close) before lanes are aborted (default 5000 ms).
   */
  shutdownMarginMs?: number;
  /**
   * What the process does once the job is complete (the worker drained with
   * the job done, not on a shutdown request): `"exit"` (default) exits 0 at
   * once, which suits a Kubernetes Job; `"idle"` leaves the job and keeps
   * serving HTTP (`/healthz` and `/readyz` 200, `idle: true`; the fleet
   * page and `/fleet` show the finished job read-only, so the store stays
   * open until then) until SIGTERM/SIGINT, then exits 0, so a Deployment's
   * restarted pod on a finished job does not crash-loop and an observer
   * keeps showing the result. Stalls (exit 3, unless `afterStall`
   * is `"wait"`), planner failures (exit 4) and errors (exit 1) exit in
   * both modes.
   */
  afterCompletion?: "exit" | "idle";
  /** Exit the process when the worker ends (default `true`). */
  exit?: boolean;
}

/**
 * Every option `serve` takes and its check: a host's (the coordinator
 * tunables, which the join checks; what it hands its worker, with the
 * worker's checks, `afterStall` defaulting as `afterStallOf` says) and its
 * own. Anything else is a typo. Defaults the worker or the join fill in are
 * theirs.
 */
export const SERVE_SCHEMA = HOST_SCHEMA.extend({
  instance: givenOption<string>().optional(),
  port: givenOption<number>().optional(),
  hostname: givenOption<string>().optional(),
  drainToken: givenOption<string>().optional(),
  drainOpen: givenOption<boolean>().optional(),
  metricsPrefix: givenOption<string>().optional(),
  routes: z.custom<(app: HonoApp) => unknown>((v) => typeof v === "function", {
    error: (iss) => `{key} must be a function that adds routes to the app, got ${typeof iss.input}`,
  }).optional(),
  shutdownMarginMs: durationOption().optional(),
  afterCompletion: choiceOption(["exit", "idle"]).optional(),
  afterStall: LANE_OPTIONS.afterStall.optional(),
  exit: givenOption<boolean>().optional(),
});
const _serveOptionsAreTheSchema: Equal<keyof ServeOptions<unknown>, keyof z.input<typeof SERVE_SCHEMA>> = true;

/**
 * Refuses unknown keys, out-of-range durations of the worker and the
 * shutdown, and unusable drain options before anything connects (the
 * coordinator tunables are checked by the join).
 */
export function checkServeOptions(options: ServeOptions<unknown>): void {
  parseOptions(SERVE_SCHEMA, options, "serve");
  try {
    checkDrainOptions(options);
  } catch (e) {
    if (e instanceof SplitleaseError) throw new SplitleaseError(e.code, `serve: ${e.message}`);
    throw e;
  }
}
