/**
 * The start of `serve`: check the options, then the host path (open the
 * store, join the coordinator, which traces itself, start the worker); a
 * failure is logged and the process exits 1 (when it owns the exit).
 *
 * @module
 */
import type { Coordinator } from "../coordinator/types.ts";
import type { Logger } from "../util/logger.ts";
import { startHosted } from "../host/host_start.ts";
import { EXIT_ERROR } from "../runtime/exit_codes.ts";
import type { Worker } from "../runtime/worker_types.ts";
import type { Store } from "../store/store.ts";
import { checkServeOptions, type ServeOptions } from "./serve_options.ts";

/** What a served process started. */
export interface Served {
  /** The store (of a sharded job: shard 0's). */
  store: Store;
  /** Every shard's store in shard order (`[store]` for an unsharded job). */
  stores: Store[];
  /** Whether serve opened it (from `storeFactory`) and so closes it. */
  ownsStore: boolean;
  /** The coordinator. */
  coordinator: Coordinator;
  /** The worker running the source over it. */
  worker: Worker;
}

/**
 * What a stall does to a served worker: `afterStall` when given; else
 * `"wait"` for a process that idles after completion and survives stalls
 * (`afterCompletion: "idle"`, `stalledIsFatal: false`): idling on a stall
 * would leave the job, and a split requeued later would wait for ever.
 *
 * @example
 * ```ts ignore
 * afterStallOf({ afterCompletion: "idle", stalledIsFatal: false, ...rest }); // "wait"
 * ```
 */
export function afterStallOf(options: ServeOptions<unknown>): "exit" | "wait" {
  if (options.afterStall !== undefined) return options.afterStall;
  return options.afterCompletion === "idle" && options.stalledIsFatal === false ? "wait" : "exit";
}

/**
 * Checks `options`, opens the store, joins and starts the worker. Rejects
 * with the cause after logging it (the host path closed what it had
 * opened), exiting 1 unless `exit` is `false`.
 *
 * @example
 * ```ts ignore
 * const { store, ownsStore, coordinator, worker } = await startServed(options, host, log);
 * ```
 */
export async function startServed<D>(
  options: ServeOptions<D>,
  host: { runtime: string; exit(code: number): void },
  log: Logger,
): Promise<Served> {
  let error: unknown;
  try {
    checkServeOptions(options as ServeOptions<unknown>);
    const afterStall = afterStallOf(options as ServeOptions<unknown>);
    const started = await startHosted(options, {
      host: "serve",
      instance: options.instance,
      runtime: host.runtime,
      logger: log,
      clock: options.clock,
      // A process that stays in a stalled job leads it once the leader left.
      join: afterStall === "wait" ? { leadWhileStalled: true } : {},
      worker: { afterStall },
    });
    if (started.ok) return started;
    error = started.error;
  } catch (e) {
    error = e;
  }
  log("error", "startup failed", { event: "startupFailed", error });
  if (options.exit ?? true) host.exit(EXIT_ERROR);
  throw error;
}
