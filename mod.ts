/**
 * splitlease: lets N identical replicas of a data pipeline divide
 * broker-less work (object-store backfills, database range scans, file tails)
 * without duplicating it, coordinated through a small key-value store.
 *
 * This entry holds what a pipeline is written against: a source (planner and
 * per-split processing), the worker that runs it, the coordinator underneath
 * and its events, the embedded store, and the errors to branch on. The
 * adapters (`./deno`, `./bun`, `./node`, `./serverless`, `./lambda`) serve a
 * source; `./nats` connects the fleet; `./store` is for store backends,
 * `./admin` for operators' tools, `./host` for custom runtimes and `./testing`
 * for tests.
 *
 * @example
 * ```ts
 * import { MemoryStore, runWorker, SplitCoordinator, type SplitSource } from "@splitlease/splitlease";
 * declare const source: SplitSource;
 * await using store = new MemoryStore();
 * const coordinator = await SplitCoordinator.join({ store, job: "backfill", planner: (ctx) => source.plan(ctx) });
 * const outcome = await runWorker({ coordinator, source });
 * console.log(outcome.kind);
 * ```
 *
 * @module
 */

// A source: what to do, split by split.
export type { FencingToken, Lane, SplitAnswer, SplitRequest, SplitSource } from "./src/runtime/source.ts";
export type { PlanContext, PlannedSplit, Planner, PlanResult } from "./src/coordinator/types.ts";
export type { Json, SplitEstimate, SplitProgress } from "./src/records.ts";
export { splitIdFrom } from "./src/store/keys.ts";

// The worker that runs a source over a coordinator.
export { runWorker, startWorker } from "./src/runtime/worker.ts";
export { type Worker, type WorkerOptions, type WorkerOutcome } from "./src/runtime/worker_types.ts";

// The coordinator, its options and its events (for code that drives it directly).
export { type JoinOptions } from "./src/coordinator/join_options.ts";
export { SplitCoordinator } from "./src/coordinator/coordinator.ts";
// A member of a job sharded over K leaders and K stores (`shards: K`; docs/OPERATIONS.md, "Sharding a job").
export { ShardedCoordinator } from "./src/coordinator/sharded_coordinator.ts";
export type { CoordinationEvent, Coordinator, CoordinatorStatus } from "./src/coordinator/types.ts";

// The embedded store, and the interface every store implements.
export { MemoryStore } from "./src/store/memory_store.ts";
export type { Store } from "./src/store/store.ts";

// Errors to branch on.
export { FencedError, PermanentFailure, SplitleaseError, StoreUnavailableError } from "./src/errors.ts";
// Moved in 0.3 (CHANGELOG, "Breaking: moved exports"): the types of tunables, logging, commit and lane
// options and status details to `./host`; `Clock` to `./testing` (with `ManualClock`);
// `MemoryStoreOptions` and `ErrorCode` to `./store`; `ShardedJoinOptions` to `./admin`.
