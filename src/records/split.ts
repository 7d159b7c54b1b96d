/**
 * The `split.<split>` record (epoch, status, owner, attempts, progress,
 * failures and a small descriptor) and its schema. The parts it carries
 * live in files of their own: `spec.ts` (a descriptor too large to be
 * inline), `split_progress.ts`, `split_tenancy.ts`, `owner.ts`,
 * `split_status.ts`, `split_run.ts`, `residual.ts`, `split_failure.ts`.
 *
 * @module
 */
import * as z from "zod";
import { count, id, json, type Json, v2 } from "./layout.ts";
import { OwnerSchema, type Owner } from "./owner.ts";
import { MAX_RESIDUALS, type Residual, ResidualSchema } from "./residual.ts";
import { type SplitFailure, FailureSchema } from "./split_failure.ts";
import { ProgressSchema, type SplitProgress } from "./split_progress.ts";
import { SPLIT_RUN_HISTORY, type SplitRun, SplitRunSchema } from "./split_run.ts";
import type { SplitStatus } from "./split_status.ts";
import { type SplitTenancy, TenancySchema } from "./split_tenancy.ts";

/**
 * A `split.<split>` record: epoch, status, owner, attempts, progress and
 * (when small) the descriptor.
 *
 * @example
 * ```ts
 * import type { SplitRecord } from "@splitlease/splitlease/admin";
 * const s: SplitRecord = {
 *   v: 2, epoch: 1, status: "runnable", owner: { instance: "a", session: "s1" },
 *   attempts: 0, weight: 1, progress: { watermark: 10 }, descriptor: { from: 0, to: 10 },
 * };
 * ```
 */
export interface SplitRecord {
  /** Record layout. */
  v: 2;
  /** Fencing token, bumped on every ownership change. */
  epoch: number;
  /** Lifecycle state. */
  status: SplitStatus;
  /** Current owner, or `null` when free. */
  owner: Owner | null;
  /** Non-graceful ends so far (takeovers, crash reclaims, explicit fails). */
  attempts: number;
  /** Relative cost, used for fair share and balancing. */
  weight: number;
  /** Last committed progress, `null` before the first commit. */
  progress: SplitProgress | null;
  /** The descriptor, when it is at most {@linkcode INLINE_DESCRIPTOR_BYTES}. */
  descriptor?: Json;
  /** Set when the descriptor lives in `spec.<split>` instead. */
  spec?: true;
  /** Reason of the last reported failure. */
  lastFailure?: string;
  /** The last {@linkcode FAILURE_HISTORY} reported failures, oldest first (bounded; absent before the first). */
  failures?: SplitFailure[];
  /**
   * The last {@linkcode TENANCY_HISTORY} tenancies, oldest first: owner,
   * epoch, start, end and how it ended (bounded; absent in records written
   * before it existed, which read the same). The last one is open while
   * the split is owned; a completed split's last one ended `completed`, at
   * its completion time.
   */
  tenancies?: SplitTenancy[];
  /** The split this one was cut from (dynamic work rebalancing), if any. */
  parent?: string;
  /**
   * The planned split its lineage was cut from (set on residuals): the
   * fencing token's split id, so a sink fences every split cut from one
   * planned split by one epoch sequence (a residual starts past the epoch
   * its parent was cut at).
   */
  root?: string;
  /** How many times this split's remaining work was cut (its owner's answers to the leader's asks). */
  cuts?: number;
  /**
   * Records its owners reported with the commits that landed (`lane.commit(…,
   * { records })`), summed: the records behind its durable progress, since
   * a takeover replays only what was not committed. Absent until a commit
   * reports some.
   */
  records?: number;
  /**
   * Splits cut from this one whose records may not exist yet: written with
   * the cut, in one CAS at the owner's epoch, and created (if absent) by
   * whoever sees them first, the owner or the leader. Dropped from the
   * record once its owner has seen them exist.
   */
  residuals?: Residual[];
  /**
   * No tenancy of this split at an epoch below `closed` can land a write on
   * its progress record (`prog.<split>`) any more: a tenancy at epoch
   * `e <= closed` may start without fencing that record. Set at creation
   * (nobody held it before) and by a terminal write (release, failure,
   * hand-back) whose tenancy had no progress write in flight, which also
   * copies its last committed progress here; every other write keeps it.
   * Absent (0): every tenancy fences before it starts.
   */
  closed?: number;
  /**
   * The revision of its progress record as the write that set `closed`
   * left it (absent: it has none): the next tenancy, which starts without
   * a fence, commits over it without reading it first. Advisory: a wrong
   * one costs a conflict and a read.
   */
  prog?: number;
  /**
   * The job's run this record belongs to (see `PlanRecord.run`); absent in
   * the first run. A record of an older run is rewritten by the next run's
   * seed (or removed, if that run does not plan it).
   */
  run?: number;
  /** What this split did in the job's earlier runs, oldest first (at most {@linkcode SPLIT_RUN_HISTORY}). */
  runs?: SplitRun[];
}

/** Checks a decoded `split.<id>` record: status, owner, epoch, attempts, progress and lineage, with their ranges. */
export const SplitRecordSchema: z.ZodType<SplitRecord> = z.object({
  v: v2,
  epoch: count,
  status: z.enum(["runnable", "completed", "quarantined", "cancelled"]),
  owner: OwnerSchema.nullable(),
  attempts: count,
  weight: z.number().positive().finite(),
  progress: ProgressSchema.nullable(),
  descriptor: json.optional(),
  spec: z.literal(true).optional(),
  lastFailure: z.string().optional(),
  failures: z.array(FailureSchema).optional(),
  tenancies: z.array(TenancySchema).optional(),
  parent: id.optional(),
  root: id.optional(),
  cuts: count.optional(),
  records: count.optional(),
  residuals: z.array(ResidualSchema).max(4 * MAX_RESIDUALS).optional(),
  closed: count.optional(),
  prog: count.optional(),
  run: z.number().int().min(1).optional(),
  runs: z.array(SplitRunSchema).max(SPLIT_RUN_HISTORY).optional(),
});
