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
import { ShardedCoordinator, type ShardedJoinOptions } from "../coordinator/sharded_coordinator.ts";
import { checkShards, shardJob } from "../coordinator/shard.ts";
import { parseCoordinatorConfig, pickTunables } from "../coordinator/config.ts";
import type { Clock, Coordinator, PlanContext } from "../coordinator/types.ts";
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
  | {
    ok: true;
    /** The store of the job (of a sharded job: shard 0's). */
    store: Store;
    /** Every shard's store in shard order (`[store]` for an unsharded job). */
    stores: Store[];
    /** Whether the host opened them (with `storeFactory`) and so closes them. */
    ownsStore: boolean;
    coordinator: Coordinator;
    worker: Worker;
  }
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
  const ownsStore = !options.store && !options.stores;
  const tunables = pickTunables(options);
  const { leadWhileStalled: _l, ...timing } = plan.join ?? {};
  let fingerprint: string;
  let shards: number;
  try {
    fingerprint = options.source.fingerprint();
    // Checked before the store is opened: opening it creates the job's
    // bucket (NATS) or row (PostgreSQL), and a worker refused for its
    // configuration must leave nothing behind (the join checks it again).
    parseCoordinatorConfig({ ...tunables, ...timing, job: options.job, instance: plan.instance ?? "w-0", fingerprint });
    shards = checkHostShards(options, plan.host);
  } catch (error) {
    return { ok: false, stage: "config", error };
  }
  let stores: Store[];
  try {
    stores = await openStores(options, shards, plan.host);
  } catch (error) {
    return { ok: false, stage: "store", error };
  }
  const closeStores = () => ownsStore ? Promise.all(stores.map((s) => s.close().catch(() => {}))) : undefined;
  let coordinator: Coordinator;
  try {
    const common = {
      ...tunables,
      ...(typeof options.source.split === "function" && tunables.splittable === undefined ? { splittable: true } : {}),
      ...plan.join,
      job: options.job,
      instance: plan.instance,
      fingerprint,
      planner: (ctx: PlanContext) => options.source.plan(ctx),
      clock: plan.clock,
      logger: plan.logger,
      runtime: plan.runtime,
    };
    if (shards > 1) {
      // The host keeps the stores (it opened them, or the caller owns them): the coordinator leaves them open.
      const join = options.joinSharded ?? ((o: ShardedJoinOptions) => ShardedCoordinator.join(o));
      coordinator = await join({ ...common, shards, stores });
    } else {
      const join = options.join ?? ((o: JoinOptions) => SplitCoordinator.join(o));
      coordinator = await join({ ...common, store: stores[0] });
    }
  } catch (error) {
    await closeStores();
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
    return { ok: true, store: stores[0], stores, ownsStore, coordinator, worker };
  } catch (error) {
    // The host's own check passed, so only what a custom `join` let through
    // gets here (a `maxInFlight` its coordinator does not announce).
    await coordinator.close().catch(() => {});
    await closeStores();
    return { ok: false, stage: "worker", error };
  }
}

/**
 * The shard count of a host's options, checked with where its stores come
 * from: a sharded job needs a store per shard (`storeFactory`, called with
 * each shard, or `stores`, one per shard), never the one `store`.
 */
function checkHostShards(options: HostOptions<unknown>, host: string): number {
  const shards = checkShards(options.job, options.shards);
  const bad = (m: string) => new SplitleaseError("INVALID_CONFIG", `${host}: ${m}`);
  const given = [options.store && "store", options.storeFactory && "storeFactory", options.stores && "stores"].filter(Boolean);
  if (given.length > 1) throw bad(`give one of store, storeFactory and stores, not ${given.join(" and ")}`);
  if (options.stores !== undefined) {
    if (!Array.isArray(options.stores)) throw bad("stores must be an array of stores, one per shard in shard order");
    if (options.stores.length !== shards) {
      throw bad(
        `stores has ${options.stores.length} store(s) for a job of ${shards} shard(s)` +
          (options.shards === undefined ? " (shards is not set: give shards, the job's shard count)" : ": give one store per shard, in shard order"),
      );
    }
  }
  if (shards > 1 && options.store) {
    throw bad(
      `a job of ${shards} shards needs a store per shard (each its own bucket or job): give storeFactory, called with each ` +
        `shard's { index, job }, or stores, one per shard, instead of store`,
    );
  }
  if (shards > 1 && options.join && !options.joinSharded) {
    throw bad("join joins one store's coordinator; a sharded job (shards above 1) joins through joinSharded");
  }
  return shards;
}

/** The stores of every shard: those given, or the factory's (called once per shard; what it opened is closed again when one fails). */
async function openStores(options: HostOptions<unknown>, shards: number, host: string): Promise<Store[]> {
  if (options.stores) return [...options.stores];
  if (options.store) return [options.store];
  const factory = options.storeFactory;
  if (!factory) {
    throw new SplitleaseError("INVALID_CONFIG", shards > 1 ? `${host} needs a storeFactory or stores for a job of ${shards} shards` : `${host} needs a store or a storeFactory`);
  }
  // A factory that throws at once fails its shard as one that rejects does.
  const opened = await Promise.allSettled(Array.from({ length: shards }, async (_, index) => await factory({ index, job: shardJob(options.job, index) })));
  const failed = opened.findIndex((r) => r.status === "rejected");
  const ok = opened.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
  if (failed >= 0) {
    await Promise.all(ok.map((s) => s.close().catch(() => {})));
    const error = (opened[failed] as PromiseRejectedResult).reason;
    // A store's own errors name its job (and keep their class: an outage stays one); a factory's others get the shard named.
    if (shards === 1 || error instanceof SplitleaseError) throw error;
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(`the store of shard ${failed} (job "${shardJob(options.job, failed)}") could not be opened: ${message}`, { cause: error });
  }
  if (ok.some((s) => !s || typeof s.get !== "function")) throw new SplitleaseError("INVALID_CONFIG", `${host}: storeFactory must return a store`);
  return ok;
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
  store: Store | readonly Store[],
  outcome: WorkerOutcome,
  instance: string,
  log: Logger,
  wallNow: () => number,
): Promise<void> {
  const ended = outcome.kind === "stalled" || (outcome.kind === "drained" && outcome.reason !== "shutdown");
  if (!ended) return;
  // Of a sharded job, in every shard: each has the member records of its own.
  const stores = Array.isArray(store) ? store : [store as Store];
  await Promise.all(stores.map(async (s, shard) => {
    const where = stores.length > 1 ? { shard } : {};
    try {
      const removed = await removeGoneMembers(s, wallNow(), instance);
      if (removed.length) {
        log("info", "Removed the member records of members past their lease (the job is over)", { event: "goneRemoved", members: removed, ...where });
      }
    } catch (e) {
      log("warn", "Could not remove the member records of members past their lease", { error: String(e), ...where });
    }
  }));
}
