/**
 * The jobs of one coordination server, for tools that look past one job:
 * `splitlease jobs` lists them, `splitlease delete` removes a finished one.
 * A backend implements {@linkcode JobCatalog} (NATS: the `splitlease_*` KV
 * buckets, `NatsJobCatalog`); what a listing means is decided once, by
 * `summarizeJob` (`src/fleet/job_summary.ts`), for every backend.
 *
 * @module
 */
import { keys } from "./keys.ts";
import type { Store, StoreEntry } from "./store.ts";

/**
 * One record of a job as a catalog reads it: the store entry, and when it
 * was written by the server's clock where the backend knows it (NATS: the
 * message time), else `undefined`.
 *
 * @example
 * ```ts
 * import type { CatalogEntry } from "@splitlease/splitlease/store";
 * const plan: CatalogEntry = { key: "plan", value: "{}", revision: 7, writtenAt: Date.now() };
 * ```
 */
export interface CatalogEntry extends StoreEntry {
  /** When the server stored this value (ms since the epoch), if the backend records it. */
  writtenAt?: number;
}

/**
 * What a catalog reads of one job: its name, its `job`, `plan` and `leader`
 * records and its member records (a few small reads: never the splits),
 * and the size of its storage where the backend knows it.
 *
 * @example
 * ```ts
 * import type { JobListing } from "@splitlease/splitlease/store";
 * const empty: JobListing = { job: "backfill", record: undefined, plan: undefined, leader: undefined, members: [], bytes: null };
 * ```
 */
export interface JobListing {
  /** The job name. */
  job: string;
  /** The `job` record (absent in a bucket no worker joined yet). */
  record: CatalogEntry | undefined;
  /** The `plan` record (absent before the first leader planned). */
  plan: CatalogEntry | undefined;
  /** The `leader` record. */
  leader: CatalogEntry | undefined;
  /** Every `member.<instance>` record. */
  members: CatalogEntry[];
  /** Bytes the job's records take on the server, or `null` when unknown. */
  bytes: number | null;
}

/**
 * The jobs of one server: list them, and remove one for good. Implemented
 * per backend (`NatsJobCatalog` for NATS JetStream KV).
 *
 * @example
 * ```ts
 * import type { JobCatalog } from "@splitlease/splitlease/store";
 * async function names(catalog: JobCatalog): Promise<string[]> {
 *   return (await catalog.list()).map((j) => j.job);
 * }
 * ```
 */
export interface JobCatalog extends AsyncDisposable {
  /** Every job on the server by name, or only `job` when given (`[]` when it does not exist). */
  list(job?: string): Promise<JobListing[]>;
  /**
   * Removes every record of `job` (its bucket, its rows): `true` when it
   * existed. Callers check first that the job is finished and has no live
   * member (`summarizeJob`): a catalog removes what it is told to.
   */
  remove(job: string): Promise<boolean>;
  /** Closes the connection. */
  close(): Promise<void>;
}

/**
 * Reads the listing of `job` from its {@linkcode Store}: for backends that
 * open a store per job and know no write times (each entry's `writtenAt`
 * stays `undefined`; member liveness then comes from the members' own
 * clocks, the `at` of their beats).
 *
 * @example
 * ```ts
 * import { MemoryStore, readJobListing } from "@splitlease/splitlease/store";
 * const listing = await readJobListing("backfill", new MemoryStore());
 * console.log(listing.plan === undefined); // true: nothing planned yet
 * ```
 */
export async function readJobListing(job: string, store: Store): Promise<JobListing> {
  const [record, plan, leader, members] = await Promise.all([
    store.get(keys.job),
    store.get(keys.plan),
    store.get(keys.leader),
    store.list(keys.memberPrefix),
  ]);
  return { job, record, plan, leader, members: [...members], bytes: null };
}
