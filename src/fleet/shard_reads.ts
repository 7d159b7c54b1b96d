/**
 * What `splitlease status`, `splits` and `wait`'s progress read of a job,
 * over every shard of a sharded one (docs/OPERATIONS.md, "Sharding a
 * job"): each shard's view read from its own store with the same query,
 * folded into the job's (`mergeShardViews`). Over one store they are the
 * unsharded reads, unchanged.
 *
 * @module
 */
import { buildFleetSummary, FULL_READ_MAX_SPLITS, type OverviewOptions, readFleetOverview, readSummarySnapshot, splitsOf } from "./fleet_summary.ts";
import { buildFleetView, normalizeFleetQuery } from "./fleet_view.ts";
import type { JobShards } from "./job_shards.ts";
import { readFleet, readFleetSnapshot } from "./read_fleet.ts";
import { readSplitsPage } from "./read_splits.ts";
import { mergeShardViews } from "./shard_views.ts";
import type { FleetQuery } from "./fleet_query.ts";
import type { FleetView } from "./types.ts";

/**
 * The overview of a job (`readFleetOverview`, one split listed at most)
 * over every shard: a full read of each shard while the job has at most
 * `fullReadMax` splits in all, else each shard's summary (the leader's
 * beat) — decided once for the job, so that its figures all come from one
 * kind of read. `liveness` is not taken: it is one shard's leader's.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { readJobOverview } from "@splitlease/splitlease/admin";
 * const v = await readJobOverview({ job: "j", stores: [new MemoryStore(), new MemoryStore()], jobs: ["j", "j--shard1"] });
 * console.log(v.shards?.length); // 2
 * ```
 */
export async function readJobOverview(shards: JobShards, options: Omit<OverviewOptions, "liveness"> = {}): Promise<FleetView> {
  if (shards.stores.length === 1) return await readFleetOverview(shards.stores[0], options);
  const wallNow = options.wallNow ?? Date.now;
  if (!options.full) {
    const small = await Promise.all(shards.stores.map((s) => readSummarySnapshot(s, wallNow)));
    if (small.reduce((n, s) => n + splitsOf(s), 0) > (options.fullReadMax ?? FULL_READ_MAX_SPLITS)) {
      return mergeShardViews(small.map((s) => buildFleetSummary(s, { limit: 1 })), shards.jobs);
    }
  }
  const full = await Promise.all(shards.stores.map((s) => readFleetSnapshot(s, wallNow)));
  return mergeShardViews(full.map((s) => buildFleetView(s, { limit: 1 })), shards.jobs);
}

/**
 * One page of a job's splits (`splitlease splits`) over every shard: each
 * shard read in full while it has at most {@linkcode FULL_READ_MAX_SPLITS}
 * splits, else one page of it (`readSplitsPage`: only the records that can
 * be on it decoded, its counts the leader's beat); the job's page is the
 * first `limit` of theirs by id, its cursor valid for every shard.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { readJobSplits } from "@splitlease/splitlease/admin";
 * const v = await readJobSplits({ job: "j", stores: [new MemoryStore()], jobs: ["j"] }, { state: "quarantined" });
 * console.log(v.splits.length, v.page.next); // 0 null
 * ```
 */
export async function readJobSplits(shards: JobShards, query: FleetQuery = {}): Promise<FleetView> {
  normalizeFleetQuery(query); // a bad query costs no read
  const views = await Promise.all(shards.stores.map(async (store) => {
    const large = splitsOf(await readSummarySnapshot(store)) > FULL_READ_MAX_SPLITS;
    return large ? await readSplitsPage(store, query) : await readFleet(store, query);
  }));
  return mergeShardViews(views, shards.jobs);
}
