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
import { MAX_SHARDS, parseShardJob, shardJob } from "../store/shards.ts";

export { MAX_SHARDS, parseShardJob, shardJob, shardOf } from "../store/shards.ts";

/**
 * Checks a shard count: an integer from 1 to {@linkcode MAX_SHARDS}, and
 * short enough with the job's name for every shard's name to be a job name
 * (at most 128 characters).
 *
 * @throws {SplitleaseError} `INVALID_CONFIG` naming the value and the rule.
 *
 * @example
 * ```ts
 * import { checkShards } from "@splitlease/splitlease/admin";
 * console.log(checkShards("backfill", undefined)); // 1: unsharded
 * console.log(checkShards("backfill", 4)); // 4
 * ```
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
  if (typeof seat.lanesElsewhere !== "function" || typeof seat.onChange !== "function" || (seat.joined !== undefined && typeof seat.joined !== "function")) {
    throw new SplitleaseError("INVALID_CONFIG", "a shard seat needs lanesElsewhere() and onChange(), and joined() if any (ShardedCoordinator builds it)");
  }
  if (index > 0 && parseShardJob(job)?.index !== index) {
    throw new SplitleaseError("INVALID_CONFIG", `shard ${index} of a job joins as job "${shardJob("<job>", index)}", not "${job}"`);
  }
  return { index, count };
}
