/**
 * The start of `serve`: check the options, open the store and join the
 * coordinator (which traces itself); a failure is logged, the store it opened closed,
 * and the process exits 1 (when it owns the exit).
 *
 * @module
 */
import type { JoinOptions } from "../coordinator/join_options.ts";
import { SplitCoordinator } from "../coordinator/coordinator.ts";
import { pickTunables } from "../coordinator/config.ts";
import type { Coordinator, Logger } from "../coordinator/types.ts";
import { SplitleaseError } from "../errors.ts";
import { EXIT_ERROR } from "../runtime/exit_codes.ts";
import type { Store } from "../store/store.ts";
import { checkServeOptions, type ServeOptions } from "./serve_options.ts";

/** What a served process joined with. */
export interface Joined {
  /** The store. */
  store: Store;
  /** Whether serve opened it (from `storeFactory`) and so closes it. */
  ownsStore: boolean;
  /** The coordinator. */
  coordinator: Coordinator;
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
 * Checks `options`, opens the store and joins. Rejects with the cause after
 * logging it, closing a store it opened, and exiting 1 unless `exit` is
 * `false`.
 *
 * @example
 * ```ts ignore
 * const { store, ownsStore, coordinator } = await joinServed(options, host, log);
 * ```
 */
export async function joinServed<D>(
  options: ServeOptions<D>,
  host: { runtime: string; exit(code: number): void },
  log: Logger,
): Promise<Joined> {
  let store: Store | undefined;
  const ownsStore = !options.store;
  try {
    checkServeOptions(options as ServeOptions<unknown>);
    if (options.store) store = options.store;
    else if (options.storeFactory) store = await options.storeFactory();
    else throw new SplitleaseError("INVALID_CONFIG", "serve needs a store or a storeFactory");
    const tunables = pickTunables(options);
    const join = options.join ?? ((o: JoinOptions) => SplitCoordinator.join(o));
    const coordinator = await join({
      ...tunables,
      // A source that can cut a running split's remaining work says so on its member record.
      ...(typeof options.source.split === "function" && tunables.splittable === undefined ? { splittable: true } : {}),
      store,
      job: options.job,
      instance: options.instance,
      fingerprint: options.source.fingerprint(),
      planner: (ctx) => options.source.plan(ctx),
      clock: options.clock,
      logger: log,
      runtime: host.runtime,
      // A process that stays in a stalled job leads it once the leader left.
      ...(afterStallOf(options as ServeOptions<unknown>) === "wait" ? { leadWhileStalled: true } : {}),
    });
    return { store, ownsStore, coordinator };
  } catch (e) {
    log("error", "startup failed", { event: "startupFailed", error: e });
    if (ownsStore) await store?.close().catch(() => {});
    if (options.exit ?? true) host.exit(EXIT_ERROR);
    throw e;
  }
}
