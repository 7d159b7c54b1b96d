/**
 * A server's jobs with each sharded job listed once (docs/OPERATIONS.md,
 * "Sharding a job"): a job catalog lists every shard's records as a job of
 * its own (`<job>`, `<job>--shard1`, …); `splitlease jobs` and `delete`
 * fold them into the job, by the shard count its first shard's `job`
 * record names — its counts summed, its state where all its shards stand,
 * its members the instances of every shard, and what is wrong with its
 * shards (one missing, or one that says it is of another count) said.
 *
 * @module
 */
import type { JobCatalog, JobListing } from "../store/job_catalog.ts";
import { keys } from "../store/keys.ts";
import { shardJob } from "../store/shards.ts";
import { shardSeatOf } from "./job_shards.ts";
import { isLiveMember, type JobState, type JobSummary, summarizeJob } from "./job_summary.ts";
import { foldRuns } from "./shard_fold.ts";

/** The seat a listing's `job` record names, or a sentence saying why it names none that is a seat. */
function seatOf(l: JobListing): { index: number; count: number } | string | undefined {
  try {
    return shardSeatOf(l.job, l.record?.value);
  } catch (e) {
    return (e as Error).message;
  }
}

/**
 * Summaries of a server's jobs from its listings (every job of a catalog),
 * a sharded job once: its first shard's listing and the listings of its
 * other shards folded into one {@linkcode JobSummary} (with `shards`). A
 * listing of a shard whose job is not among them is listed on its own.
 * Sorted by name.
 *
 * @example
 * ```ts
 * import { foldJobListings } from "@splitlease/splitlease/admin";
 * const empty = (job: string) => ({ job, record: undefined, plan: undefined, leader: undefined, members: [], bytes: null });
 * console.log(foldJobListings([empty("a"), empty("b")], Date.now()).map((j) => j.job)); // ["a", "b"]
 * ```
 */
export function foldJobListings(listings: readonly JobListing[], now: number): JobSummary[] {
  const byName = new Map(listings.map((l) => [l.job, l]));
  const folded = new Set<string>();
  const out: JobSummary[] = [];
  for (const l of listings) {
    const seat = seatOf(l);
    if (typeof seat !== "object" || seat.index !== 0 || seat.count === 1) continue;
    const shards = [l, ...Array.from({ length: seat.count - 1 }, (_, i) => byName.get(shardJob(l.job, i + 1)))];
    shards.forEach((s) => s && folded.add(s.job));
    out.push(summarizeShards(l.job, shards, now));
  }
  for (const l of listings) if (!folded.has(l.job)) out.push(summarizeJob(l, now));
  return out.sort((a, b) => (a.job < b.job ? -1 : a.job > b.job ? 1 : 0));
}

/**
 * The listings of `job`'s shards, in shard order (`undefined` where a
 * shard has none), read from `catalog`: `[listing]` for an unsharded job
 * or a shard named directly, `[]` when the job does not exist.
 *
 * @example
 * ```ts ignore
 * const listings = await readJobListings(catalog, "backfill"); // 4 listings of a job of 4 shards
 * ```
 */
export async function readJobListings(catalog: JobCatalog, job: string): Promise<(JobListing | undefined)[]> {
  const [first] = await catalog.list(job);
  if (!first) return [];
  const seat = seatOf(first);
  if (typeof seat !== "object" || seat.index !== 0 || seat.count === 1) return [first];
  const rest = await Promise.all(Array.from({ length: seat.count - 1 }, (_, i) => catalog.list(shardJob(job, i + 1))));
  return [first, ...rest.map(([l]) => l)];
}

/**
 * Lists and summarizes the jobs of a catalog (every job, or only `job`),
 * sorted by name; a sharded job once, its shards folded in
 * ({@linkcode foldJobListings}). A shard's own name (`<job>--shard2`)
 * lists that one shard.
 *
 * @example
 * ```ts
 * import { listJobs } from "@splitlease/splitlease/admin";
 * import type { JobCatalog } from "@splitlease/splitlease/store";
 * declare const catalog: JobCatalog;
 * for (const j of await listJobs(catalog)) console.log(j.job, j.shards ?? 1, j.state);
 * ```
 */
export async function listJobs(catalog: JobCatalog, job?: string, now: () => number = Date.now): Promise<JobSummary[]> {
  if (job === undefined) {
    const listings = await catalog.list();
    return foldJobListings(listings, now());
  }
  const listings = await readJobListings(catalog, job);
  if (listings.length === 0) return [];
  return [listings.length === 1 ? summarizeJob(listings[0]!, now()) : summarizeShards(job, listings, now())];
}

/**
 * Summarizes a sharded job from its shards' listings (shard order;
 * `undefined`: the shard has none): see the module doc. A missing shard,
 * or one whose `job` record names another seat, is said in `problem`;
 * such a job is never `complete` (a missing shard's splits never ran).
 *
 * @example
 * ```ts ignore
 * const s = summarizeShards("backfill", await readJobListings(catalog, "backfill"), Date.now());
 * ```
 */
export function summarizeShards(job: string, listings: readonly (JobListing | undefined)[], now: number): JobSummary {
  const count = listings.length;
  const present = listings.flatMap((l, index) => (l ? [{ l, index, s: summarizeJob(l, now) }] : []));
  const problems: string[] = [];
  const missing = listings.flatMap((l, i) => (l ? [] : [i]));
  if (missing.length) {
    problems.push(
      `shard${missing.length > 1 ? "s" : ""} ${missing.join(", ")} (${missing.map((i) => shardJob(job, i)).join(", ")}) ` +
        `of its ${count} ha${missing.length > 1 ? "ve" : "s"} no records: start a worker of the job (it creates them and ` +
        `plans their part again) or delete the job (splitlease delete --force ${job})`,
    );
  }
  for (const { l, index } of present) {
    const seat = seatOf(l);
    if (l.record === undefined || (typeof seat === "object" && seat.index === index && seat.count === count)) continue;
    const says = typeof seat === "string" ? seat : !seat ? "that it is not sharded" : seat.count !== count ? `${seat.count} shards` : `shard ${seat.index}`;
    problems.push(
      `shard ${index} (${l.job}) says ${says}, not shard ${index} of ${count}: every member of a job must run with the same ` +
        `shards; delete the job (splitlease delete --force ${job}) and start it again with one count`,
    );
  }
  const summaries = present.map((p) => p.s);
  let state = foldStates(summaries.map((s) => s.state));
  if (problems.length && (state === "complete" || state === "stalled" || state === "empty")) state = "unfinished";
  const outcome = state === "complete" ? "allComplete" : state === "stalled" ? "stalled" : state === "failed" ? "planFailed" : null;
  const known = summaries.flatMap((s) => (s.counts ? [s.counts] : []));
  const counts = known.length
    ? known.reduce((a, c) => ({
      completed: a.completed + c.completed,
      quarantined: a.quarantined + c.quarantined,
      permanent: a.permanent + c.permanent,
      cancelled: a.cancelled + c.cancelled,
      runnable: a.runnable + c.runnable,
    }))
    : null;
  const planned = summaries.some((s) => s.planned !== null) ? summaries.reduce((n, s) => n + (s.planned ?? 0), 0) : null;
  const created = summaries.flatMap((s) => (s.createdAt === null ? [] : [s.createdAt]));
  const finished = summaries.flatMap((s) => (s.finishedAt === null ? [] : [s.finishedAt]));
  const runs = summaries.flatMap((s) => (s.run === null ? [] : [s.run]));
  // One instance is a member of every shard: the job's members are the instances, live when live in any shard.
  const members = new Set<string>(), live = new Set<string>();
  for (const { l } of present) {
    for (const m of l.members) {
      const instance = m.key.slice(keys.memberPrefix.length);
      members.add(instance);
      if (isLiveMember(m, now)) live.add(instance);
    }
  }
  const first = summaries[0];
  return {
    job,
    state,
    outcome,
    fingerprint: first?.fingerprint ?? null,
    planned,
    counts,
    createdAt: created.length ? Math.min(...created) : null,
    finishedAt: outcome && finished.length ? Math.max(...finished) : null,
    members: members.size,
    liveMembers: [...live].sort(),
    bytes: summaries.length === count && summaries.every((s) => s.bytes !== null) ? summaries.reduce((n, s) => n + s.bytes!, 0) : null,
    run: runs.length ? Math.min(...runs) : null,
    history: foldRuns(summaries.map((s) => s.history)),
    shards: count,
    ...(problems.length ? { problem: problems.join("; ") } : {}),
  };
}

/** Where a job stands from where its shards do (see the module doc). */
function foldStates(states: readonly JobState[]): JobState {
  const has = (s: JobState) => states.includes(s);
  const only = (...ok: JobState[]) => states.every((s) => ok.includes(s));
  if (states.length === 0) return "empty";
  if (has("unreadable")) return "unreadable";
  if (has("failed")) return "failed";
  if (only("complete")) return "complete";
  if (only("complete", "stalled")) return "stalled";
  if (only("empty")) return "empty";
  if (has("paused")) return "paused";
  if (has("running")) return "running";
  if (only("new", "empty")) return "new";
  return "unfinished";
}
