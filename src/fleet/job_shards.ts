/**
 * The stores of a job as an operator reaches it (docs/OPERATIONS.md,
 * "Sharding a job"): one store for an unsharded job, one per shard for a
 * job of `shards: K`. A tool that is given a job's name opens its store
 * (shard 0's: the job itself), finds the shard count in its `job` record
 * and opens the others (`<job>--shard<i>`), each checked to be the shard
 * it should be. A shard named directly (`<job>--shard2`) is that one
 * shard, on its own. The reads (`shard_reads.ts`) and actions
 * (`shard_actions.ts`) over a {@linkcode JobShards} fold or spread what
 * they do over every shard; over one store they are the unsharded ones.
 *
 * @module
 */
import { InvalidRecordError, SplitleaseError, StoreUnavailableError } from "../errors.ts";
import { keys } from "../store/keys.ts";
import { MAX_SHARDS, parseShardJob, shardJob, shardOf } from "../store/shards.ts";
import type { Store } from "../store/store.ts";

/**
 * A job's stores, one per shard in shard order, and the job name each
 * one's records are under (an unsharded job, or one shard named
 * directly: one store, under the name given).
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import type { JobShards } from "@splitlease/splitlease/admin";
 * const job: JobShards = { job: "backfill", stores: [new MemoryStore()], jobs: ["backfill"] };
 * ```
 */
export interface JobShards {
  /** The job as named. */
  readonly job: string;
  /** Its stores in shard order. */
  readonly stores: readonly Store[];
  /** The job name of each store's records (`shardJob(job, index)`). */
  readonly jobs: readonly string[];
}

/**
 * The shard seat a `job` record names (`{ index, count }`), `undefined`
 * when it names none (an unsharded job) or there is no record yet.
 *
 * @throws {InvalidRecordError} for a seat that is not one
 * (a count outside 1..{@linkcode MAX_SHARDS}, an index outside it).
 *
 * @example
 * ```ts
 * import { shardSeatOf } from "@splitlease/splitlease/admin";
 * console.log(shardSeatOf("backfill", '{"v":3,"fingerprint":"f","createdAt":0,"shard":{"index":0,"count":4}}')); // { index: 0, count: 4 }
 * ```
 */
export function shardSeatOf(job: string, value: string | undefined): { index: number; count: number } | undefined {
  if (value === undefined) return undefined;
  let seat: unknown;
  try {
    seat = (JSON.parse(value) as { shard?: unknown })?.shard;
  } catch {
    return undefined; // an unreadable job record is the coordinator's to report
  }
  if (seat === undefined) return undefined;
  const { index, count } = (seat ?? {}) as { index?: unknown; count?: unknown };
  const ok = Number.isInteger(count) && (count as number) >= 1 && (count as number) <= MAX_SHARDS &&
    Number.isInteger(index) && (index as number) >= 0 && (index as number) < (count as number);
  if (!ok) {
    throw new InvalidRecordError(
      keys.job,
      `the job record of job "${job}" names shard ${JSON.stringify(seat)}, which is no shard (a count from 1 to ${MAX_SHARDS}, ` +
        `an index below it): it was not written by splitlease; delete the job (splitlease delete --force) and start it again`,
      [],
    );
  }
  return { index: index as number, count: count as number };
}

/**
 * What {@linkcode openJobShards} opened: the job's shards, and a close of
 * the stores it opened (not `first`, which stays the caller's).
 *
 * @example
 * ```ts
 * import type { OpenedShards } from "@splitlease/splitlease/admin";
 * const done = (s: OpenedShards) => s.close(); // after the last read
 * ```
 */
export interface OpenedShards extends JobShards {
  /** Closes the stores opened for shards 1 .. count - 1. */
  close(): Promise<void>;
}

/**
 * The shards of `job` from its store `first` (bound to `job`): one store
 * unless its `job` record says it is shard 0 of K; then shards 1 .. K - 1
 * are opened with `open` (the job name of each: `<job>--shard<i>`) and
 * each one's `job` record checked to say it is that shard of K. A job
 * named by a shard's name is that one shard.
 *
 * @throws {SplitleaseError} naming the shard and the fix: `INVALID_CONFIG`
 * when the shards disagree on their count (or a record names a shard its
 * job name is not), whatever `open` throws for a shard whose records do
 * not exist (its message kept, the shard named). An outage
 * (`StoreUnavailableError`) is thrown as it is. Stores opened are closed.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { openJobShards } from "@splitlease/splitlease/admin";
 * const shards = await openJobShards("backfill", new MemoryStore(), () => Promise.reject(new Error("unsharded")));
 * console.log(shards.stores.length); // 1: no job record says it is sharded
 * await shards.close();
 * ```
 */
export async function openJobShards(
  job: string,
  first: Store,
  open: (job: string, index: number) => Promise<Store>,
): Promise<OpenedShards> {
  const one: OpenedShards = { job, stores: [first], jobs: [job], close: () => Promise.resolve() };
  const seat = shardSeatOf(job, (await first.get(keys.job))?.value);
  if (!seat || seat.count === 1) return one;
  if (seat.index > 0) {
    // A shard named directly: itself, if it is the shard its name says.
    const named = parseShardJob(job);
    if (named?.index !== seat.index) {
      throw new SplitleaseError(
        "INVALID_CONFIG",
        `the records of job "${job}" say they are shard ${seat.index} of ${seat.count}, whose job name ends in --shard${seat.index}; ` +
          `they are not where a sharded job keeps them: delete the job (splitlease delete --force) and start it again`,
      );
    }
    return one;
  }
  const opened: Store[] = [];
  const closeAll = () => Promise.all(opened.map((s) => s.close().catch(() => {}))).then(() => {});
  try {
    const rest = await Promise.allSettled(Array.from({ length: seat.count - 1 }, (_, i) => open(shardJob(job, i + 1), i + 1)));
    rest.forEach((r) => r.status === "fulfilled" && opened.push(r.value));
    const failed = rest.findIndex((r) => r.status === "rejected");
    if (failed >= 0) throw missingShard(job, seat.count, failed + 1, (rest[failed] as PromiseRejectedResult).reason);
    const stores = [first, ...rest.map((r) => (r as PromiseFulfilledResult<Store>).value)];
    const records = await Promise.all(stores.slice(1).map((s) => s.get(keys.job)));
    records.forEach((e, i) => {
      const index = i + 1;
      const theirs = shardSeatOf(shardJob(job, index), e?.value);
      // A shard whose record is not written yet (its first member is joining) is read as it is.
      if (e === undefined || (theirs?.index === index && theirs.count === seat.count)) return;
      const says = !theirs ? "that it is not sharded" : theirs.count !== seat.count ? `${theirs.count} shards` : `that it is shard ${theirs.index}`;
      throw new SplitleaseError(
        "INVALID_CONFIG",
        `the shards of job "${job}" disagree on their count: shard 0's job record says ${seat.count} shards, shard ${index}'s ` +
          `(job "${shardJob(job, index)}") says ${says}. Every member of a job must run with the same shards: delete the job ` +
          `(splitlease delete --force ${job}) and start it again with one count, or under a new name`,
      );
    });
    return { job, stores, jobs: stores.map((_, i) => shardJob(job, i)), close: closeAll };
  } catch (e) {
    await closeAll();
    throw e;
  }
}

/** The error of a shard that could not be opened: an outage as it is, anything else naming the shard and the fix. */
function missingShard(job: string, count: number, index: number, e: unknown): unknown {
  if (e instanceof StoreUnavailableError) return e;
  const message = e instanceof Error ? e.message : String(e);
  return new SplitleaseError(
    e instanceof SplitleaseError ? e.code : "INVALID_CONFIG",
    `job "${job}" has ${count} shards (its job record says so), but shard ${index}'s records (job "${shardJob(job, index)}") ` +
      `cannot be opened: ${message}. They were deleted or never created: start a worker of the job (it creates them, and ` +
      `shard ${index}'s leader plans its part again), or delete the whole job (splitlease delete --force ${job})`,
    { cause: e },
  );
}

/**
 * The shard that holds split `id`, or `-1`: the shard its id routes to
 * (`shardOf`) first, then the others (a split cut from a running one lives
 * in its parent's shard, whatever its own id routes to).
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { findSplitShard } from "@splitlease/splitlease/admin";
 * const at = await findSplitShard({ job: "j", stores: [new MemoryStore()], jobs: ["j"] }, "part-1");
 * console.log(at); // -1: no such split
 * ```
 */
export async function findSplitShard(shards: JobShards, id: string): Promise<number> {
  const n = shards.stores.length;
  const home = shardOf(id, n);
  if (await shards.stores[home].get(keys.split(id))) return home;
  const others = shards.stores.map((_, i) => i).filter((i) => i !== home);
  const found = await Promise.all(others.map((i) => shards.stores[i].get(keys.split(id))));
  const at = found.findIndex((e) => e !== undefined);
  return at < 0 ? -1 : others[at];
}
