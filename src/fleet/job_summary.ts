/**
 * What `splitlease jobs` says of a job, from what a {@linkcode JobCatalog}
 * read of it (pure): finished or not and how, its counts, when it was
 * created and finished, and whether a member is still live — the rule
 * `splitlease delete` refuses a job by.
 *
 * @module
 */
import {
  type JobOutcome,
  type JobRun,
  LeaderRecordSchema,
  MemberRecordSchema,
  PlanRecordSchema,
  safeDecodeRecord,
} from "../records.ts";
import type { CatalogEntry, JobListing } from "../store/job_catalog.ts";
import { keys } from "../store/keys.ts";
import { pastLease } from "./member_liveness.ts";
import { shardSeatOf } from "./job_shards.ts";

/**
 * Where a job stands, as `splitlease jobs` prints it: `complete`, `stalled`
 * (only quarantined splits left), `failed` (its planner failed for good),
 * `paused` (an operator paused it), `running` (no outcome, a member live),
 * `unfinished` (no outcome and no live member: its workers are gone), `new`
 * (nothing planned yet), `empty` (no record at all: a bucket or row nothing
 * was written to) or
 * `unreadable` (its `plan` record cannot be read).
 *
 * @example
 * ```ts
 * import type { JobState } from "@splitlease/splitlease/admin";
 * const finished = (s: JobState) => s === "complete" || s === "failed";
 * ```
 */
export type JobState = "complete" | "stalled" | "failed" | "paused" | "running" | "unfinished" | "new" | "empty" | "unreadable";

/**
 * One job of a server, summarized.
 *
 * @example
 * ```ts
 * import type { JobSummary } from "@splitlease/splitlease/admin";
 * const line = (j: JobSummary) => `${j.job} ${j.state} ${j.counts?.completed ?? "-"} completed`;
 * ```
 */
export interface JobSummary {
  /** The job name. */
  job: string;
  /** Where it stands. */
  state: JobState;
  /** The outcome its `plan` record carries, or `null`. */
  outcome: JobOutcome["kind"] | null;
  /** Its fingerprint (the `job` record), or `null`. */
  fingerprint: string | null;
  /** Splits planned (the `plan` record), or `null`. */
  planned: number | null;
  /**
   * Split counts: the outcome's once finished, else the leader's last beat;
   * `null` when neither is known. `cancelled` and `permanent` (of the
   * quarantined) are what the job skipped; `permanent` is known from the
   * outcome only (0 before it).
   */
  counts: { completed: number; quarantined: number; permanent: number; cancelled: number; runnable: number } | null;
  /** When its first worker created it (the `job` record), or `null`. */
  createdAt: number | null;
  /** When its outcome was written, where the backend records write times; else `null`. */
  finishedAt: number | null;
  /** Member records (live or left behind by a crash). */
  members: number;
  /**
   * Members not past their lease, by instance: the newest of the member's
   * own time at its last beat and the server's write time is less than the
   * lease its record names (`LIVE_WITHIN_MS`, two minutes, when it names none)
   * old. A record with no time at all counts as live.
   */
  liveMembers: string[];
  /** Bytes its records take on the server, or `null` when unknown. */
  bytes: number | null;
  /** Its run (generation): 1, then one more per `splitlease rerun`; `null` without a plan record. */
  run: number | null;
  /** Its earlier runs, oldest first (the plan record's history). */
  history: JobRun[];
  /**
   * Of a sharded job (docs/OPERATIONS.md, "Sharding a job"): its shard
   * count, the summary folded from every shard's listing (`listShardedJobs`).
   * Absent for an unsharded job.
   */
  shards?: number;
  /** Of one shard listed on its own (`<job>--shard<i>`, its job not listed with it): which shard of how many. */
  shard?: { index: number; count: number };
  /** What is wrong with a sharded job's shards (one missing, one of another count) and the fix; absent when nothing is. */
  problem?: string;
}

/** Whether a member record counts as live at `now` (past its lease: not; no time at all: yes). */
export function isLiveMember(e: CatalogEntry, now: number): boolean {
  const r = safeDecodeRecord(e.key, e.value, MemberRecordSchema);
  return pastLease(r.ok ? r.value : undefined, e.writtenAt, now) !== true;
}

/**
 * Summarizes one job from its listing at wall-clock time `now`. A member
 * with no time at all (an old record on a backend without write times)
 * counts as live: deleting a job under a worker is what this guards.
 *
 * @example
 * ```ts
 * import { summarizeJob } from "@splitlease/splitlease/admin";
 * const s = summarizeJob({ job: "j", record: undefined, plan: undefined, leader: undefined, members: [], bytes: null }, Date.now());
 * console.log(s.state); // "new"
 * ```
 */
export function summarizeJob(l: JobListing, now: number): JobSummary {
  const job = l.record ? jobRecordOf(l.record.value) : undefined;
  const plan = l.plan ? safeDecodeRecord(l.plan.key, l.plan.value, PlanRecordSchema) : undefined;
  const leader = l.leader ? safeDecodeRecord(l.leader.key, l.leader.value, LeaderRecordSchema) : undefined;
  const liveMembers = l.members.filter((m) => isLiveMember(m, now)).map((m) => m.key.slice(keys.memberPrefix.length));
  const outcome = plan?.ok ? plan.value.outcome : undefined;
  let state: JobState;
  if (!l.record && !l.plan && !l.leader && l.members.length === 0) state = "empty";
  else if (plan && !plan.ok) state = "unreadable";
  else if (outcome) state = outcome.kind === "allComplete" ? "complete" : outcome.kind === "stalled" ? "stalled" : "failed";
  else if (!plan) state = "new";
  else if (plan.value.paused) state = "paused";
  else state = liveMembers.length > 0 ? "running" : "unfinished";
  let counts: JobSummary["counts"] = null;
  if (outcome && outcome.kind !== "planFailed") {
    counts = {
      completed: outcome.completed,
      quarantined: outcome.kind === "stalled" ? outcome.quarantined : 0,
      permanent: outcome.kind === "stalled" ? outcome.permanent ?? 0 : 0,
      cancelled: outcome.cancelled ?? 0,
      runnable: 0,
    };
  } else if (leader?.ok && leader.value.counts) {
    const c = leader.value.counts;
    counts = { completed: c.completed, quarantined: c.quarantined, permanent: 0, cancelled: c.cancelled, runnable: c.runnable };
  }
  return {
    job: l.job,
    state,
    outcome: outcome?.kind ?? null,
    fingerprint: job?.fingerprint ?? null,
    planned: plan?.ok ? plan.value.planned : null,
    counts,
    createdAt: job?.createdAt ?? null,
    finishedAt: outcome ? l.plan?.writtenAt ?? null : null,
    members: l.members.length,
    liveMembers: liveMembers.sort(),
    bytes: l.bytes,
    run: plan?.ok ? plan.value.run ?? 1 : null,
    history: plan?.ok ? plan.value.history ?? [] : [],
    ...shardOfRecord(l),
  };
}

/** The seat of a listing that is one shard (index above 0) of a sharded job, as its job record names it. */
function shardOfRecord(l: JobListing): { shard?: { index: number; count: number } } {
  try {
    const seat = shardSeatOf(l.job, l.record?.value);
    return seat && seat.index > 0 ? { shard: seat } : {};
  } catch {
    return {};
  }
}

/**
 * The fingerprint and creation time of a `job` record of any layout (a job
 * started by an older version is listed too, and its layout refused only
 * by a worker that joins it).
 */
function jobRecordOf(value: string): { fingerprint: string | null; createdAt: number | null } | undefined {
  try {
    const j = JSON.parse(value) as { fingerprint?: unknown; createdAt?: unknown };
    if (typeof j !== "object" || j === null) return undefined;
    return {
      fingerprint: typeof j.fingerprint === "string" && j.fingerprint.length > 0 ? j.fingerprint : null,
      createdAt: typeof j.createdAt === "number" && Number.isFinite(j.createdAt) ? j.createdAt : null,
    };
  } catch {
    return undefined;
  }
}

/**
 * Why `splitlease delete` must not remove this job (a sentence), or
 * `null` when it may: never while a member is live (not past its lease);
 * without `force`, only a `complete` job or an `empty` one (no records at
 * all), since any other job's records are the only place its progress
 * lives — a `stalled` one's quarantined splits wait for a requeue or
 * cancel, an unfinished one's work is not done.
 *
 * @example
 * ```ts
 * import { deleteRefusal, summarizeJob } from "@splitlease/splitlease/admin";
 * const s = summarizeJob({ job: "j", record: undefined, plan: undefined, leader: undefined, members: [], bytes: null }, Date.now());
 * console.log(deleteRefusal(s, false)); // null: the job is empty
 * ```
 */
export function deleteRefusal(s: JobSummary, force: boolean): string | null {
  if (s.liveMembers.length > 0) {
    return `job "${s.job}" has ${s.liveMembers.length} live member(s) (${s.liveMembers.slice(0, 5).join(", ")}` +
      `${s.liveMembers.length > 5 ? ", …" : ""}): stop its workers first (a member counts as live until its lease ` +
      `has passed since its last beat)`;
  }
  if (force) return null;
  // One shard of a sharded job: deleting it alone leaves the job without that shard's splits.
  if (s.shard) {
    return `job "${s.job}" is shard ${s.shard.index} of a job of ${s.shard.count} shards: delete the whole job by its name ` +
      `(the name without --shard${s.shard.index}), or --force deletes this shard alone`;
  }
  if (s.problem) return `job "${s.job}": ${s.problem}; --force deletes the shards it has`;
  if (s.state === "complete" || s.state === "empty") return null;
  const why = s.state === "stalled"
    ? `is stalled: its ${s.counts?.quarantined ?? "quarantined"} quarantined split(s) wait for a requeue or cancel, and their progress lives only here`
    : s.state === "failed"
    ? "failed (its planner failed): a restart plans again, and the progress of the splits it has lives only here"
    : `is ${s.state} (no outcome): its work is not finished`;
  return `job "${s.job}" ${why}; --force deletes it anyway`;
}
