/**
 * Runtime-neutral glue of the adapters: join the coordinator, start the
 * worker, serve the app through a host-provided listener, wire signals to a
 * graceful drain within a deadline, and map the outcome to an exit code.
 * Each adapter (`adapters/deno.ts`, `bun.ts`, `node.ts`) only supplies a
 * {@linkcode ServeHost}.
 *
 * @module
 */
import { type JoinOptions, SplitCoordinator } from "../coordinator/coordinator.ts";
import type { CoordinatorTunables } from "../coordinator/config.ts";
import type { Clock, Coordinator, Logger } from "../coordinator/types.ts";
import { SplitleaseError } from "../errors.ts";
import { checkDrainOptions, createApp, type HttpApp } from "../http/app.ts";
import type { Store } from "../store/store.ts";
import { jsonLogger } from "./logger.ts";
import type { SplitSource } from "./source.ts";
import { startWorker, type Worker, type WorkerOutcome } from "./worker.ts";
import { pickTunables, TUNABLE_KEYS } from "../coordinator/config.ts";
import { keysOf, rejectUnknownKeys } from "../util/options.ts";
import { durationIssue, MAX_TIMER_MS } from "../util/timers.ts";

/**
 * Exit code of a drained worker.
 *
 * @example
 * ```ts
 * import { EXIT_DRAINED } from "@splitlease/splitlease/host";
 * console.log(EXIT_DRAINED); // 0
 * ```
 */
export const EXIT_DRAINED = 0;
/**
 * Exit code of a failed worker.
 *
 * @example
 * ```ts
 * import { EXIT_ERROR } from "@splitlease/splitlease/host";
 * console.log(EXIT_ERROR); // 1
 * ```
 */
export const EXIT_ERROR = 1;
/**
 * Exit code of a stalled job (quarantined splits remain) when stalls are fatal.
 *
 * @example
 * ```ts
 * import { EXIT_STALLED } from "@splitlease/splitlease/host";
 * console.log(EXIT_STALLED); // 3
 * ```
 */
export const EXIT_STALLED = 3;

/**
 * Exit code of a job whose planner failed `planAttempts` times in a row
 * (error code `PLAN_FAILED`): fix the planner or its input and restart; the
 * next leader plans again.
 *
 * @example
 * ```ts
 * import { EXIT_PLAN_FAILED } from "@splitlease/splitlease/host";
 * console.log(EXIT_PLAN_FAILED); // 4
 * ```
 */
export const EXIT_PLAN_FAILED = 4;

/**
 * Default `shutdownMarginMs`: time on top of `drainDeadlineMs` for a SIGTERM
 * drain before lanes are aborted. A pod's termination grace period should
 * exceed their sum plus one store write (`opTimeoutMs`, the leave).
 *
 * @example
 * ```ts
 * import { DEFAULT_SHUTDOWN_MARGIN_MS } from "./serve_core.ts";
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
export interface ServeOptions<D = unknown> extends CoordinatorTunables {
  /** The coordination store (kept open: the caller owns it). */
  store?: Store;
  /** Creates the store (closed by serve when the worker ends). */
  storeFactory?: () => Store | Promise<Store>;
  /** The user's source. */
  source: SplitSource<D>;
  /** Job name. */
  job: string;
  /** Instance id (pod name); generated when absent. */
  instance?: string;
  /** HTTP port (default 8080; 0 picks a free one). */
  port?: number;
  /** HTTP bind address (default `0.0.0.0`). */
  hostname?: string;
  /** Bearer token for `POST /drain` (without one the route answers 403 unless `drainOpen`). */
  drainToken?: string;
  /** Accept `POST /drain` without a token (default `false`; private networks only). */
  drainOpen?: boolean;
  /** Metric name prefix (default `etl_coordination_`). */
  metricsPrefix?: string;
  /** Stalled job is fatal (exit 3, default) or drains with a warning (exit 0). */
  stalledIsFatal?: boolean;
  /** How long a lane may ignore its abort (default 5000 ms). */
  abortGraceMs?: number;
  /** Commit cadence per lane (default 0: every commit writes). */
  commitIntervalMs?: number;
  /**
   * Time on top of `drainDeadlineMs` for the whole shutdown (release, leave,
   * close) before lanes are aborted (default 5000 ms).
   */
  shutdownMarginMs?: number;
  /** Structured logger (default: JSON lines on the console). */
  logger?: Logger;
  /** Clock (default: system clock). */
  clock?: Clock;
  /**
   * What the process does once the job is complete (the worker drained with
   * the job done, not on a shutdown request): `"exit"` (default) exits 0 at
   * once, which suits a Kubernetes Job; `"idle"` closes the store and keeps
   * serving HTTP (`/healthz` and `/readyz` 200, `idle: true`) until
   * SIGTERM/SIGINT, then exits 0, so a Deployment's restarted pod on a
   * finished job does not crash-loop. Stalls (exit 3), planner failures
   * (exit 4) and errors (exit 1) exit in both modes.
   */
  afterCompletion?: "exit" | "idle";
  /** Exit the process when the worker ends (default `true`). */
  exit?: boolean;
  /** Joins the coordinator (default `SplitCoordinator.join`); for tests and custom coordinators. */
  join?: (options: JoinOptions) => Promise<Coordinator>;
}

/**
 * What an adapter provides to {@linkcode serveWith}.
 *
 * @example
 * ```ts
 * import type { ServeHost } from "@splitlease/splitlease/host";
 * // What an adapter supplies: see adapters/deno.ts for a complete host.
 * declare const host: ServeHost;
 * console.log(host.runtime);
 * ```
 */
export interface ServeHost {
  /** Runtime name and version for the member record, e.g. `deno 2.9.6`. */
  runtime: string;
  /** Starts an HTTP server; resolves once listening. */
  listen(
    fetch: (request: Request) => Response | Promise<Response>,
    port: number,
    hostname: string,
  ): Promise<{ port: number; close(): Promise<void> }>;
  /** Subscribes to process signals; returns an unsubscribe function. */
  onSignal(signals: readonly string[], handler: (signal: string) => void): () => void;
  /** Exits with `code` (ends the running program). */
  exit(code: number): void;
}

/**
 * How a served worker ended.
 *
 * @example
 * ```ts
 * import type { ServeResult, Service } from "@splitlease/splitlease/host";
 * declare const service: Service;
 * const result: ServeResult = await service.done;
 * console.log(result.exitCode, result.outcome.kind);
 * ```
 */
export interface ServeResult {
  /** The worker's outcome. */
  outcome: WorkerOutcome;
  /** The process exit code it maps to (0 drained, 3 stalled, 1 error). */
  exitCode: number;
}

/**
 * A running service.
 *
 * @example
 * ```ts
 * import type { Service } from "@splitlease/splitlease/host";
 * declare const service: Service;
 * console.log(`listening on ${service.port}`);
 * await service.shutdown("maintenance");
 * ```
 */
export interface Service {
  /** The worker. */
  readonly worker: Worker;
  /** The coordinator. */
  readonly coordinator: Coordinator;
  /** The HTTP app. */
  readonly app: HttpApp;
  /** The port the server listens on. */
  readonly port: number;
  /** Resolves when the worker ended and the server and store are closed. */
  readonly done: Promise<ServeResult>;
  /** Starts a graceful shutdown (as SIGTERM does) and resolves with the result. */
  shutdown(reason?: string): Promise<ServeResult>;
}

/** Every option `serve` takes (the tunables included): anything else is a typo. */
const SERVE_KEYS: readonly string[] = [
  ...TUNABLE_KEYS,
  ...keysOf<Omit<ServeOptions, keyof CoordinatorTunables>>({
    store: true,
    storeFactory: true,
    source: true,
    job: true,
    instance: true,
    port: true,
    hostname: true,
    drainToken: true,
    drainOpen: true,
    metricsPrefix: true,
    stalledIsFatal: true,
    abortGraceMs: true,
    commitIntervalMs: true,
    shutdownMarginMs: true,
    afterCompletion: true,
    logger: true,
    clock: true,
    exit: true,
    join: true,
  }),
];

/**
 * Refuses unknown keys, out-of-range durations of the worker and the
 * shutdown, and unusable drain options before anything connects (the
 * coordinator tunables are checked by the join).
 */
function checkServeOptions(options: ServeOptions<unknown>): void {
  if (!options || typeof options !== "object") throw new SplitleaseError("INVALID_CONFIG", "serve needs an options object");
  rejectUnknownKeys(options, SERVE_KEYS, "serve");
  for (const key of ["shutdownMarginMs", "abortGraceMs", "commitIntervalMs"] as const) {
    if (options[key] === undefined) continue;
    const issue = durationIssue(key, options[key]);
    if (issue) throw new SplitleaseError("INVALID_CONFIG", `serve: ${issue}`);
  }
  if (options.afterCompletion !== undefined && options.afterCompletion !== "exit" && options.afterCompletion !== "idle") {
    throw new SplitleaseError(
      "INVALID_CONFIG",
      `serve: afterCompletion must be "exit" or "idle", got ${JSON.stringify(options.afterCompletion)}`,
    );
  }
  try {
    checkDrainOptions(options);
  } catch (e) {
    if (e instanceof SplitleaseError) throw new SplitleaseError(e.code, `serve: ${e.message}`);
    throw e;
  }
}

/**
 * Maps a worker outcome to a process exit code: drained 0, stalled 3 (or 0
 * when stalls are not fatal: the worker then reports `drained`), error 1.
 *
 * @example
 * ```ts
 * import { exitCodeFor } from "@splitlease/splitlease/host";
 * import { type WorkerOutcome } from "@splitlease/splitlease";
 * declare const outcome: WorkerOutcome;
 * const code = exitCodeFor(outcome); // 0, 1 or 3
 * ```
 */
export function exitCodeFor(outcome: WorkerOutcome): number {
  switch (outcome.kind) {
    case "drained":
      return EXIT_DRAINED;
    case "stalled":
      return EXIT_STALLED;
    default:
      return outcome.error instanceof SplitleaseError && outcome.error.code === "PLAN_FAILED" ? EXIT_PLAN_FAILED : EXIT_ERROR;
  }
}


/**
 * Serves a source on a host: joins, starts the worker and the app, drains on
 * SIGTERM/SIGINT (a second signal aborts lanes at once), and exits with
 * {@linkcode exitCodeFor} when `exit` is not `false`. Adapters call it with
 * their {@linkcode ServeHost}; a failed join rejects (and exits 1).
 *
 * @example
 * ```ts
 * import { serveWith, type ServeHost } from "@splitlease/splitlease/host";
 * import { type SplitSource, MemoryStore } from "@splitlease/splitlease";
 * declare const host: ServeHost;
 * declare const source: SplitSource;
 * const service = await serveWith({ store: new MemoryStore(), source, job: "demo", port: 0 }, host);
 * const { exitCode } = await service.done;
 * ```
 */
export async function serveWith<D>(options: ServeOptions<D>, host: ServeHost): Promise<Service> {
  const log = options.logger ?? jsonLogger({ base: options.instance ? { instance: options.instance } : {} });
  const exit = options.exit ?? true;
  let store: Store | undefined;
  const ownsStore = !options.store;
  let coordinator: Coordinator | undefined;
  try {
    checkServeOptions(options as ServeOptions<unknown>);
    if (options.store) store = options.store;
    else if (options.storeFactory) store = await options.storeFactory();
    else throw new SplitleaseError("INVALID_CONFIG", "serve needs a store or a storeFactory");
    const tunables = pickTunables(options);
    const join = options.join ?? ((o: JoinOptions) => SplitCoordinator.join(o));
    coordinator = await join({
      ...tunables,
      store,
      job: options.job,
      instance: options.instance,
      fingerprint: options.source.fingerprint(),
      planner: (ctx) => options.source.plan(ctx),
      clock: options.clock,
      logger: log,
      runtime: host.runtime,
    });
  } catch (e) {
    log("error", "startup failed", { event: "startupFailed", error: e });
    if (ownsStore) await store?.close().catch(() => {});
    if (exit) host.exit(EXIT_ERROR);
    throw e;
  }
  const worker = startWorker({
    coordinator,
    source: options.source,
    maxInFlight: options.maxInFlight,
    logger: log,
    clock: options.clock,
    stalledIsFatal: options.stalledIsFatal,
    abortGraceMs: options.abortGraceMs,
    commitIntervalMs: options.commitIntervalMs,
  });
  // Each part is at most MAX_TIMER_MS; their sum may not be (a longer timer fires at once).
  const deadlineMs = Math.min(MAX_TIMER_MS, (options.drainDeadlineMs ?? 10_000) + (options.shutdownMarginMs ?? DEFAULT_SHUTDOWN_MARGIN_MS));
  let signals = 0;
  // afterCompletion "idle": set once the job completed and the process stays up; ended by a signal or shutdown().
  let idling = false;
  let stopRequested = false;
  let endIdle: (() => void) | undefined;
  const shutdown = (reason: string, deadline = deadlineMs) => {
    stopRequested = true;
    endIdle?.();
    return worker.shutdown({ reason, deadlineMs: deadline });
  };
  const app = createApp({
    worker,
    store,
    drainToken: options.drainToken,
    drainOpen: options.drainOpen,
    metricsPrefix: options.metricsPrefix,
    drainDeadlineMs: deadlineMs,
    onDrain: (d) => void shutdown("POST /drain", d ?? deadlineMs),
    idling: () => idling,
  });
  let server: { port: number; close(): Promise<void> };
  try {
    server = await host.listen(app.fetch, options.port ?? 8080, options.hostname ?? "0.0.0.0");
  } catch (e) {
    log("error", "HTTP server failed to start", { event: "startupFailed", error: e });
    await worker.shutdown({ reason: "listen failed", deadlineMs }).catch(() => {});
    if (ownsStore) await store.close().catch(() => {});
    if (exit) host.exit(EXIT_ERROR);
    throw e;
  }
  log("info", "serving", { event: "serving", port: server.port, runtime: host.runtime, job: options.job });
  const unsubscribe = host.onSignal(["SIGTERM", "SIGINT"], (signal) => {
    signals++;
    if (idling) {
      log("info", `${signal}: leaving the idle state`, { event: "signal", signal });
      void shutdown(signal);
    } else if (signals === 1) {
      log("info", `${signal}: draining`, { event: "signal", signal, deadlineMs });
      void shutdown(signal);
    } else {
      log("warn", `${signal} again: aborting lanes now`, { event: "signal", signal });
      void shutdown(signal, 0);
    }
  });
  const done = worker.done.then(async (outcome): Promise<ServeResult> => {
    const exitCode = exitCodeFor(outcome);
    if (
      options.afterCompletion === "idle" && exitCode === EXIT_DRAINED && outcome.kind === "drained" &&
      outcome.reason !== "shutdown" && !stopRequested
    ) {
      // The job is done: a restart would find it done and exit at once, which
      // a Deployment restarts in a loop. Stay up, idle, until told to stop.
      if (ownsStore) await store.close().catch((e) => log("warn", "store close failed", { error: e }));
      const stopped = new Promise<void>((resolve) => (endIdle = resolve));
      idling = true;
      log("info", "idling until SIGTERM (afterCompletion: idle)", {
        event: "idle",
        reason: outcome.reason,
      });
      if (!stopRequested) await stopped;
      idling = false;
      unsubscribe();
      await server.close().catch((e) => log("warn", "HTTP server close failed", { error: e }));
    } else {
      unsubscribe();
      await server.close().catch((e) => log("warn", "HTTP server close failed", { error: e }));
      if (ownsStore) await store.close().catch((e) => log("warn", "store close failed", { error: e }));
    }
    log(exitCode === 0 ? "info" : "error", "exiting", { event: "exit", exitCode, outcome: outcome.kind });
    if (exit) host.exit(exitCode);
    return { outcome, exitCode };
  });
  return {
    worker,
    coordinator,
    app,
    port: server.port,
    done,
    shutdown: (reason = "shutdown") => shutdown(reason).then(() => done),
  };
}
