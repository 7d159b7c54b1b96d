/**
 * The Hono app every adapter serves: health, readiness, Prometheus metrics,
 * status and a drain endpoint (docs/DESIGN.md, "Runtime").
 *
 * @module
 */
import { Hono, type MiddlewareHandler } from "hono";
import { bearerAuth } from "hono/bearer-auth";
import { bodyLimit } from "hono/body-limit";
import { HTTPException } from "hono/http-exception";
import type { Coordinator, CoordinatorStats, CoordinatorStatus } from "../coordinator/types.ts";
import { SplitleaseError } from "../errors.ts";
import type { Worker } from "../runtime/worker.ts";
import type { Store } from "../store/store.ts";
import { durationIssue, MAX_TIMER_MS } from "../util/timers.ts";
import { newHistogram } from "../coordinator/stats.ts";
import { mountFleetRoutes } from "./fleet_routes.ts";
import { MetricsRegistry, PROMETHEUS_CONTENT_TYPE } from "./metrics.ts";

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
export interface AppOptions {
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
   * Bearer token required by `POST /drain` (RFC 6750 characters:
   * `[A-Za-z0-9._~+/-]`, optionally ending in `=`). Without one the route
   * answers 403 unless `drainOpen` is set.
   */
  drainToken?: string;
  /**
   * Accept `POST /drain` without a token (default `false`: without a
   * `drainToken` the route is refused with 403). Only for an app bound to a
   * private address; it cannot be combined with `drainToken`.
   */
  drainOpen?: boolean;
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
}

const encoder = new TextEncoder();

/** Largest `POST /drain` body read (bytes); a larger one is refused with 413 before it is read whole. */
const DRAIN_BODY_LIMIT = 4096;
/** RFC 6750 token68: the only tokens a Bearer header can carry. */
const BEARER_TOKEN = /^[A-Za-z0-9._~+/-]+=*$/;

/**
 * Compares two strings in time that depends only on the expected value's
 * length, not on where they differ.
 *
 * @example
 * ```ts
 * timingSafeEqual("s3cret", "s3cret"); // true
 * ```
 */
export function timingSafeEqual(given: string, expected: string): boolean {
  const a = encoder.encode(given);
  const b = encoder.encode(expected);
  let diff = a.length ^ b.length;
  for (let i = 0; i < b.length; i++) diff |= (i < a.length ? a[i] : 0) ^ b[i];
  return diff === 0;
}

/**
 * Label values every labelled counter renders from the first scrape on (at
 * 0 until the first event), so `rate()` and `increase()` see the series
 * before anything happens. A value the coordinator reports beyond these is
 * rendered too.
 */
const KNOWN_LABEL_VALUES = {
  /** How a split was gained (`kind` of the `Gained split` log line). */
  acquisitions: ["claim", "grant", "takeover", "reclaim", "handoff", "resume"],
  /** Why a split was lost (`LostReason`). */
  losses: ["fenced", "expired", "starved", "revoked"],
  /** What became of a revocation. */
  revocations: ["requested", "drained", "forced", "cancelled", "withdrawn", "fenced"],
  /** Outcome of a store write. */
  writes: ["ok", "conflict", "unavailable", "error"],
  /** Store operations timed by the coordinator. */
  storeOps: ["create", "update", "delete", "get", "list"],
} as const;

/**
 * Renders a coordinator's (and optionally a worker's) metrics in the
 * Prometheus text format. Every sample carries `splitlease_job` (the job
 * name: aggregate by it); the info metric names the worker (instance id)
 * and session in `worker` and `session`, never in `job` or `instance`,
 * which Prometheus attaches to every target. Job-wide gauges (`splits_planned`,
 * `splits_runnable`, `splits_unclaimed`, `splits_completed`,
 * `splits_quarantined`, `splits_cancelled`, `live_workers`) are exported by
 * the leader only (the replica whose `leader` gauge is 1), so any
 * aggregation over replicas counts them once; elsewhere they have no sample.
 *
 * @example
 * ```ts
 * import { type Coordinator } from "@splitlease/splitlease";
 * declare const coordinator: Coordinator;
 * const text = renderMetrics(coordinator.status(), coordinator.stats());
 * ```
 */
export function renderMetrics(
  status: CoordinatorStatus,
  stats: CoordinatorStats,
  worker?: Worker,
  prefix = "etl_coordination_",
): string {
  const r = new MetricsRegistry(prefix, { splitlease_job: status.job });
  const draining = status.held.filter((h) => h.draining).length;
  r.gauge("info", "Identity of this worker: instance id and session (value is always 1).").set(1, {
    worker: status.instance,
    session: status.session,
  });
  r.gauge("up", "1 while the coordinator is starting, running or draining.").set(
    status.state === "failed" || status.state === "stopped" ? 0 : 1,
  );
  r.gauge("connected", "1 while heartbeats succeed.").set(status.connected ? 1 : 0);
  r.gauge("leader", "1 on the leader, the one replica that exports the job-wide gauges.").set(status.isLeader ? 1 : 0);
  r.gauge("splits_owned", "Splits held by this instance.").set(status.held.length);
  r.gauge("splits_owned_weight", "Total weight of the splits held by this instance.").set(
    status.held.reduce((s, h) => s + h.weight, 0),
  );
  r.gauge("idle", "1 when this instance holds no split.").set(status.held.length === 0 ? 1 : 0);
  r.gauge("splits_draining", "Held splits under revocation.").set(draining);
  // Job-wide: only the leader knows them first hand (members hold a copy from
  // its last heartbeat); exported once, by the leader, so sum() and max() agree.
  const jobWide = (name: string, help: string, value: number) => {
    const g = r.gauge(name, `${help} Job-wide, exported by the leader only.`);
    if (status.isLeader) g.set(value);
  };
  jobWide("splits_planned", "Splits in the published plan.", status.counts.planned);
  jobWide("splits_runnable", "Runnable splits (owned or not).", status.counts.runnable);
  jobWide("splits_unclaimed", "Runnable splits with no live owner (the backlog).", status.counts.unclaimed);
  jobWide("splits_completed", "Completed splits.", status.counts.completed);
  jobWide("splits_quarantined", "Quarantined (poison) splits.", status.counts.quarantined);
  jobWide("splits_cancelled", "Cancelled splits.", status.counts.cancelled);
  jobWide("live_workers", "Live members, standbys included.", status.members);
  const counterBy = (name: string, help: string, label: string, known: readonly string[], values: Record<string, number>) => {
    const c = r.counter(name, help);
    for (const k of known) c.set(values[k] ?? 0, { [label]: k });
    for (const [k, v] of Object.entries(values)) if (!known.includes(k)) c.set(v, { [label]: k });
  };
  counterBy("acquisitions_total", "Splits gained, by reason.", "reason", KNOWN_LABEL_VALUES.acquisitions, stats.acquisitions);
  counterBy("split_losses_total", "Splits lost, by reason.", "reason", KNOWN_LABEL_VALUES.losses, stats.losses);
  r.counter("releases_total", "Graceful releases.").set(stats.releases);
  counterBy("revocations_total", "Revocations, by outcome.", "outcome", KNOWN_LABEL_VALUES.revocations, stats.revocations);
  counterBy("writes_total", "Store writes, by outcome.", "outcome", KNOWN_LABEL_VALUES.writes, stats.writes);
  r.counter("self_fences_total", "Self-fences after heartbeat starvation.").set(stats.selfFences);
  r.counter("claim_attempts_total", "Ownership writes tried (claims, resumes, a leader's takeovers), won or lost.").set(stats.claimAttempts);
  r.counter("records_replaced_total", "Unreadable control records replaced by CAS.").set(stats.recordsReplaced);
  r.counter("plan_failures_total", "Failed planner runs while leading.").set(stats.planFailures);
  const ops = r.histogram("store_op_duration_seconds", "Store operation latency, by op.");
  for (const op of KNOWN_LABEL_VALUES.storeOps) ops.set(stats.storeOpSeconds[op] ?? newHistogram(), { op });
  for (const [op, h] of Object.entries(stats.storeOpSeconds)) {
    if (!(KNOWN_LABEL_VALUES.storeOps as readonly string[]).includes(op)) ops.set(h, { op });
  }
  r.histogram("handover_seconds", "Steal requested to thief gained.").set(stats.handoverSeconds);
  if (worker) {
    const w = worker.stats();
    r.gauge("lanes_running", "Lanes running now.").set(w.running);
    r.gauge("lanes_queued", "Gained splits waiting for a free lane.").set(w.queued);
    r.counter("lanes_abandoned_total", "Lanes that ignored their abort beyond the grace period.").set(w.abandoned);
    r.counter("lane_failures_total", "Failed tenancies (thrown run, fail, bad descriptor).").set(w.failed);
    r.counter("lane_commits_total", "Progress writes that landed.").set(w.commits);
    r.counter("records_committed_total", "Records covered by commits that landed.").set(w.recordsCommitted);
    r.counter("splits_completed_here_total", "Splits completed by this worker.").set(w.completed);
  }
  return r.render();
}

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
export function createApp(options: AppOptions): HttpApp {
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
    const body = renderMetrics(coordinator.status(), coordinator.stats(), worker, prefix);
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

/**
 * Throws `INVALID_CONFIG` unless the drain options are usable: a token of
 * RFC 6750 characters (a Bearer header cannot carry others), and not both a
 * token and `drainOpen`. `serve` calls it before joining.
 */
export function checkDrainOptions(options: Pick<AppOptions, "drainToken" | "drainOpen">): void {
  const token = options.drainToken;
  if (token !== undefined && options.drainOpen) {
    throw new SplitleaseError("INVALID_CONFIG", "drainOpen and drainToken exclude each other; give one");
  }
  if (token !== undefined && (typeof token !== "string" || !BEARER_TOKEN.test(token))) {
    throw new SplitleaseError(
      "INVALID_CONFIG",
      `drainToken must be a bearer token of [A-Za-z0-9._~+/-] characters, optionally ending in "=" ` +
        `(RFC 6750), got ${typeof token === "string" ? `a string of ${token.length} characters` : typeof token}`,
    );
  }
}

/**
 * Who may `POST /drain`: the bearer token when one is configured (compared
 * in constant time), everybody with `drainOpen`, nobody otherwise. A drain
 * stops the worker, so an unconfigured route is closed rather than open.
 */
function drainGuardOf(options: AppOptions): MiddlewareHandler {
  checkDrainOptions(options);
  const token = options.drainToken;
  if (token !== undefined) {
    const challenge = 'Bearer realm="splitlease"';
    return bearerAuth({
      verifyToken: (given) => timingSafeEqual(given, token),
      realm: "splitlease",
      noAuthenticationHeader: { message: { error: "missing bearer token" }, wwwAuthenticateHeader: challenge },
      invalidAuthenticationHeader: {
        message: { error: "malformed Authorization header: expected Bearer <token>" },
        wwwAuthenticateHeader: `${challenge}, error="invalid_request"`,
      },
      invalidToken: {
        message: { error: "invalid bearer token" },
        wwwAuthenticateHeader: `${challenge}, error="invalid_token"`,
      },
    });
  }
  if (options.drainOpen === true) return (_c, next) => next();
  return (c) =>
    Promise.resolve(c.json({
      error: `${c.req.method} ${new URL(c.req.url).pathname} is disabled: no drainToken is configured (set drainToken, ` +
        "or drainOpen: true to accept drains and operator actions without a token on a private network)",
    }, 403));
}
