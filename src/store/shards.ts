/**
 * A sharded job's shards as stores and operators see them (docs/DESIGN.md,
 * "Sharded jobs"): how many a job may have, which shard a split id belongs
 * to, and the job name each shard's records are under. Below the
 * coordinator so that the operator's reads and actions (`src/fleet/`) fold
 * a job's shards by the same rules its members route by.
 *
 * @module
 */

/**
 * Most shards a job may have (each is a leader election, a bucket and a watch per member).
 *
 * @example
 * ```ts
 * import { MAX_SHARDS } from "@splitlease/splitlease/admin";
 * console.log(MAX_SHARDS); // 64
 * ```
 */
export const MAX_SHARDS = 64;

/**
 * The shard of `count` that split `id` belongs to: FNV-1a (32 bit) of its
 * UTF-16 code units, modulo `count`. Stable across runtimes and versions —
 * every member routes a split to the same shard, and a replan to the one it
 * was planned in — so changing it would split a running job in two.
 *
 * @example
 * ```ts
 * import { shardOf } from "@splitlease/splitlease/admin";
 * console.log(shardOf("part-0001", 1)); // 0: an unsharded job has one shard
 * console.log(shardOf("part-0001", 4) === shardOf("part-0001", 4)); // true
 * ```
 */
export function shardOf(id: string, count: number): number {
  if (count <= 1) return 0;
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    h ^= id.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % count;
}

/**
 * The job name of shard `index` of `job`: the job itself for shard 0 (a
 * job's first shard is where an unsharded job's records are, and where the
 * catalog and the views find the shard count), `<job>--shard<index>` for
 * the others.
 *
 * @example
 * ```ts
 * import { shardJob } from "@splitlease/splitlease/admin";
 * console.log(shardJob("backfill", 0)); // "backfill"
 * console.log(shardJob("backfill", 3)); // "backfill--shard3"
 * ```
 */
export function shardJob(job: string, index: number): string {
  return index === 0 ? job : `${job}--shard${index}`;
}

/**
 * The shard a store's job name names, if it is one of a sharded job's
 * (`<job>--shard<index>`, index ≥ 1): what the catalog folds into its job.
 *
 * @example
 * ```ts
 * import { parseShardJob } from "@splitlease/splitlease/admin";
 * console.log(parseShardJob("backfill--shard3")); // { job: "backfill", index: 3 }
 * console.log(parseShardJob("backfill")); // undefined
 * ```
 */
export function parseShardJob(name: string): { job: string; index: number } | undefined {
  const m = /^(.+)--shard([1-9][0-9]*)$/.exec(name);
  return m ? { job: m[1], index: Number(m[2]) } : undefined;
}
