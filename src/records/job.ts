/**
 * The job-wide records: `job` (which job the bucket belongs to), `plan` (the
 * leader fence, the published plan and the job outcome) and `leader` (the
 * leader's heartbeat and the job counts it saw).
 *
 * @module
 */
import * as z from "zod";
import { count, id, json, type Json, v2, v3 } from "./layout.ts";

/**
 * The `job` record: which job this bucket belongs to.
 *
 * @example
 * ```ts
 * import type { JobRecord } from "@splitlease/splitlease/admin";
 * const job: JobRecord = { v: 3, fingerprint: "backfill:s3://bucket/prefix", createdAt: Date.now() };
 * ```
 */
export interface JobRecord {
  /** Record layout ({@linkcode RECORD_LAYOUT}: 3, progress in records of its own). */
  v: 3;
  /** Planner-supplied, config-derived identity of the job. */
  fingerprint: string;
  /** Wall-clock creation time (informational only). */
  createdAt: number;
  /**
   * Of a sharded job: which shard these records are, of how many (every
   * member joins with the same count; absent: an unsharded job, one shard).
   */
  shard?: { index: number; count: number };
}

/** Checks a decoded `job` record: its version, the planner's fingerprint it was created with, and when. */
export const JobRecordSchema: z.ZodType<JobRecord> = z.object({
  v: v3,
  fingerprint: z.string().min(1),
  createdAt: z.number(),
  shard: z.object({ index: count, count: z.number().int().min(1) }).optional(),
});

/**
 * How a bounded job ended, decided once by the leader (`plan.outcome`),
 * with what it skipped: `cancelled` splits (never run again) and, of the
 * `quarantined` ones a stall waits on, those quarantined by a `permanent`
 * failure. Both are absent when zero (and in outcomes written before they
 * existed).
 *
 * @example
 * ```ts
 * import type { JobOutcome } from "@splitlease/splitlease/admin";
 * const o: JobOutcome = { kind: "stalled", completed: 9, quarantined: 2, permanent: 1 };
 * const doneExceptSkipped = (x: JobOutcome) => x.kind === "allComplete" && (x.cancelled ?? 0) > 0;
 * ```
 */
export type JobOutcome =
  | { kind: "allComplete"; completed: number; cancelled?: number }
  | { kind: "stalled"; completed: number; quarantined: number; cancelled?: number; permanent?: number }
  | { kind: "planFailed"; error: string; attempts: number; term: number };

/**
 * The `plan` record: leader term (the leader fence), the published plan and,
 * once decided, the job outcome.
 *
 * @example
 * ```ts
 * import type { PlanRecord } from "@splitlease/splitlease/admin";
 * const p: PlanRecord = { v: 2, term: 1, finality: "final", generation: 1, planned: 42 };
 * ```
 */
export interface PlanRecord {
  /** Record layout. */
  v: 2;
  /** Leader generation; a new leader bumps it (the leader fence). */
  term: number;
  /** `final`: the enumeration is complete; `open`: re-planned on an interval. */
  finality: "open" | "final";
  /** Number of publishes so far; 0 means no plan was published yet. */
  generation: number;
  /** Splits planned (counted from what was seeded). */
  planned: number;
  /** Pages of the plan published (`page.0 .. page.<pages-1>`: the planned splits, in dealing order); absent: none. */
  pages?: number;
  /**
   * Which term wrote the published pages: `[first page, term]` pairs in page
   * order, one per publish that added pages (adjacent ones of a term merged).
   * A page read with another term is an answer from before the publish (a
   * stale replica, or a deposed run's page that was written over).
   */
  pageTerms?: Array<[number, number]>;
  /** Planner cursor for discovery planners. */
  cursor?: Json;
  /** Wall-clock time of the last publish (informational only). */
  publishedAt?: number;
  /** The job outcome, written once by the leader after a confirming listing. */
  outcome?: JobOutcome;
  /**
   * Set while an operator has paused the job (`splitlease pause`, `POST
   * /job/pause`): the leader deals nothing new, members hand back what they
   * run and claim nothing, and no outcome is decided until it is removed
   * (resume). Absent otherwise, and in records written before it existed.
   */
  paused?: JobPause;
  /**
   * The job's run (its generation): 1 for the first, one more for each
   * rerun (`splitlease rerun`). Absent in the first run (and in records
   * written before reruns existed).
   */
  run?: number;
  /**
   * Every split record of this run starts above this epoch: the highest
   * epoch any split of the runs before reached, so that a sink fencing by
   * (split, epoch) refuses a tenancy of an old run. Absent in the first run.
   */
  epochBase?: number;
  /** The runs before this one, oldest first (at most {@linkcode JOB_RUN_HISTORY}). */
  history?: JobRun[];
}

/**
 * Earlier runs a plan record keeps in its history (the oldest is dropped first).
 *
 * @example
 * ```ts
 * import { JOB_RUN_HISTORY } from "../records.ts";
 * console.log(JOB_RUN_HISTORY); // 10
 * ```
 */
export const JOB_RUN_HISTORY = 10;

/**
 * One finished run of a job, as the plan record keeps it after a rerun:
 * its outcome and what it did.
 *
 * @example
 * ```ts
 * import type { JobRun } from "@splitlease/splitlease/admin";
 * const r: JobRun = { run: 1, outcome: { kind: "allComplete", completed: 20 }, planned: 20, finishedAt: Date.now(), records: 1_200_000 };
 * ```
 */
export interface JobRun {
  /** Its run number. */
  run: number;
  /** How it ended. */
  outcome: JobOutcome;
  /** Splits it planned. */
  planned: number;
  /** When its first tenancy began (the writers' wall clock), if known. */
  startedAt?: number;
  /** When its last split completed (wall clock), or when it was rerun if no completion time is known. */
  finishedAt: number;
  /** Records its splits' owners reported. */
  records?: number;
  /** Runs that failed (a throwing run, a poison report). */
  failures?: number;
  /** Runs that followed a failed or lost run. */
  retries?: number;
  /** From its first tenancy to its last completion (ms). */
  tookMs?: number;
}

/**
 * Who paused a job, when and why (`plan.paused`).
 *
 * @example
 * ```ts
 * import type { JobPause } from "@splitlease/splitlease/admin";
 * const p: JobPause = { at: Date.now(), by: "ops@host-1", reason: "database incident INC-4711" };
 * ```
 */
export interface JobPause {
  /** Wall-clock time of the pause (ms since the epoch; informational only). */
  at: number;
  /** Who asked (free text: the CLI's user and host, the page's "fleet page"). */
  by?: string;
  /** Why, as the operator said it (at most 500 characters). */
  reason?: string;
}

const OutcomeSchema: z.ZodType<JobOutcome> = z.union([
  z.object({ kind: z.literal("allComplete"), completed: count, cancelled: count.optional() }),
  z.object({ kind: z.literal("stalled"), completed: count, quarantined: count, cancelled: count.optional(), permanent: count.optional() }),
  z.object({ kind: z.literal("planFailed"), error: z.string(), attempts: count, term: count }),
]);

const RunSchema: z.ZodType<JobRun> = z.object({
  run: z.number().int().min(1),
  outcome: OutcomeSchema,
  planned: count,
  startedAt: z.number().optional(),
  finishedAt: z.number(),
  records: count.optional(),
  failures: count.optional(),
  retries: count.optional(),
  tookMs: z.number().min(0).optional(),
});

const PauseSchema: z.ZodType<JobPause> = z.object({
  at: z.number(),
  by: z.string().max(200).optional(),
  reason: z.string().max(500).optional(),
});

/** Checks a decoded `plan` record: the term that wrote it, its finality and generation, the planned count, the planner's cursor and the outcome. */
export const PlanRecordSchema: z.ZodType<PlanRecord> = z.object({
  v: v2,
  term: count,
  finality: z.enum(["open", "final"]),
  generation: count,
  planned: count,
  pages: count.optional(),
  pageTerms: z.array(z.tuple([count, count])).optional(),
  cursor: json.optional(),
  publishedAt: z.number().optional(),
  outcome: OutcomeSchema.optional(),
  paused: PauseSchema.optional(),
  run: z.number().int().min(1).optional(),
  epochBase: count.optional(),
  history: z.array(RunSchema).max(JOB_RUN_HISTORY).optional(),
});

/**
 * Job-wide split counts as the leader sees them, carried on its heartbeat.
 *
 * @example
 * ```ts
 * import type { JobCounts } from "@splitlease/splitlease/admin";
 * const c: JobCounts = { members: 3, runnable: 10, unowned: 2, completed: 5, quarantined: 0, cancelled: 0 };
 * ```
 */
export interface JobCounts {
  /** Live members (standbys included). */
  members: number;
  /** Runnable splits (owned or not). */
  runnable: number;
  /** Runnable splits with no owner (the backlog). */
  unowned: number;
  /** Completed splits. */
  completed: number;
  /** Quarantined (poison) splits. */
  quarantined: number;
  /** Cancelled splits. */
  cancelled: number;
  /** Splits cut from running ones (residuals; README, "Stragglers"), absent when none. */
  cut?: number;
  /**
   * The first {@linkcode QUARANTINED_IDS_PUBLISHED} quarantined split ids, by
   * id, so every member's `/status` names them, not only the leader's.
   * Absent when none is quarantined (and in beats of older leaders).
   */
  quarantinedIds?: string[];
  /**
   * Split weights, for readers that show how far the job is without reading
   * its split records (`splitlease status` on a large job): every split's,
   * the completed ones', the runnable ones', and what is left of those (the
   * owned ones less the part their estimates count done). Absent in beats
   * of older leaders.
   */
  weight?: JobWeights;
  /**
   * The job-wide rate by the completion times in the split records: `n`
   * splits of weight `w` completed in the five minutes before `at` (the
   * leader's wall clock at the beat), measured over `ms` (five minutes, or
   * since `since`, the earliest tenancy start, if shorter). Absent in beats
   * of older leaders.
   */
  rate?: JobRate;
}

/**
 * Split weights a leader's beat carries ({@linkcode JobCounts.weight}).
 *
 * @example
 * ```ts
 * import type { JobWeights } from "@splitlease/splitlease/admin";
 * const w: JobWeights = { total: 100, completed: 40, runnable: 60, left: 55 };
 * const done = (w.total - w.left - (w.total - w.completed - w.runnable)) / w.total; // 0.45
 * ```
 */
export interface JobWeights {
  /** Weight of every split. */
  total: number;
  /** Of the completed ones. */
  completed: number;
  /** Of the runnable ones. */
  runnable: number;
  /** What is left of the runnable ones: the owned ones less the part their estimates count done. */
  left: number;
}

/**
 * The completion rate a leader's beat carries ({@linkcode JobCounts.rate}).
 *
 * @example
 * ```ts
 * import type { JobRate } from "@splitlease/splitlease/admin";
 * const r: JobRate = { at: Date.now(), ms: 300_000, n: 1200, w: 1200, since: Date.now() - 3_600_000 };
 * const perMinute = r.ms > 0 ? (r.n * 60_000) / r.ms : null; // 240
 * ```
 */
export interface JobRate {
  /** The leader's wall clock when it measured. */
  at: number;
  /** The window the rate is over (ms). */
  ms: number;
  /** Splits completed in the five minutes before `at`. */
  n: number;
  /** Their weight. */
  w: number;
  /** The earliest tenancy start the leader's records name, or `null`. */
  since: number | null;
}

/**
 * How many quarantined split ids a leader publishes on its beat at most
 * ({@linkcode JobCounts.quarantinedIds}).
 *
 * @example
 * ```ts
 * import { QUARANTINED_IDS_PUBLISHED } from "../records.ts";
 * console.log(QUARANTINED_IDS_PUBLISHED); // 20
 * ```
 */
export const QUARANTINED_IDS_PUBLISHED = 20;

/**
 * The `leader` record: the current leader, its heartbeat counter and the job
 * counts it last saw.
 *
 * @example
 * ```ts
 * import type { LeaderRecord } from "@splitlease/splitlease/admin";
 * const l: LeaderRecord = { v: 2, instance: "a", session: "s1", term: 2, beat: 10 };
 * ```
 */
export interface LeaderRecord {
  /** Record layout. */
  v: 2;
  /** Leader instance id. */
  instance: string;
  /** Leader process session nonce. */
  session: string;
  /** Term it won. */
  term: number;
  /** Heartbeat counter, bumped every beat. */
  beat: number;
  /** Job counts as of this beat. */
  counts?: JobCounts;
}

/** A sum of split weights: finite, not negative. */
const weight = z.number().nonnegative().finite();

const CountsSchema: z.ZodType<JobCounts> = z.object({
  members: count,
  runnable: count,
  unowned: count,
  completed: count,
  quarantined: count,
  cancelled: count,
  cut: count.optional(),
  quarantinedIds: z.array(id).max(QUARANTINED_IDS_PUBLISHED).optional(),
  weight: z.object({ total: weight, completed: weight, runnable: weight, left: weight }).optional(),
  rate: z.object({ at: z.number().finite(), ms: count, n: count, w: weight, since: z.number().finite().nullable() }).optional(),
});

/** Checks a decoded `leader` record: who leads, in which session and term, its beat and the job counts it publishes. */
export const LeaderRecordSchema: z.ZodType<LeaderRecord> = z.object({
  v: v2,
  instance: id,
  session: z.string().min(1),
  term: count,
  beat: count,
  counts: CountsSchema.optional(),
});
