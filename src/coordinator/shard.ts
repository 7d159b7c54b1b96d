/**
 * A sharded job's shards (docs/DESIGN.md, "Sharded jobs"): which shard a
 * planned split belongs to, and the name of each shard's store. A job of
 * `shards: K` is K jobs that share a name, a planner, a lane budget and an
 * outcome: each shard has its own records (its own NATS bucket, PostgreSQL
 * counter, Redis hash tag), its own leader, assignment records and plan.
 *
 * @module
 */
import { SplitleaseError } from "../errors.ts";
import type { ShardSeat } from "./join_options.ts";

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

/**
 * Checks a shard count: an integer from 1 to {@linkcode MAX_SHARDS}, and
 * short enough with the job's name for every shard's name to be a job name
 * (at most 128 characters).
 *
 * @example
 * ```ts
 * import { checkShards } from "@splitlease/splitlease/admin";
 * console.log(checkShards("backfill", 4)); // 4
 * console.log(checkShards("backfill", undefined)); // 1
 * ```
 *
 * @throws {SplitleaseError} `INVALID_CONFIG` naming the value and the rule.
 */
export function checkShards(job: string, shards: unknown): number {
  if (shards === undefined) return 1;
  if (typeof shards !== "number" || !Number.isInteger(shards) || shards < 1 || shards > MAX_SHARDS) {
    throw new SplitleaseError("INVALID_CONFIG", `shards must be an integer from 1 to ${MAX_SHARDS} (got ${typeof shards === "number" ? String(shards) : JSON.stringify(shards)})`);
  }
  const longest = shardJob(job, shards - 1);
  if (longest.length > 128) {
    throw new SplitleaseError(
      "INVALID_CONFIG",
      `job "${job}" is too long for ${shards} shards: shard ${shards - 1}'s records are job "${longest}" (${longest.length} characters, at most 128); shorten the job name`,
    );
  }
  return shards;
}

/**
 * The shard a coordinator joins as (`{ index: 0, count: 1 }` without a
 * seat), checked: a valid count, an index below it, and a job name that is
 * that shard's ({@linkcode shardJob} of the job's first shard).
 *
 * @throws {SplitleaseError} `INVALID_CONFIG` naming what is wrong.
 */
export function checkSeat(seat: ShardSeat | undefined, job: string): { index: number; count: number } {
  if (seat === undefined) return { index: 0, count: 1 };
  const { index, count } = seat;
  if (!Number.isInteger(count) || count < 1 || count > MAX_SHARDS) {
    throw new SplitleaseError("INVALID_CONFIG", `shard count must be an integer from 1 to ${MAX_SHARDS} (got ${JSON.stringify(count)})`);
  }
  if (!Number.isInteger(index) || index < 0 || index >= count) {
    throw new SplitleaseError("INVALID_CONFIG", `shard index must be an integer from 0 to ${count - 1} (got ${JSON.stringify(index)})`);
  }
  if (typeof seat.lanesElsewhere !== "function" || typeof seat.onChange !== "function") {
    throw new SplitleaseError("INVALID_CONFIG", "a shard seat needs lanesElsewhere() and onChange() (ShardedCoordinator builds it)");
  }
  if (index > 0 && parseShardJob(job)?.index !== index) {
    throw new SplitleaseError("INVALID_CONFIG", `shard ${index} of a job joins as job "${shardJob("<job>", index)}", not "${job}"`);
  }
  return { index, count };
}
