/**
 * What a sharded job's member shows (pure): one `/status` and one set of
 * metrics from its shards' — counts summed, the splits it holds in every
 * shard, the worst state, and each shard's own line (docs/DESIGN.md,
 * "Sharded jobs").
 *
 * @module
 */
import type { CoordinatorStats, Histogram } from "./coordinator_stats.ts";
import type { CoordinatorStatus } from "./types.ts";

/** States from the worst (one shard failed: the member failed) to the best. */
const STATE_ORDER: CoordinatorStatus["state"][] = ["failed", "starting", "draining", "stopped", "running"];

/**
 * The status of a member of a sharded job of name `job`, from its shards'
 * (in shard order) and the job's outcome (`null`: none yet).
 *
 * @example
 * ```ts ignore
 * const s = shardedStatus("backfill", shards.map((c) => c.status()), null);
 * ```
 */
export function shardedStatus(job: string, shards: readonly CoordinatorStatus[], outcome: CoordinatorStatus["outcome"]): CoordinatorStatus {
  const first = shards[0];
  const state = STATE_ORDER.find((s) => shards.some((x) => x.state === s)) ?? first.state;
  const counts = { planned: 0, runnable: 0, unclaimed: 0, owned: 0, completed: 0, quarantined: 0, cancelled: 0 };
  for (const s of shards) for (const k of Object.keys(counts) as (keyof typeof counts)[]) counts[k] += s.counts[k];
  const plans = shards.map((s) => s.plan);
  const out: CoordinatorStatus = {
    instance: first.instance,
    session: first.session,
    job,
    state,
    connected: shards.every((s) => s.connected),
    isLeader: shards.some((s) => s.isLeader),
    leader: first.leader,
    plan: plans.every((p) => p !== null)
      ? {
        term: plans[0]!.term,
        finality: plans.every((p) => p!.finality === "final") ? "final" : "open",
        generation: Math.min(...plans.map((p) => p!.generation)),
        planned: plans.reduce((n, p) => n + p!.planned, 0),
      }
      : null,
    paused: shards.some((s) => s.paused === true),
    liveMembers: [...new Set(shards.flatMap((s) => s.liveMembers))].sort(),
    members: Math.max(...shards.map((s) => s.members)),
    held: shards.flatMap((s) => s.held),
    counts,
    quarantined: shards.flatMap((s) => s.quarantined),
    outcome,
    invalidRecords: shards.flatMap((s, i) => s.invalidRecords.map((r) => ({ ...r, key: `shard ${i}: ${r.key}` }))),
    shards: shards.map((s, index) => ({
      index,
      job: s.job,
      state: s.state,
      isLeader: s.isLeader,
      leader: s.leader?.instance ?? null,
      held: s.held.length,
      outcome: s.outcome,
      counts: s.counts,
      // What the HTTP surfaces need per shard: each shard's leader exports that shard's job-wide gauges, and judges its members.
      paused: s.paused === true,
      liveMembers: s.liveMembers,
      members: s.members,
    })),
  };
  const planning = shards.find((s) => s.planning);
  if (planning?.planning) out.planning = planning.planning;
  const retrying = shards.flatMap((s) => s.retrying ?? []).slice(0, 100);
  if (retrying.length > 0) out.retrying = retrying;
  return out;
}

/**
 * The counters of a sharded job's member: its shards' summed (histograms
 * bucket by bucket: every shard observes with the same buckets).
 *
 * @example
 * ```ts ignore
 * const stats = sumStats(shards.map((c) => c.stats()));
 * ```
 */
export function sumStats(all: readonly CoordinatorStats[]): CoordinatorStats {
  const out = structuredClone(all[0]);
  for (const s of all.slice(1)) add(out as unknown as Record<string, unknown>, s as unknown as Record<string, unknown>);
  return out;
}

function add(into: Record<string, unknown>, from: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(from)) {
    const cur = into[k];
    if (typeof v === "number") into[k] = (typeof cur === "number" ? cur : 0) + v;
    else if (isHistogram(v)) {
      if (!isHistogram(cur)) into[k] = structuredClone(v);
      else {
        cur.counts = cur.counts.map((c, i) => c + (v.counts[i] ?? 0));
        cur.sum += v.sum;
        cur.count += v.count;
      }
    } else if (v && typeof v === "object") {
      if (!cur || typeof cur !== "object") into[k] = {};
      add(into[k] as Record<string, unknown>, v as Record<string, unknown>);
    }
  }
}

function isHistogram(x: unknown): x is Histogram {
  return !!x && typeof x === "object" && Array.isArray((x as Histogram).buckets) && Array.isArray((x as Histogram).counts);
}
