/**
 * The jobs of a NATS server: every KV bucket named `splitlease_<job>`, read
 * over one connection (a few gets per job, never its splits), and removed
 * by destroying the bucket.
 *
 * @module
 */
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import { type KV, type KvEntry, Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { SplitleaseError, StoreUnavailableError } from "../errors.ts";
import type { CatalogEntry, JobCatalog, JobListing } from "../store/job_catalog.ts";
import { isValidId, keys } from "../store/keys.ts";
import { Connection } from "./connection.ts";
import { describe } from "./describe.ts";
import type { NatsStoreOptions } from "./options.ts";

/** Bucket name prefix of every job (`splitlease_<job>`). */
const BUCKET_PREFIX = "splitlease_";

/**
 * Options of {@linkcode NatsJobCatalog.connect}: the store's connection
 * options without a job (a catalog sees every job of the server, so its
 * user needs read access to every `splitlease_*` bucket, and the right to
 * delete streams for `remove`).
 *
 * @example
 * ```ts
 * import type { NatsJobCatalogOptions } from "@splitlease/splitlease/nats";
 * const options: NatsJobCatalogOptions = { servers: "ws://127.0.0.1:8080", opTimeoutMs: 3000 };
 * ```
 */
export type NatsJobCatalogOptions = Omit<NatsStoreOptions, "job" | "createBucket" | "replicas">;

/**
 * {@linkcode JobCatalog} of a NATS server: lists the `splitlease_*` KV
 * buckets with each job's `job`, `plan`, `leader` and member records (and
 * the time the server stored each), and removes a job by destroying its
 * bucket.
 *
 * @example
 * ```ts
 * import { NatsJobCatalog } from "@splitlease/splitlease/nats";
 * await using catalog = await NatsJobCatalog.connect({ servers: "ws://127.0.0.1:8080" });
 * for (const j of await catalog.list()) console.log(j.job, j.plan?.value);
 * ```
 */
export class NatsJobCatalog implements JobCatalog {
  readonly #nc: NatsConnection;
  readonly #kvm: Kvm;
  readonly #timeoutMs: number;

  /** Gives back the connection's hold on the process's transport (see transport.ts). */
  readonly #release: () => void;

  private constructor(nc: NatsConnection, js: JetStreamClient, timeoutMs: number, release: () => void) {
    this.#nc = nc;
    this.#kvm = new Kvm(js);
    this.#timeoutMs = timeoutMs;
    this.#release = release;
  }

  /**
   * Connects (the same options, credentials and errors as
   * `NatsStore.connect`, without a job).
   *
   * @example
   * ```ts
   * import { NatsJobCatalog } from "@splitlease/splitlease/nats";
   * const catalog = await NatsJobCatalog.connect({ servers: "ws://127.0.0.1:8080" });
   * await catalog.close();
   * ```
   */
  static async connect(options: NatsJobCatalogOptions): Promise<NatsJobCatalog> {
    // The connection is the store's (its checks, retries and errors); its job only names the default inbox, so give a neutral one.
    const { nc, opts, release } = await Connection.client({ ...options, job: "catalog", inboxPrefix: options.inboxPrefix ?? "_INBOX" });
    return new NatsJobCatalog(nc, jetstream(nc, { timeout: opts.opTimeoutMs }), opts.opTimeoutMs, release);
  }

  async list(job?: string): Promise<JobListing[]> {
    if (job !== undefined && !isValidId(job)) {
      throw new SplitleaseError("INVALID_ARGUMENT", `Job name ${JSON.stringify(job)} is not 1-128 of [A-Za-z0-9_-]`);
    }
    const buckets: { job: string; bytes: number }[] = [];
    await this.#op("listing the buckets", async () => {
      for await (const s of this.#kvm.list()) {
        if (!s.bucket.startsWith(BUCKET_PREFIX)) continue;
        const name = s.bucket.slice(BUCKET_PREFIX.length);
        if (isValidId(name) && (job === undefined || name === job)) buckets.push({ job: name, bytes: s.size });
      }
    });
    return await Promise.all(buckets.map((b) => this.#read(b.job, b.bytes)));
  }

  async remove(job: string): Promise<boolean> {
    if (!isValidId(job)) throw new SplitleaseError("INVALID_ARGUMENT", `Job name ${JSON.stringify(job)} is not 1-128 of [A-Za-z0-9_-]`);
    if ((await this.list(job)).length === 0) return false;
    return await this.#op(`destroying bucket ${BUCKET_PREFIX}${job}`, async () => await (await this.#kvm.open(BUCKET_PREFIX + job)).destroy());
  }

  async close(): Promise<void> {
    await this.#nc.close().catch(() => {});
    this.#release();
  }

  /** Closes the connection (`await using`). */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  async #read(job: string, bytes: number): Promise<JobListing> {
    return await this.#op(`reading job ${job}`, async () => {
      const kv = await this.#kvm.open(BUCKET_PREFIX + job);
      const members: CatalogEntry[] = [];
      const names: string[] = [];
      for await (const k of await kv.keys(keys.memberPrefix + ">")) names.push(k);
      const [record, plan, leader] = await Promise.all([keys.job, keys.plan, keys.leader].map((k) => get(kv, k)));
      for (const e of await Promise.all(names.map((k) => get(kv, k)))) if (e) members.push(e);
      return { job, record, plan, leader, members, bytes };
    });
  }

  /** Runs one read of the catalog within the op timeout; anything but our own errors is an outage. */
  async #op<T>(what: string, run: () => Promise<T>): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      return await Promise.race([
        run(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${this.#timeoutMs} ms`)), this.#timeoutMs);
        }),
      ]);
    } catch (e) {
      if (e instanceof SplitleaseError) throw e;
      throw new StoreUnavailableError("list", this.#timeoutMs, { cause: e, detail: `${what}: ${describe(e)}` });
    } finally {
      clearTimeout(timer);
    }
  }
}

/** One entry with the time the server stored it, or `undefined` when absent (deleted included). */
async function get(kv: KV, key: string): Promise<CatalogEntry | undefined> {
  const e: KvEntry | null = await kv.get(key);
  if (!e || e.operation !== "PUT") return undefined;
  return { key, value: e.string(), revision: e.revision, writtenAt: e.created.getTime() };
}
