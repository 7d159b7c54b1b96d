/**
 * Runtime-neutral glue of the adapters: join the coordinator, start the
 * worker, serve the app through a host-provided listener, wire signals to a
 * graceful drain within a deadline, and map the outcome to an exit code.
 * Each adapter (`adapters/deno.ts`, `bun.ts`, `node.ts`) only supplies a
 * {@linkcode ServeHost}.
 *
 * @module
 */
import type { Coordinator } from "../coordinator/types.ts";
import { createApp, type HonoApp } from "../http/app.ts";
import { type MemoryUsage, startProcessMetrics } from "../http/process_metrics.ts";
import { jsonLogger } from "../util/logger.ts";
import type { Worker, WorkerOutcome } from "../runtime/worker_types.ts";
import { TUNABLE_DEFAULTS } from "../coordinator/config.ts";
import { MAX_TIMER_MS } from "../util/timers.ts";
import { EXIT_ERROR, exitCodeFor } from "../runtime/exit_codes.ts";
import { DEFAULT_SHUTDOWN_MARGIN_MS, type ServeOptions } from "./serve_options.ts";
import { startServed } from "./serve_start.ts";
import { tidyAfterOutcome } from "../host/host_start.ts";
import { systemClock } from "../coordinator/clock.ts";
import { ServeLifecycle } from "./serve_lifecycle.ts";


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
  /**
   * The runtime's memory reading for the process metrics on `/metrics`
   * (the runtime's `memoryUsage()`); without it `/metrics`
   * has the event-loop lag but no heap.
   */
  memoryUsage?: () => MemoryUsage;
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
  /** The worker running the source's lanes (its `done` is what `done` waits for). */
  readonly worker: Worker;
  /** The worker's coordinator (for `status()`, `stats()`, operator actions). */
  readonly coordinator: Coordinator;
  /**
   * The HTTP app being served (a Hono app: `service.app.request("/status")`
   * answers in process; add routes with serve's `routes` option, which runs
   * before the built-in routes are added).
   */
  readonly app: HonoApp;
  /** The port the server listens on. */
  readonly port: number;
  /** Resolves when the worker ended and the server and store are closed. */
  readonly done: Promise<ServeResult>;
  /** Starts a graceful shutdown (as SIGTERM does) and resolves with the result. */
  shutdown(reason?: string): Promise<ServeResult>;
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
  // Traced by the coordinator and the worker themselves (docs/OPERATIONS.md, "Tracing").
  const log = options.logger ?? jsonLogger({ base: options.instance ? { instance: options.instance } : {} });
  const exit = options.exit ?? true;
  const { store, stores, ownsStore, coordinator, worker } = await startServed(options, host, log);
  const closeStore = () =>
    ownsStore ? Promise.all(stores.map((s) => s.close().catch((e) => log("warn", "store close failed", { error: e })))) : undefined;
  // Each part is at most MAX_TIMER_MS; their sum may not be (a longer timer fires at once).
  const deadlineMs = Math.min(MAX_TIMER_MS, (options.drainDeadlineMs ?? TUNABLE_DEFAULTS.drainDeadlineMs) + (options.shutdownMarginMs ?? DEFAULT_SHUTDOWN_MARGIN_MS));
  const life = new ServeLifecycle((o) => worker.shutdown(o), deadlineMs, log);
  const processMetrics = startProcessMetrics({ memoryUsage: host.memoryUsage });
  const app = createApp({
    worker,
    // A sharded job's page and operator routes read and act on every shard.
    ...(stores.length > 1 ? { stores } : { store }),
    processMetrics: () => processMetrics.sample(),
    drainToken: options.drainToken,
    drainOpen: options.drainOpen,
    metricsPrefix: options.metricsPrefix,
    drainDeadlineMs: deadlineMs,
    onDrain: (d) => void life.shutdown("POST /drain", d ?? deadlineMs),
    idling: () => life.idling,
    routes: options.routes,
  });
  let server: { port: number; close(): Promise<void> };
  try {
    server = await host.listen(app.fetch, options.port ?? 8080, options.hostname ?? "0.0.0.0");
  } catch (e) {
    log("error", "HTTP server failed to start", { event: "startupFailed", error: e });
    processMetrics.stop();
    await worker.shutdown({ reason: "listen failed", deadlineMs }).catch(() => {});
    if (ownsStore) await Promise.all(stores.map((s) => s.close().catch(() => {})));
    if (exit) host.exit(EXIT_ERROR);
    throw e;
  }
  log("info", "serving", { event: "serving", port: server.port, runtime: host.runtime, job: options.job, ...(stores.length > 1 ? { shards: stores.length } : {}) });
  const unsubscribe = host.onSignal(["SIGTERM", "SIGINT"], (signal) => life.signal(signal));
  const closeServer = () => server.close().catch((e) => log("warn", "HTTP server close failed", { error: e }));
  const done = worker.done.then(async (outcome): Promise<ServeResult> => {
    const exitCode = exitCodeFor(outcome);
    await tidyAfterOutcome(stores, outcome, coordinator.status().instance, log, () => (options.clock ?? systemClock).wallNow());
    if (life.idlesAfter(outcome, exitCode, options.afterCompletion)) {
      // The job is done; the HTTP app stays (probes, /status) and so does the
      // store: the fleet page and /fleet show the finished job from its records.
      await life.idle(outcome.kind === "drained" ? outcome.reason : outcome.kind);
      unsubscribe();
      await closeServer();
      await closeStore();
    } else {
      unsubscribe();
      await closeServer();
      await closeStore();
    }
    processMetrics.stop();
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
    shutdown: (reason = "shutdown") => life.shutdown(reason).then(() => done),
  };
}
