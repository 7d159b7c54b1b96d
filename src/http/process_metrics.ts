/**
 * Process metrics of a served worker, in Web standards only: the event
 * loop's lag measured with a timer (how late a timer set for
 * `intervalMs` fires), and the heap from a provider the host supplies
 * (the runtime's `memoryUsage()` on Deno, Node and Bun: no standard
 * API reports it).
 *
 * @module
 */

/**
 * Memory of the process as the runtime reports it (the fields
 * the `memoryUsage()` of Deno, Node and Bun share).
 *
 * @example
 * ```ts
 * import type { MemoryUsage } from "@splitlease/splitlease/host";
 * const usage: MemoryUsage = { heapUsed: 1e6, heapTotal: 2e6, rss: 5e7 };
 * ```
 */
export interface MemoryUsage {
  /** Bytes of the JavaScript heap in use. */
  heapUsed: number;
  /** Bytes of the JavaScript heap reserved. */
  heapTotal: number;
  /** Resident set size of the process in bytes. */
  rss: number;
}

/**
 * One reading of the process metrics (a field is absent when unknown: no
 * memory provider, or no lag measured yet).
 *
 * @example
 * ```ts
 * import type { ProcessSample } from "@splitlease/splitlease/host";
 * const sample: ProcessSample = { eventLoopLagSeconds: 0.002, eventLoopLagMaxSeconds: 0.01 };
 * ```
 */
export interface ProcessSample {
  /** `MemoryUsage.heapUsed`. */
  heapUsedBytes?: number;
  /** `MemoryUsage.heapTotal`. */
  heapTotalBytes?: number;
  /** `MemoryUsage.rss`. */
  residentBytes?: number;
  /** How late the last lag timer fired (seconds). */
  eventLoopLagSeconds?: number;
  /** The largest lag measured in the last {@linkcode LAG_WINDOW_MS} (seconds). */
  eventLoopLagMaxSeconds?: number;
}

/** Default period of the lag timer (ms). */
export const LAG_INTERVAL_MS = 500;
/** Window of `eventLoopLagMaxSeconds` (ms). */
export const LAG_WINDOW_MS = 10_000;

/**
 * Options of {@linkcode startProcessMetrics}.
 *
 * @example
 * ```ts
 * import type { ProcessMetricsOptions } from "@splitlease/splitlease/host";
 * const options: ProcessMetricsOptions = { intervalMs: 250 };
 * ```
 */
export interface ProcessMetricsOptions {
  /** The runtime's memory reading (the host supplies it); without one no heap metrics. */
  memoryUsage?: () => MemoryUsage;
  /** Period of the lag timer (default {@linkcode LAG_INTERVAL_MS}). */
  intervalMs?: number;
  /** Monotonic clock in ms (default `performance.now`). */
  now?: () => number;
}

/**
 * A running process-metrics monitor.
 *
 * @example
 * ```ts
 * import { type ProcessMetrics, startProcessMetrics } from "@splitlease/splitlease/host";
 * const monitor: ProcessMetrics = startProcessMetrics();
 * monitor.stop();
 * ```
 */
export interface ProcessMetrics {
  /** The current reading. */
  sample(): ProcessSample;
  /** Stops the lag timer (a stopped monitor still reads the memory). */
  stop(): void;
}

/**
 * Starts measuring the event loop's lag: a timer set for `intervalMs`
 * that fires late by the time the loop was busy; `sample()` reports the
 * last lag, the largest in the last {@linkcode LAG_WINDOW_MS}, and the
 * memory provider's reading. Call `stop()` when done: the timer keeps a
 * runtime alive. `serve` runs one and passes it to {@linkcode createApp}
 * as `processMetrics`; a custom host can do the same.
 *
 * @example
 * ```ts
 * import { createApp, startProcessMetrics } from "@splitlease/splitlease/host";
 * import type { Worker } from "@splitlease/splitlease";
 * declare const worker: Worker;
 * declare const memoryUsage: () => { heapUsed: number; heapTotal: number; rss: number };
 * const monitor = startProcessMetrics({ memoryUsage }); // the runtime's memoryUsage()
 * const app = createApp({ worker, processMetrics: () => monitor.sample() });
 * ```
 */
export function startProcessMetrics(options: ProcessMetricsOptions = {}): ProcessMetrics {
  const intervalMs = options.intervalMs ?? LAG_INTERVAL_MS;
  const now = options.now ?? (() => performance.now());
  const lags: { at: number; lag: number }[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  const arm = () => {
    const expected = now() + intervalMs;
    timer = setTimeout(() => {
      const at = now();
      lags.push({ at, lag: Math.max(0, at - expected) });
      while (lags.length > 0 && lags[0].at < at - LAG_WINDOW_MS) lags.shift();
      if (!stopped) arm();
    }, intervalMs);
  };
  arm();
  return {
    sample() {
      const s: ProcessSample = {};
      const memory = options.memoryUsage?.();
      if (memory) {
        s.heapUsedBytes = memory.heapUsed;
        s.heapTotalBytes = memory.heapTotal;
        s.residentBytes = memory.rss;
      }
      if (lags.length > 0) {
        s.eventLoopLagSeconds = lags[lags.length - 1].lag / 1000;
        s.eventLoopLagMaxSeconds = Math.max(...lags.map((l) => l.lag)) / 1000;
      }
      return s;
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
