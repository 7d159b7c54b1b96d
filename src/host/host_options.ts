/**
 * What every host of a worker (`serve`, a slice) takes, and its check: the
 * store, the job, the join, the coordinator tunables and what it hands its
 * worker. `ServeOptions` and `SliceOptions` extend it with their own.
 *
 * @module
 */
import * as z from "zod";
import type { JoinOptions } from "../coordinator/join_options.ts";
import type { ShardedJoinOptions } from "../coordinator/sharded_coordinator.ts";
import { type CoordinatorTunables, TUNABLE_KEYS } from "../coordinator/config.ts";
import type { Coordinator } from "../coordinator/types.ts";
import type { Store } from "../store/store.ts";
import { type Equal, givenOption } from "../util/option_schema.ts";
import { LANE_OPTIONS } from "../runtime/worker_options.ts";
import type { WorkerBaseOptions } from "../runtime/worker_types.ts";

/**
 * Options every host of a worker takes (`serve`, `runSlice`,
 * `createSliceHandler`, the Lambda handler): where the coordination store
 * comes from, the job, how to join it, the coordinator tunables (passed on
 * to the join, which checks them) and what the host hands its worker.
 *
 * @example
 * ```ts
 * import { MemoryStore, type SplitSource } from "@splitlease/splitlease";
 * import type { HostOptions } from "@splitlease/splitlease/host";
 * declare const source: SplitSource;
 * const options: HostOptions<unknown> = { store: new MemoryStore(), source, job: "backfill", leaseMs: 6000 };
 * ```
 */
export interface HostOptions<D = unknown> extends CoordinatorTunables, WorkerBaseOptions<D> {
  /** The coordination store (kept open: the caller owns it). */
  store?: Store;
  /**
   * Creates the store, which the host closes when done with it: serve when
   * the worker ends, a slice after its invocation (one store per invocation).
   * Of a sharded job (`shards` above 1) it is called once per shard, with
   * the shard's index and the job name its records are under
   * (`shardJob(job, index)`: the job itself for shard 0, `<job>--shard<i>`
   * for the others): each shard needs a store of its own (its own NATS
   * bucket, PostgreSQL job or Redis hash tag). An unsharded job's factory
   * is called with `{ index: 0, job }`.
   */
  storeFactory?: (shard: { index: number; job: string }) => Store | Promise<Store>;
  /**
   * The stores of a sharded job's shards, in shard order (one per shard,
   * each bound to `shardJob(job, index)`; kept open: the caller owns them).
   * Give `stores` or `storeFactory`, never `store`, with `shards` above 1.
   */
  stores?: readonly Store[];
  /** Job name. */
  job: string;
  /**
   * The job's shard count (docs/OPERATIONS.md, "Sharding a job"): 1 (the
   * default) runs the job over one store and one leader, as always; K from
   * 2 to 64 joins K shards, each with its own store, leader and records,
   * through one `ShardedCoordinator` that shares this member's lanes across
   * them. Every member of a job must give the same count.
   */
  shards?: number;
  /** Joins the coordinator (default `SplitCoordinator.join`); for tests and custom coordinators. */
  join?: (options: JoinOptions) => Promise<Coordinator>;
  /**
   * Joins a sharded job (`shards` above 1; default `ShardedCoordinator.join`):
   * for tests and custom coordinators, as `join` is for an unsharded one.
   */
  joinSharded?: (options: ShardedJoinOptions) => Promise<Coordinator>;
}

/**
 * The coordinator tunables as a host takes them: passed on to the join,
 * which checks them (docs/OPERATIONS.md, "Coordinator configuration").
 */
const HOST_TUNABLES: z.ZodObject<{ [K in keyof CoordinatorTunables]-?: z.ZodOptional<z.ZodType<CoordinatorTunables[K]>> }> = z
  .strictObject(
    Object.fromEntries(TUNABLE_KEYS.map((k) => [k, givenOption<unknown>().optional()])) as {
      [K in keyof CoordinatorTunables]-?: z.ZodOptional<z.ZodType<CoordinatorTunables[K]>>;
    },
  );

/**
 * Every option of {@linkcode HostOptions} and its check: the coordinator
 * tunables (the join checks them), what the host hands its worker (the
 * worker's checks, without its defaults: each host fills in its own or
 * leaves them to the worker) and the store, job and join. `serve` and slices
 * extend it with their own options; anything else is a typo.
 */
export const HOST_SCHEMA = HOST_TUNABLES.extend({
  store: givenOption<Store>().optional(),
  storeFactory: givenOption<(shard: { index: number; job: string }) => Store | Promise<Store>>().optional(),
  stores: givenOption<readonly Store[]>().optional(),
  source: LANE_OPTIONS.source,
  job: givenOption<string>(),
  shards: givenOption<number>().optional(),
  join: givenOption<(options: JoinOptions) => Promise<Coordinator>>().optional(),
  joinSharded: givenOption<(options: ShardedJoinOptions) => Promise<Coordinator>>().optional(),
  stalledIsFatal: LANE_OPTIONS.stalledIsFatal.optional(),
  abortGraceMs: LANE_OPTIONS.abortGraceMs.optional(),
  commitIntervalMs: LANE_OPTIONS.commitIntervalMs.optional(),
  logger: LANE_OPTIONS.logger.optional(),
  clock: LANE_OPTIONS.clock.optional(),
});
const _hostOptionsAreTheSchema: Equal<keyof HostOptions<unknown>, keyof z.input<typeof HOST_SCHEMA>> = true;
