/**
 * splitlease: lets N identical replicas of a data pipeline divide
 * broker-less work (object-store backfills, database range scans, file tails)
 * without duplicating it, coordinated through a small key-value store.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * await using store = new MemoryStore();
 * ```
 *
 * @module
 */
export {
  type ErrorCode,
  FencedError,
  InvalidKeyError,
  InvalidRecordError,
  type RecordIssue,
  SplitleaseError,
  StoreUnavailableError,
  ValueTooLargeError,
} from "./src/errors.ts";
export {
  type DeleteResult,
  type KeyFilter,
  MAX_VALUE_BYTES,
  type Store,
  type StoreEntry,
  type Watch,
  type WatchEvent,
  type WriteResult,
} from "./src/store/store.ts";
export { MemoryStore, type MemoryStoreOptions } from "./src/store/memory_store.ts";
export {
  assertValidFilter,
  assertValidId,
  assertValidKey,
  isValidId,
  type KeyLayout,
  keys,
  matchesFilter,
  MAX_KEY_LENGTH,
  splitIdFrom,
} from "./src/store/keys.ts";
export type {
  AssignEntry,
  AssignRecord,
  JobCounts,
  JobOutcome,
  JobRecord,
  Json,
  LeaderRecord,
  MemberRecord,
  Owner,
  PlanRecord,
  SpecRecord,
  SplitFailure,
  SplitProgress,
  SplitRecord,
  SplitStatus,
} from "./src/records.ts";
export {
  type JoinOptions,
  SplitCoordinator,
  VERSION,
} from "./src/coordinator/coordinator.ts";
export type {
  Clock,
  CommitOptions,
  CoordinationEvent,
  Coordinator,
  CoordinatorStats,
  CoordinatorStatus,
  HeldSplitStatus,
  Histogram,
  Logger,
  LostReason,
  PlanContext,
  PlannedSplit,
  Planner,
  PlanResult,
  SplitSpec,
} from "./src/coordinator/types.ts";
export { ManualClock, systemClock } from "./src/coordinator/clock.ts";
export {
  type ConfigDoc,
  coordinatorConfigDocs,
  type CoordinatorConfig,
  type CoordinatorTunables,
  parseCoordinatorConfig,
} from "./src/coordinator/config.ts";
export { isAlive, LivenessTracker, type Sighting } from "./src/coordinator/liveness.ts";
export { LATENCY_BUCKETS, newHistogram, observe } from "./src/coordinator/stats.ts";
export {
  type BalanceConfig,
  type BalanceMember,
  type BalanceSplit,
  type BalanceView,
  fairShare,
  hasClaimable,
  hashStrings,
  type MemberLoad,
  memberLoads,
  type Move,
  planMoves,
  rendezvousRank,
} from "./src/balance/plan_moves.ts";

// --- runtime: driver, HTTP app, serve glue, serverless slices -------------
export { formatLogLine, jsonLogger, type JsonLoggerOptions, type LogLevel, silentLogger } from "./src/runtime/logger.ts";
export type { DescriptorSchema, FencingToken, Lane, LaneCommitOptions, SplitSource } from "./src/runtime/source.ts";
export {
  type LaneInfo,
  runWorker,
  type ShutdownOptions,
  startWorker,
  type Worker,
  type WorkerOptions,
  type WorkerOutcome,
  type WorkerStats,
} from "./src/runtime/worker.ts";
export {
  EXIT_DRAINED,
  EXIT_ERROR,
  EXIT_PLAN_FAILED,
  EXIT_STALLED,
  exitCodeFor,
  type ServeHost,
  type ServeOptions,
  type ServeResult,
  type Service,
  serveWith,
} from "./src/runtime/serve_core.ts";
export { createSliceHandler, runSlice, type SliceOptions, type SliceResult } from "./src/runtime/slice.ts";
export { type AppOptions, createApp, type HttpApp, renderMetrics, timingSafeEqual } from "./src/http/app.ts";
export {
  escapeLabelValue,
  formatSampleValue,
  type Labels,
  type MetricType,
  MetricsRegistry,
  PROMETHEUS_CONTENT_TYPE,
} from "./src/http/metrics.ts";

// --- operating a fleet: the fleet view and operator actions ------------------
export { buildFleetView, jsonPreview, normalizeFleetQuery } from "./src/fleet/fleet_view.ts";
export type {
  FleetCounts,
  FleetLiveness,
  FleetMember,
  FleetQuery,
  FleetSnapshot,
  FleetSplit,
  FleetView,
} from "./src/fleet/types.ts";
export { readFleet, readFleetSnapshot, type ReadFleetOptions } from "./src/fleet/read_fleet.ts";
export {
  cancelSplit,
  type CancelResult,
  drainMember,
  type DrainMemberResult,
  requeueQuarantined,
  requeueSplit,
  type RequeueResult,
} from "./src/fleet/actions.ts";
