/**
 * The jobs of a Redis server under one key prefix: `splitlease jobs` lists
 * them (the names in `<prefix>jobs`, each job's `job`, `plan`, `leader` and
 * member records read through a store on the catalog's connection, and the
 * memory its keys take), `splitlease delete` removes one (its keys and its
 * name, in one transaction).
 *
 * @module
 */
import { StoreUnavailableError } from "../errors.ts";
import { type JobCatalog, type JobListing, readJobListing } from "../store/job_catalog.ts";
import { isValidId } from "../store/keys.ts";
import type { DurabilityMode } from "./durability.ts";
import { jobKeys, jobsKey, resolveRedisOptions } from "./options.ts";
import type { RedisClient, RedisReply } from "./redis_client.ts";
import { RedisKvStore } from "./redis_kv_store.ts";

/**
 * What {@linkcode RedisJobCatalogCore} runs on.
 *
 * @example
 * ```ts ignore
 * const init: RedisJobCatalogInit = { client, keyPrefix: "splitlease:", opTimeoutMs: 5000, server: "127.0.0.1:6379" };
 * ```
 */
export interface RedisJobCatalogInit {
  /** The connection (the catalog closes it). */
  client: RedisClient;
  /** The key prefix of the jobs. */
  keyPrefix: string;
  /** Bound of each command (ms). */
  opTimeoutMs: number;
  /** The server, for messages (no credentials). */
  server: string;
}

/** A catalog reads; it never waits for replicas. */
const READ_ONLY: DurabilityMode = { level: "none", waitReplicas: 0, text: "the job catalog (reads and removals)" };

/**
 * {@linkcode JobCatalog} of the jobs under one key prefix of a Redis server,
 * on an injected {@linkcode RedisClient} (the `redis` entry's
 * `RedisJobCatalog.connect` builds one on node-redis).
 *
 * @example
 * ```ts ignore
 * await using catalog = new RedisJobCatalogCore({ client, keyPrefix: "splitlease:", opTimeoutMs: 5000, server: "127.0.0.1:6379" });
 * console.log((await catalog.list()).map((j) => j.job));
 * ```
 */
export class RedisJobCatalogCore implements JobCatalog {
  readonly #init: RedisJobCatalogInit;

  /** A catalog over `init.client`. */
  constructor(init: RedisJobCatalogInit) {
    this.#init = init;
  }

  #unavailable(op: string, cause: unknown): StoreUnavailableError {
    return new StoreUnavailableError(op, this.#init.opTimeoutMs, { cause, detail: `${cause instanceof Error ? cause.message : String(cause)}; Redis at ${this.#init.server}` });
  }

  async #send(op: string, args: string[]): Promise<RedisReply> {
    try {
      return await this.#init.client.send(args, this.#init.opTimeoutMs);
    } catch (e) {
      throw this.#unavailable(op, e);
    }
  }

  /** Every job under the prefix (or only `job`), with its records and the memory its keys take. */
  async list(job?: string): Promise<JobListing[]> {
    const { client, keyPrefix, opTimeoutMs, server } = this.#init;
    let names: string[];
    if (job !== undefined) {
      if (!isValidId(job)) return [];
      names = Number(await this.#send("list", ["EXISTS", jobKeys(keyPrefix, job).head])) ? [job] : [];
    } else {
      const members = await this.#send("list", ["SMEMBERS", jobsKey(keyPrefix)]);
      names = (Array.isArray(members) ? members.map(String) : []).filter(isValidId).sort();
    }
    const out: JobListing[] = [];
    for (const name of names) {
      const options = resolveRedisOptions({ job: name, keyPrefix, opTimeoutMs });
      const store = new RedisKvStore({ client, options, server, mode: READ_ONLY, logger: () => {}, ownsClient: false });
      try {
        const listing = await readJobListing(name, store);
        out.push({ ...listing, bytes: await this.#bytes(name) });
      } finally {
        await store.close();
      }
    }
    return out;
  }

  /** `MEMORY USAGE` of the job's keys, summed (`null` when the server does not tell). */
  async #bytes(job: string): Promise<number | null> {
    let sum = 0;
    try {
      for (const key of jobKeys(this.#init.keyPrefix, job).all) {
        const n = await this.#init.client.send(["MEMORY", "USAGE", key], this.#init.opTimeoutMs);
        sum += n === null ? 0 : Number(n);
      }
      return sum;
    } catch {
      return null;
    }
  }

  /** Deletes the job's keys and its name in one transaction: `true` when it existed. */
  async remove(job: string): Promise<boolean> {
    if (!isValidId(job)) return false;
    const k = jobKeys(this.#init.keyPrefix, job);
    const existed = Number(await this.#send("delete", ["EXISTS", k.head])) === 1;
    // One script: the keys and the catalog's entry go together (a store of the job then finds no counter: JobGoneError).
    await this.#send("delete", [
      "EVAL",
      "redis.call('DEL', unpack(KEYS)); return redis.call('SREM', ARGV[1], ARGV[2])",
      String(k.all.length),
      ...k.all,
      jobsKey(this.#init.keyPrefix),
      job,
    ]);
    return existed;
  }

  /** Closes the connection. */
  async close(): Promise<void> {
    await this.#init.client.close();
  }

  /** Closes the connection (for `await using`). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
