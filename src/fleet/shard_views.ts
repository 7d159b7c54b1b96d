/**
 * One fleet view of a sharded job from its shards' views (pure;
 * docs/OPERATIONS.md, "Sharding a job"): what `status`, `splits`, `wait`'s
 * progress, `GET /fleet` and the fleet page show of a job of K shards, each
 * shard's view read from its own store with the same query. Counts,
 * weights, rates and totals are summed; a member (one instance in every
 * shard) is one line, its load summed and its liveness the worst any shard
 * judges; the page is the query's first `limit` splits by id across shards
 * (each shard's view holds its own first `limit`, so their union holds the
 * job's); the plan's standing and outcome fold by the rule the members
 * announce the job's by (`shard_fold.ts`). Each shard keeps a line of its
 * own in `shards`.
 *
 * @module
 */
import { etaOf, RECENT_LISTED, SPARK_BUCKETS } from "./fleet_rate.ts";
import { jobResultOf } from "./job_result.ts";
import type { MemberLiveness } from "./member_liveness.ts";
import { foldResults, foldRuns } from "./shard_fold.ts";
import type { FleetCounts, FleetRate, FleetSummary } from "./fleet_figures.ts";
import type { FleetMember } from "./fleet_member.ts";
import type { FleetShard, FleetView } from "./types.ts";
import { emptyCounts } from "./view_parts.ts";

/** Unreadable records named in a view at most (as `buildFleetView`). */
const MAX_INVALID_LISTED = 20;

/**
 * The view of a sharded job from each shard's view (in shard order, each
 * built with the same query) and the job name of each shard's records.
 * One view is returned as it is: an unsharded job's view never changes.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { mergeShardViews, readFleet } from "@splitlease/splitlease/admin";
 * const views = await Promise.all([new MemoryStore(), new MemoryStore()].map((s) => readFleet(s, { limit: 10 })));
 * const job = mergeShardViews(views, ["backfill", "backfill--shard1"]);
 * console.log(job.shards?.length, job.counts.total); // 2 0
 * ```
 */
export function mergeShardViews(views: readonly FleetView[], jobs: readonly string[]): FleetView {
  if (views.length === 1) return views[0];
  const first = views[0];
  const at = Math.max(...views.map((v) => v.at));
  const counts = sumCounts(views.map((v) => v.counts));
  const limit = first.page.limit;
  const listed = views.flatMap((v) => v.splits).sort(byId);
  const more = listed.length > limit || views.some((v) => v.page.next !== null);
  const splits = listed.slice(0, limit);
  const invalid = views.flatMap((v, i) => v.invalid.map((x) => ({ key: `shard ${i}: ${x.key}`, message: x.message })))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return {
    at,
    basis: views.some((v) => v.basis === "beat") ? "beat" : "records",
    fingerprint: views.find((v) => v.fingerprint !== null)?.fingerprint ?? null,
    leader: first.leader,
    plan: mergePlans(views),
    liveness: first.liveness,
    members: mergeMembers(views.map((v) => v.members)),
    counts,
    rate: mergeRates(views, at, counts),
    summary: mergeSummaries(views),
    recent: views.flatMap((v) => v.recent)
      .sort((a, b) => (b.completedAt ?? 0) - (a.completedAt ?? 0) || byId(a, b))
      .slice(0, RECENT_LISTED),
    splits,
    page: {
      ...first.page,
      matched: views.reduce((n, v) => n + v.page.matched, 0),
      next: more && splits.length > 0 ? splits[splits.length - 1].id : null,
    },
    invalid: invalid.slice(0, MAX_INVALID_LISTED),
    shards: views.map((v, index): FleetShard => {
      const result = v.plan?.result ?? jobResultOf(undefined);
      return {
        index,
        job: jobs[index],
        basis: v.basis,
        leader: v.leader,
        state: result.state,
        outcome: result.outcome,
        planned: v.plan?.planned ?? 0,
        counts: v.counts,
        members: v.members.length,
      };
    }),
  };
}

const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

function sumCounts(all: readonly FleetCounts[]): FleetCounts {
  const out = emptyCounts();
  for (const c of all) for (const k of Object.keys(out) as (keyof FleetCounts)[]) out[k] += c[k];
  return out;
}

/** The job's plan: planned summed, the standing and outcome folded, final once every shard's is. */
function mergePlans(views: readonly FleetView[]): FleetView["plan"] {
  const plans = views.map((v) => v.plan);
  const any = plans.find((p) => p !== null);
  if (!any) return null;
  const result = foldResults(plans.map((p) => p?.result ?? jobResultOf(undefined)));
  return {
    term: any.term,
    finality: plans.every((p) => p?.finality === "final") ? "final" : "open",
    generation: Math.min(...plans.map((p) => p?.generation ?? 0)),
    planned: plans.reduce((n, p) => n + (p?.planned ?? 0), 0),
    outcome: result.outcome?.kind ?? null,
    result,
    run: Math.min(...plans.map((p) => p?.run ?? 1)),
    history: foldRuns(plans.map((p) => p?.history ?? [])),
  };
}

/** Worst first: a member unresponsive in one shard is unresponsive (splits there still name it). */
const LIVENESS_ORDER: MemberLiveness[] = ["unresponsive", "gone", "unknown", "alive"];

/** One line per instance: its load in every shard summed, its liveness the worst any shard judges. */
function mergeMembers(lists: readonly FleetMember[][]): FleetMember[] {
  const by = new Map<string, FleetMember[]>();
  for (const list of lists) for (const m of list) by.set(m.instance, [...(by.get(m.instance) ?? []), m]);
  return [...by.keys()].sort().map((instance) => {
    const all = by.get(instance)!;
    const latest = all.reduce((a, b) => ((b.lastBeatAt ?? -Infinity) > (a.lastBeatAt ?? -Infinity) ? b : a));
    const liveness = LIVENESS_ORDER.find((l) => all.some((m) => m.liveness === l)) ?? latest.liveness;
    const owned = all.reduce((n, m) => n + m.owned, 0);
    const helds = all.flatMap((m) => (m.held === null ? [] : [m.held]));
    const held = helds.length ? helds.reduce((n, h) => n + h, 0) : null;
    const draining = all.some((m) => m.draining);
    const beats = all.flatMap((m) => (m.lastBeatAt === null ? [] : [m.lastBeatAt]));
    const activity: FleetMember["activity"] = liveness === "gone" || liveness === "unresponsive"
      ? liveness
      : draining ? "draining" : latest.maxInFlight === 0 ? "standby" : owned > 0 || (held ?? 0) > 0 ? "working" : "idle";
    return {
      ...latest,
      owned,
      held,
      beat: Math.max(...all.map((m) => m.beat)),
      draining,
      planner: all.some((m) => m.planner),
      leader: all.some((m) => m.leader),
      alive: liveness === "unknown" ? null : liveness === "alive",
      liveness,
      lease: Math.max(...all.map((m) => m.lease)),
      activity,
      lastBeatAt: beats.length ? Math.max(...beats) : null,
      perMinute: all.reduce((n, m) => n + m.perMinute, 0),
    };
  });
}

/** The job's rate: completions and weights summed, the rate in weight the sum of the shards', the ETA of the work left at it. */
function mergeRates(views: readonly FleetView[], at: number, counts: FleetCounts): FleetRate {
  const rates = views.map((v) => v.rate);
  const sum = (k: "completedInWindow" | "weightInWindow" | "timed" | "untimed" | "remainingWeight" | "partialWeight") =>
    rates.reduce((n, r) => n + r[k], 0);
  const starts = rates.flatMap((r) => (r.startedAt === null ? [] : [r.startedAt]));
  const perMinutes = rates.flatMap((r) => (r.perMinute === null ? [] : [r.perMinute]));
  const weightPerMs = rates.reduce((n, r) => n + (r.windowMs > 0 ? r.weightInWindow / r.windowMs : 0), 0);
  const remainingWeight = sum("remainingWeight");
  const eta = etaOf(at, counts.runnable, counts.quarantined, remainingWeight, weightPerMs);
  return {
    windowMs: Math.max(...rates.map((r) => r.windowMs)),
    startedAt: starts.length ? Math.min(...starts) : null,
    completedInWindow: sum("completedInWindow"),
    weightInWindow: sum("weightInWindow"),
    perMinute: perMinutes.length ? perMinutes.reduce((n, p) => n + p, 0) : null,
    timed: sum("timed"),
    untimed: sum("untimed"),
    remainingWeight,
    partialWeight: sum("partialWeight"),
    eta,
    spark: mergeSparks(views, at),
  };
}

/**
 * The shards' sparklines on the coarsest one's buckets: each bucket's
 * completions counted into the bucket that holds its middle (shards of one
 * job began together, so their buckets are most often the same).
 */
function mergeSparks(views: readonly FleetView[], at: number): FleetRate["spark"] {
  const sparks = views.map((v) => ({ ...v.rate.spark, at: v.at })).filter((s) => s.counts.length > 0);
  const bucketMs = Math.max(...views.map((v) => v.rate.spark.bucketMs));
  if (sparks.length === 0) return { bucketMs, counts: [] };
  const counts: number[] = new Array(SPARK_BUCKETS).fill(0);
  for (const s of sparks) {
    s.counts.forEach((n, j) => {
      if (n === 0) return;
      const age = at - s.at + (s.counts.length - 1 - j) * s.bucketMs + s.bucketMs / 2;
      const b = Math.floor(age / bucketMs);
      if (b < SPARK_BUCKETS) counts[SPARK_BUCKETS - 1 - b] += n;
    });
  }
  return { bucketMs, counts };
}

/** What the job did: totals summed, from the first start to the last completion over every shard. */
function mergeSummaries(views: readonly FleetView[]): FleetSummary {
  const all = views.map((v) => v.summary);
  const sum = (k: "records" | "splitsWithRecords" | "retries" | "failures" | "lost" | "cuts") => all.reduce((n, s) => n + s[k], 0);
  const starts = all.flatMap((s) => (s.startedAt === null ? [] : [s.startedAt]));
  const lasts = all.flatMap((s) => (s.lastCompletedAt === null ? [] : [s.lastCompletedAt]));
  const startedAt = starts.length ? Math.min(...starts) : null;
  const lastCompletedAt = lasts.length ? Math.max(...lasts) : null;
  const tookMs = startedAt !== null && lastCompletedAt !== null ? Math.max(0, lastCompletedAt - startedAt) : null;
  const records = sum("records");
  const timed = views.reduce((n, v) => n + v.rate.timed, 0);
  return {
    records,
    splitsWithRecords: sum("splitsWithRecords"),
    retries: sum("retries"),
    failures: sum("failures"),
    lost: sum("lost"),
    cuts: sum("cuts"),
    startedAt,
    lastCompletedAt,
    tookMs,
    perMinute: tookMs ? (timed * 60_000) / tookMs : null,
    recordsPerSecond: tookMs && records > 0 ? (records * 1000) / tookMs : null,
  };
}
