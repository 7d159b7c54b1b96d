/**
 * For operators' tools: the fleet view (who holds what, how far each split
 * is, what failed), the operator actions (requeue, cancel, drain a member),
 * the records of a job's bucket they read, and the counters a coordinator
 * keeps. The `splitlease` CLI and the fleet page are built on these.
 *
 * @example
 * ```ts
 * import { readFleet, requeueQuarantined } from "@splitlease/splitlease/admin";
 * import { NatsStore } from "@splitlease/splitlease/nats";
 * await using store = await NatsStore.connect({ servers: "ws://127.0.0.1:8080", job: "backfill", createBucket: false });
 * const fleet = await readFleet(store, { state: "quarantined" });
 * console.log(fleet.splits.map((s) => `${s.id}: ${s.failures.at(-1)?.message}`));
 * await requeueQuarantined(store);
 * ```
 *
 * @module
 */
export { readFleet, type ReadFleetOptions } from "./src/fleet/read_fleet.ts";
export {
  buildFleetSummary,
  FULL_READ_MAX_SPLITS,
  type OverviewOptions,
  readFleetOverview,
  readFleetSummary,
  readSummarySnapshot,
  splitsOf,
  type SummarySnapshot,
} from "./src/fleet/fleet_summary.ts";
export { FleetIndex, type FleetIndexOptions, type FleetIndexState } from "./src/fleet/fleet_index.ts";
export { readSplitsPage } from "./src/fleet/read_splits.ts";
export type { FleetCounts, FleetRate, FleetSummary } from "./src/fleet/fleet_figures.ts";
export type { FleetLiveness, FleetMember } from "./src/fleet/fleet_member.ts";
export type { FleetQuery, FleetState } from "./src/fleet/fleet_query.ts";
export type { FleetSplit } from "./src/fleet/fleet_split.ts";
export type { FleetView } from "./src/fleet/types.ts";
// The jobs of a server (`splitlease jobs`, `splitlease delete`) over any backend's JobCatalog.
export { deleteRefusal, type JobState, type JobSummary, summarizeJob } from "./src/fleet/job_summary.ts";
export { foldJobListings, listJobs, readJobListings, summarizeShards } from "./src/fleet/sharded_listings.ts";
// How a view judges a member it cannot watch: its lease against the newest time its record was written.
export { judgeMember, LIVE_WITHIN_MS, type MemberLiveness, type MemberSighting, pastLease } from "./src/fleet/member_liveness.ts";
// Waiting for a job's outcome (`splitlease wait`), and where a job stands by its plan record.
export { waitForOutcome, type WaitOptions, type WaitResult } from "./src/fleet/wait.ts";
export { type JobResult, jobResultOf, type JobResultState } from "./src/fleet/job_result.ts";
// Pausing, resuming and rerunning a whole job (`splitlease pause`, `resume`, `rerun`; `POST /job/pause`).
export { pauseJob, type PauseResult, rerunJob, type RerunResult, resumeJob, type ResumeResult } from "./src/fleet/job_actions.ts";
export {
  cancelSplit,
  type CancelResult,
  drainMember,
  type DrainMemberResult,
  requeueQuarantined,
  requeueSplit,
  type RequeueResult,
} from "./src/fleet/actions.ts";
export type {
  AssignEntry,
  AssignRecord,
  JobCounts,
  JobOutcome,
  JobPause,
  JobRate,
  JobRun,
  JobRecord,
  JobWeights,
  LeaderRecord,
  MemberRecord,
  Owner,
  PageEntry,
  PageRecord,
  PlanRecord,
  ProgRecord,
  Residual,
  SpecRecord,
  SplitFailure,
  SplitRecord,
  SplitRun,
  SplitStatus,
  SplitTenancy,
  TenancyEnd,
} from "./src/records.ts";
// Where the records above live in the bucket (`keys.member(id)` holds a MemberRecord).
export { type KeyLayout, keys } from "./src/store/keys.ts";
export type { CoordinatorStats, Histogram } from "./src/coordinator/coordinator_stats.ts";
export type { CutAnswer, FailOptions } from "./src/coordinator/types.ts";
export type { LaneFailOptions } from "./src/runtime/source.ts";
export type { LaneInfo, WorkerStats } from "./src/runtime/worker_types.ts";
export { InvalidRecordError, type RecordIssue } from "./src/errors.ts";
export {
  type ConfigDoc,
  coordinatorConfigDocs,
  type CoordinatorConfig,
  parseCoordinatorConfig,
} from "./src/coordinator/config.ts";
export { VERSION } from "./src/coordinator/member/job_check.ts";
// The limits of a cut (SplitSource.split): a descriptor's inline size, residuals per cut.
export { INLINE_DESCRIPTOR_BYTES, MAX_RESIDUALS } from "./src/records.ts";
// Sharded jobs: which shard a split belongs to, each shard's records' job name, and what a member of one shows.
export { checkShards, MAX_SHARDS, parseShardJob, shardJob, shardOf } from "./src/coordinator/shard.ts";
export type { ShardedJoinOptions } from "./src/coordinator/sharded_coordinator.ts";
export type { ShardSeat } from "./src/coordinator/join_options.ts";
export type { ShardStatus } from "./src/coordinator/types.ts";
// A sharded job as an operator reaches it (docs/OPERATIONS.md, "Sharding a job"): its shards' stores,
// the job's view folded from theirs, its actions on every shard, and one outcome, standing and history.
export { findSplitShard, type JobShards, openJobShards, type OpenedShards, shardSeatOf } from "./src/fleet/job_shards.ts";
export { readJobOverview, readJobSplits } from "./src/fleet/shard_reads.ts";
export { mergeShardViews } from "./src/fleet/shard_views.ts";
export { foldOutcomes, foldResults, foldRuns, outcomeShards } from "./src/fleet/shard_fold.ts";
export {
  cancelSplitIn,
  drainMemberIn,
  pauseShards,
  requeueQuarantinedIn,
  requeueSplitIn,
  rerunShards,
  resumeShards,
  type ShardAnswer,
} from "./src/fleet/shard_actions.ts";
export type { FleetShard } from "./src/fleet/types.ts";
