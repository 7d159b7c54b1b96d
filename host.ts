/**
 * For custom runtimes and hosting: what the Deno, Bun and Node adapters are
 * built from — the serving loop over a host's HTTP server and signals, the
 * Hono app (health, readiness, metrics, status, drain, fleet), its metrics
 * registry, the JSON logger, and the mapping of outcomes to exit codes.
 *
 * @example
 * ```ts
 * import { createApp } from "@splitlease/splitlease/host";
 * import type { Coordinator } from "@splitlease/splitlease";
 * declare const coordinator: Coordinator;
 * const app = createApp({ coordinator });
 * const res = await app.request("/healthz");
 * console.log(res.status); // 200
 * ```
 *
 * @module
 */
export {
  EXIT_COMPLETE_WITH_SKIPS,
  EXIT_DELETED,
  EXIT_DRAINED,
  EXIT_ERROR,
  EXIT_PLAN_FAILED,
  EXIT_STALLED,
  EXIT_TIMEOUT,
  EXIT_UNREACHABLE,
  exitCodeFor,
  exitCodeForResult,
  exitCodeForWait,
} from "./src/runtime/exit_codes.ts";
export {
  type ServeHost,
  type ServeResult,
  type Service,
  serveWith,
} from "./src/serve/serve_core.ts";
export { type ServeOptions } from "./src/serve/serve_options.ts";
export type { HostOptions } from "./src/host/host_options.ts";
export type { WorkerBaseOptions } from "./src/runtime/worker_types.ts";
// Not exported: renderMetrics (createApp and serveWith serve /metrics, and
// `await app.request("/metrics")` gives the same text to merge into a host's
// own endpoint or push), timingSafeEqual and the text-format helpers (the
// registry applies them).
export { type AppOptions, createApp, type HonoApp, type HttpApp } from "./src/http/app.ts";
export type { DrainAuthOptions } from "./src/http/drain_auth.ts";
export {
  type MemoryUsage,
  type ProcessMetrics,
  type ProcessMetricsOptions,
  type ProcessSample,
  startProcessMetrics,
} from "./src/http/process_metrics.ts";
export { type Labels, type MetricType, MetricsRegistry, PROMETHEUS_CONTENT_TYPE } from "./src/http/metrics.ts";
export { formatLogLine, jsonLogger, type JsonLoggerOptions, type LogLevel, silentLogger } from "./src/util/logger.ts";
// What custom runtimes and hosts type their code with (moved from the package's root entry).
export type { CoordinatorTunables } from "./src/coordinator/config.ts";
export type { CommitOptions, HeldSplitStatus, LostReason, SplitSpec } from "./src/coordinator/types.ts";
export type { DescriptorSchema, LaneCommitOptions } from "./src/runtime/source.ts";
export type { ShutdownOptions } from "./src/runtime/worker_types.ts";
export type { Logger } from "./src/util/logger.ts";
