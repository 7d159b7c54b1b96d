/**
 * The records of one split: `split.<split>` (epoch, status, owner, attempts,
 * progress, failures and a small descriptor) and `spec.<split>` (a descriptor
 * too large to live inline).
 *
 * @module
 */
import * as z from "zod";
import { count, id, json, type Json, v2 } from "./layout.ts";

/**
 * Largest descriptor (JSON text, UTF-8 bytes) kept inside the split record;
 * larger ones go to `spec.<split>`.
 *
 * @example
 * ```ts
 * import { INLINE_DESCRIPTOR_BYTES } from "../records.ts";
 * console.log(INLINE_DESCRIPTOR_BYTES); // 2048
 * ```
 */
export const INLINE_DESCRIPTOR_BYTES = 2048;

/**
 * A `spec.<split>` record: the immutable descriptor of a split whose
 * descriptor is too large to live in its split record.
 *
 * @example
 * ```ts
 * import type { SpecRecord } from "@splitlease/splitlease/admin";
 * const spec: SpecRecord = { v: 2, descriptor: { from: 0, to: 1000 }, weight: 1000, term: 1 };
 * ```
 */
export interface SpecRecord {
  /** Record layout. */
  v: 2;
  /** Everything a worker needs to process the split. */
  descriptor: Json;
  /** Relative cost (bytes, rows); default 1. */
  weight: number;
  /** Plan term that created it. */
  term: number;
}

/** Schema of a `spec.<split>` record. */
export const SpecRecordSchema: z.ZodType<SpecRecord> = z.object({
  v: v2,
  descriptor: json,
  weight: z.number().positive().finite(),
  term: count,
});

/**
 * A source's estimate of the work left in a split, committed with its
 * progress: `left` of `total` units remain (`0 <= left <= total`, `total >
 * 0`); with `unit: "fraction"` the total is 1. The fleet page shows the
 * fraction done (`1 - left / total`) and counts it in the job's ETA; it is
 * the same estimate a straggler split would be judged by. Optional.
 *
 * @example
 * ```ts
 * import type { SplitEstimate } from "@splitlease/splitlease";
 * const e: SplitEstimate = { left: 3_000_000, total: 8_000_000, unit: "bytes" };
 * ```
 */
export interface SplitEstimate {
  /** Units of work left. */
  left: number;
  /** Units of work in the whole split. */
  total: number;
  /** What a unit is: bytes, ids (rows, keys) or a fraction (total 1). */
  unit: "bytes" | "ids" | "fraction";
}

/** Units a {@linkcode SplitEstimate} counts in. */
export const ESTIMATE_UNITS: readonly SplitEstimate["unit"][] = ["bytes", "ids", "fraction"];

/** Why an estimate is malformed (a sentence), or `null` when it is valid. */
export function estimateProblem(e: unknown): string | null {
  if (typeof e !== "object" || e === null || Array.isArray(e)) return "must be an object { left, total, unit }";
  const { left, total, unit } = e as Record<string, unknown>;
  if (!ESTIMATE_UNITS.includes(unit as SplitEstimate["unit"])) return `unit must be one of ${ESTIMATE_UNITS.join(", ")}`;
  if (typeof total !== "number" || !Number.isFinite(total) || !(total > 0)) return "total must be a finite number above 0";
  if (unit === "fraction" && total !== 1) return "total must be 1 when unit is fraction";
  if (typeof left !== "number" || !Number.isFinite(left) || left < 0 || left > total) return "left must be a number from 0 to total";
  return null;
}

/**
 * Committed progress of a split: an ordered watermark, opaque state and,
 * optionally, an estimate of the work left.
 *
 * @example
 * ```ts
 * import type { SplitProgress } from "@splitlease/splitlease";
 * const p: SplitProgress = { watermark: 1200, state: { object: 3, offset: 4096 }, estimate: { left: 0.4, total: 1, unit: "fraction" } };
 * ```
 */
export interface SplitProgress {
  /** Ordered position (number or string); never regresses. */
  watermark?: number | string;
  /** Opaque source state to resume from. */
  state?: Json;
  /** The source's estimate of the work left (kept until a later commit replaces it). */
  estimate?: SplitEstimate;
}

const EstimateSchema: z.ZodType<SplitEstimate> = z.object({
  left: z.number(),
  total: z.number(),
  unit: z.enum(["bytes", "ids", "fraction"]),
}).refine((e) => estimateProblem(e) === null, { message: "malformed estimate (0 <= left <= total, total > 0, total 1 for a fraction)" });

/** Schema of split progress. */
export const ProgressSchema: z.ZodType<SplitProgress> = z.object({
  watermark: z.union([z.number().finite(), z.string()]).optional(),
  state: json.optional(),
  estimate: EstimateSchema.optional(),
});

/**
 * How a tenancy of a split ended: `completed`, `released` (graceful, to
 * nobody or to a successor), `failed` (a `fail()` or a throwing `run`),
 * `handedBack` (claimed but not runnable now, no attempt), `moved` (the
 * leader gave it to another owner without a release), `lost` (taken over
 * from a dead owner, an attempt charged), `cancelled` or `requeued` (by an
 * operator).
 *
 * @example
 * ```ts
 * import type { TenancyEnd } from "@splitlease/splitlease/admin";
 * const charged = (end: TenancyEnd) => end === "failed" || end === "lost";
 * ```
 */
export type TenancyEnd = "completed" | "released" | "failed" | "handedBack" | "moved" | "lost" | "cancelled" | "requeued";

/** Every {@linkcode TenancyEnd}. */
export const TENANCY_ENDS: readonly TenancyEnd[] = ["completed", "released", "failed", "handedBack", "moved", "lost", "cancelled", "requeued"];

/**
 * One tenancy of a split: who held it at which epoch, from when (wall clock
 * of the writer, ms since the epoch; informational only) until when and how
 * it ended (absent while it lasts).
 *
 * @example
 * ```ts
 * import type { SplitTenancy } from "@splitlease/splitlease/admin";
 * const t: SplitTenancy = { epoch: 3, owner: "pod-1", from: 1764668000000, to: 1764668042000, end: "completed" };
 * ```
 */
export interface SplitTenancy {
  /** The epoch it ran at. */
  epoch: number;
  /** The owner's instance id. */
  owner: string;
  /** When it began. */
  from: number;
  /** When it ended. */
  to?: number;
  /** How it ended. */
  end?: TenancyEnd;
}

/**
 * Tenancies kept per split record (the oldest is dropped first).
 *
 * @example
 * ```ts
 * import { TENANCY_HISTORY } from "../records.ts";
 * console.log(TENANCY_HISTORY); // 8
 * ```
 */
export const TENANCY_HISTORY = 8;

const TenancySchema: z.ZodType<SplitTenancy> = z.object({
  epoch: count,
  owner: id,
  from: z.number().finite(),
  to: z.number().finite().optional(),
  end: z.enum(TENANCY_ENDS as [TenancyEnd, ...TenancyEnd[]]).optional(),
});

/**
 * The owner of a split: an instance id and its process session nonce.
 *
 * @example
 * ```ts
 * import type { Owner } from "@splitlease/splitlease/admin";
 * const owner: Owner = { instance: "pod-1", session: "k3j2h1g0" };
 * ```
 */
export interface Owner {
  /** Instance id. */
  instance: string;
  /** Process session nonce. */
  session: string;
}

/** Schema of an owner reference. */
export const OwnerSchema: z.ZodType<Owner> = z.object({ instance: id, session: z.string().min(1) });

/**
 * Lifecycle state of a split: `runnable` (owned or free), `completed`,
 * `quarantined` (poison, parked until requeued) or `cancelled` (by an
 * operator; never run again).
 *
 * @example
 * ```ts
 * import type { SplitStatus } from "@splitlease/splitlease/admin";
 * const s: SplitStatus = "runnable";
 * ```
 */
export type SplitStatus = "runnable" | "completed" | "quarantined" | "cancelled";

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

/**
 * Earlier runs a split record keeps in its history (the oldest is dropped first).
 *
 * @example
 * ```ts
 * import { SPLIT_RUN_HISTORY } from "../records.ts";
 * console.log(SPLIT_RUN_HISTORY); // 4
 * ```
 */
export const SPLIT_RUN_HISTORY = 4;

/**
 * What one split did in an earlier run of its job: how it ended, at which
 * epoch and after how many attempts, the records it counted, when it
 * completed and its last failure.
 *
 * @example
 * ```ts
 * import type { SplitRun } from "@splitlease/splitlease/admin";
 * const r: SplitRun = { run: 1, status: "completed", epoch: 3, attempts: 1, records: 40_000, completedAt: Date.now() };
 * ```
 */
export interface SplitRun {
  /** The run. */
  run: number;
  /** How the split ended in it. */
  status: SplitStatus;
  /** Its last epoch in that run. */
  epoch: number;
  /** Attempts charged in that run. */
  attempts: number;
  /** Records its owners reported in that run. */
  records?: number;
  /** When it completed in that run (wall clock). */
  completedAt?: number;
  /** Its last failure in that run (cut to {@linkcode FAILURE_MESSAGE_CHARS} characters). */
  lastFailure?: string;
  /** That failure was permanent. */
  permanent?: true;
}

const SplitRunSchema: z.ZodType<SplitRun> = z.object({
  run: z.number().int().min(1),
  status: z.enum(["runnable", "completed", "quarantined", "cancelled"]),
  epoch: count,
  attempts: count,
  records: count.optional(),
  completedAt: z.number().optional(),
  lastFailure: z.string().optional(),
  permanent: z.literal(true).optional(),
});

/**
 * A split cut from a running split's remaining work, as recorded in the
 * record of the split it was cut from until its own record exists.
 *
 * @example
 * ```ts
 * import type { Residual } from "@splitlease/splitlease/admin";
 * const r: Residual = { id: "range-0007-5f3a9c01d2e4b6a8", descriptor: { from: 5000, to: 8000 }, weight: 3000 };
 * ```
 */
export interface Residual {
  /** Its split id (derived from the parent's id and its descriptor). */
  id: string;
  /** Its descriptor (inline: at most {@linkcode INLINE_DESCRIPTOR_BYTES}). */
  descriptor: Json;
  /** Its share of the parent's weight, counted by balancing from its creation. */
  weight: number;
  /**
   * The epoch its record starts at: past the parent's epoch at the cut, so
   * its tenancies fence (by the lineage's root id) every tenancy of the
   * parent from before the cut. Absent in a cut not listed yet.
   */
  epoch?: number;
}

/**
 * Most residuals one cut may make.
 *
 * @example
 * ```ts
 * import { MAX_RESIDUALS } from "../records.ts";
 * console.log(MAX_RESIDUALS); // 16
 * ```
 */
export const MAX_RESIDUALS = 16;

const ResidualSchema: z.ZodType<Residual> = z.object({
  id,
  descriptor: json,
  weight: z.number().positive().finite(),
  epoch: count.optional(),
});

/**
 * One reported failure of a split (a `fail()`, a throwing `run`, a bad
 * descriptor), as kept in {@linkcode SplitRecord.failures}.
 *
 * @example
 * ```ts
 * import type { SplitFailure } from "@splitlease/splitlease/admin";
 * const f: SplitFailure = { at: Date.now(), worker: "pod-1", message: "run threw: ECONNRESET" };
 * ```
 */
export interface SplitFailure {
  /** Wall-clock time of the report (ms since the epoch; informational only). */
  at: number;
  /** Instance id of the worker that reported it. */
  worker: string;
  /** What failed, cut to {@linkcode FAILURE_MESSAGE_CHARS} characters. */
  message: string;
  /**
   * The first frames of the error's stack, when the failure was an error
   * (a throwing `run`, `lane.fail(error)`): at most {@linkcode FAILURE_STACK_LINES}
   * lines and {@linkcode FAILURE_STACK_CHARS} characters. Absent in records
   * written before it existed, which read the same.
   */
  stack?: string;
  /**
   * The source said this failure will not go away (a `PermanentFailure`,
   * `lane.fail(reason, { permanent: true })`): the split was quarantined by
   * it at once, without retries. Absent otherwise (and in records written
   * before it existed).
   */
  permanent?: true;
}

/**
 * Failures kept per split record (the oldest is dropped first).
 *
 * @example
 * ```ts
 * import { FAILURE_HISTORY } from "../records.ts";
 * console.log(FAILURE_HISTORY); // 5
 * ```
 */
export const FAILURE_HISTORY = 5;

/**
 * Longest failure message kept in the history (characters).
 *
 * @example
 * ```ts
 * import { FAILURE_MESSAGE_CHARS } from "../records.ts";
 * console.log(FAILURE_MESSAGE_CHARS); // 300
 * ```
 */
export const FAILURE_MESSAGE_CHARS = 300;

/**
 * Most stack lines kept per failure in the history.
 *
 * @example
 * ```ts
 * import { FAILURE_STACK_LINES } from "../records.ts";
 * console.log(FAILURE_STACK_LINES); // 8
 * ```
 */
export const FAILURE_STACK_LINES = 8;

/**
 * Most stack characters kept per failure in the history: with
 * {@linkcode FAILURE_HISTORY} failures a record carries at most 4 KB of
 * stacks (every commit rewrites it, and the leader decodes it).
 *
 * @example
 * ```ts
 * import { FAILURE_STACK_CHARS } from "../records.ts";
 * console.log(FAILURE_STACK_CHARS); // 800
 * ```
 */
export const FAILURE_STACK_CHARS = 800;

const FailureSchema: z.ZodType<SplitFailure> = z.object({
  at: z.number(),
  worker: z.string(),
  message: z.string(),
  stack: z.string().optional(),
  permanent: z.literal(true).optional(),
});

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
