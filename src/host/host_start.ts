/**
 * The one way a host (`serve`, a slice) starts work: take or open the
 * store, join the job and start a worker over the source. What differs
 * between hosts (identity, runtime name, a slice's timing and its abort
 * grace, serve's `afterStall`) is a {@linkcode HostPlan}; what each does
 * with a failure (serve logs and exits 1, a slice answers `error`) stays
 * with the host.
 *
 * @module
 */
import type { JoinOptions } from "../coordinator/join_options.ts";
import { SplitCoordinator } from "../coordinator/coordinator.ts";
import { parseCoordinatorConfig, pickTunables } from "../coordinator/config.ts";
import type { Clock, Coordinator } from "../coordinator/types.ts";
import type { Logger } from "../util/logger.ts";
import { SplitleaseError } from "../errors.ts";
import { startWorker } from "../runtime/worker.ts";
import type { Worker, WorkerOptions, WorkerOutcome } from "../runtime/worker_types.ts";
import { removeGoneMembers } from "../fleet/gone_members.ts";
import type { Store } from "../store/store.ts";
import type { HostOptions } from "./host_options.ts";

/** What a host decides for itself when it starts a worker. */
export interface HostPlan {
  /** The host, as a missing store's error names it (`serve`, `a slice`). */
  host: string;
  /** The member's instance id (`undefined`: the join makes one up). */
  instance: string | undefined;
  /** Runtime name for the member record. */
  runtime: string;
  /** The logger of the coordinator and the worker. */
  logger: Logger;
  /** The clock of the coordinator and the worker (`undefined`: the system clock). */
  clock: Clock | undefined;
  /** Join options the host sets over the tunables: a slice's timing, serve's `leadWhileStalled`. */
  join?: Pick<JoinOptions, "opTimeoutMs" | "leaseMs" | "drainDeadlineMs" | "leadWhileStalled">;
  /** Worker options the host sets over its options: serve's `afterStall`, a slice's abort grace and status interval. */
  worker?: Pick<WorkerOptions<unknown>, "afterStall" | "abortGraceMs" | "statusIntervalMs">;
}

/**
 * How a start went: everything running, or where it failed, with whatever
 * it had opened closed again: `config` (the coordinator configuration is
 * invalid: nothing was opened), `store` (no store, or the factory failed),
 * `join` (the store it opened is closed), `worker` (the worker refused its
 * options: the coordinator is closed too).
 */
export type HostStart =
  | { ok: true; store: Store; ownsStore: boolean; coordinator: Coordinator; worker: Worker }
  | { ok: false; stage: "config" | "store" | "join" | "worker"; error: unknown };

/**
 * Checks the coordinator configuration, takes `options.store` or opens one
 * with `options.storeFactory` (so a bad configuration opens nothing), joins the
 * job with the tunables and the plan's identity (a source that can cut a
 * running split's remaining work says so on its member record), and starts
 * a worker over the source. Nothing it opened stays open when it fails.
 *
 * @example
 * ```ts ignore
 * const started = await startHosted(options, { host: "serve", instance, runtime: host.runtime, logger: log, clock });
 * if (!started.ok) throw started.error;
 * const outcome = await started.worker.done;
 * ```
 */
export async function startHosted<D>(options: HostOptions<D>, plan: HostPlan): Promise<HostStart> {
  const ownsStore = !options.store;
  const tunables = pickTunables(options);
  const { leadWhileStalled: _l, ...timing } = plan.join ?? {};
  let fingerprint: string;
  try {
    fingerprint = options.source.fingerprint();
    // Checked before the store is opened: opening it creates the job's
    // bucket (NATS) or row (PostgreSQL), and a worker refused for its
    // configuration must leave nothing behind (the join checks it again).
    parseCoordinatorConfig({ ...tunables, ...timing, job: options.job, instance: plan.instance ?? "w-0", fingerprint });
  } catch (error) {
    return { ok: false, stage: "config", error };
  }
  let store: Store;
  try {
    const given = options.store ?? (options.storeFactory ? await options.storeFactory() : undefined);
    if (!given) throw new SplitleaseError("INVALID_CONFIG", `${plan.host} needs a store or a storeFactory`);
    store = given;
  } catch (error) {
    return { ok: false, stage: "store", error };
  }
  const join = options.join ?? ((o: JoinOptions) => SplitCoordinator.join(o));
  let coordinator: Coordinator;
  try {
    coordinator = await join({
      ...tunables,
      ...(typeof options.source.split === "function" && tunables.splittable === undefined ? { splittable: true } : {}),
      ...plan.join,
      store,
      job: options.job,
      instance: plan.instance,
      fingerprint,
      planner: (ctx) => options.source.plan(ctx),
      clock: plan.clock,
      logger: plan.logger,
      runtime: plan.runtime,
    });
  } catch (error) {
    if (ownsStore) await store.close().catch(() => {});
    return { ok: false, stage: "join", error };
  }
  try {
    const worker = startWorker({
      coordinator,
      source: options.source,
      maxInFlight: options.maxInFlight,
      logger: plan.logger,
      clock: plan.clock,
      stalledIsFatal: options.stalledIsFatal,
      abortGraceMs: options.abortGraceMs,
      commitIntervalMs: options.commitIntervalMs,
      ...plan.worker,
    });
    return { ok: true, store, ownsStore, coordinator, worker };
  } catch (error) {
    // The host's own check passed, so only what a custom `join` let through
    // gets here (a `maxInFlight` its coordinator does not announce).
    await coordinator.close().catch(() => {});
    if (ownsStore) await store.close().catch(() => {});
    return { ok: false, stage: "worker", error };
  }
}

/**
 * What a host does once its worker finished on the job's outcome
 * (`allComplete`, or a stall it exits on), before it closes the store:
 * removes the records members that died left behind (`removeGoneMembers`,
 * src/fleet/gone_members.ts: only now is it safe, no split naming an owner
 * any more), logging the ones it removed. A failure is logged, never
 * thrown: nothing depends on it but the views.
 *
 * @example
 * ```ts ignore
 * const outcome = await started.worker.done;
 * await tidyAfterOutcome(started.store, outcome, instance, log, Date.now);
 * ```
 */
export async function tidyAfterOutcome(
  store: Store,
  outcome: WorkerOutcome,
  instance: string,
  log: Logger,
  wallNow: () => number,
): Promise<void> {
  const ended = outcome.kind === "stalled" || (outcome.kind === "drained" && outcome.reason !== "shutdown");
  if (!ended) return;
  try {
    const removed = await removeGoneMembers(store, wallNow(), instance);
    if (removed.length) {
      log("info", "Removed the member records of members past their lease (the job is over)", { event: "goneRemoved", members: removed });
    }
  } catch (e) {
    log("warn", "Could not remove the member records of members past their lease", { error: String(e) });
  }
}
