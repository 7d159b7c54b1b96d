/**
 * The jobs of a PostgreSQL database (one schema): `splitlease jobs` lists
 * them, `splitlease delete` removes a finished one. A listing reads each
 * job's `job`, `plan` and `leader` rows and its member rows (one statement
 * over the key index, never the splits) with the time the server wrote
 * each (`kv.at`); a removal deletes the job's rows in one transaction.
 *
 * @module
 */
import { SplitleaseError, StoreUnavailableError } from "../errors.ts";
import type { CatalogEntry, JobCatalog, JobListing } from "../store/job_catalog.ts";
import { isValidId, keys } from "../store/keys.ts";
import { filterSql, rev } from "./queries.ts";
import { authError, describePgError } from "./setup.ts";
import { isAuthFailure, type SqlClient, sqlState } from "./sql_client.ts";

/** SQLSTATEs of a database without the store's tables (no schema, no table): no jobs. */
const NO_TABLES = new Set(["42P01", "3F000"]);

/**
 * What {@linkcode PgJobCatalog} runs on.
 *
 * @example
 * ```ts
 * import { type PgJobCatalogInit, postgresJsClient } from "@splitlease/splitlease/postgres";
 * const init: PgJobCatalogInit = {
 *   client: postgresJsClient({ url: "postgres://ops@127.0.0.1:5432/app" }),
 *   schema: "splitlease",
 *   opTimeoutMs: 5000,
 *   server: "127.0.0.1:5432/app",
 * };
 * ```
 */
export interface PgJobCatalogInit {
  /** The connection (the catalog closes it). */
  client: SqlClient;
  /** The schema of the store's tables (checked by the caller: a plain identifier). */
  schema: string;
  /** Bound of each statement (ms). */
  opTimeoutMs: number;
  /** The server, for messages (no credentials). */
  server: string;
}

/**
 * {@linkcode JobCatalog} of the store's tables in one schema of a
 * PostgreSQL database, on an injected {@linkcode SqlClient}.
 * `bytes` is `null` (summing a job's rows would read its splits).
 * `PostgresJobCatalog.connect` builds one on postgres.js.
 *
 * @example
 * ```ts
 * import { PgJobCatalog, postgresJsClient } from "@splitlease/splitlease/postgres";
 * const client = postgresJsClient({ url: "postgres://ops@127.0.0.1:5432/app" });
 * await using catalog = new PgJobCatalog({ client, schema: "splitlease", opTimeoutMs: 5000, server: "127.0.0.1:5432/app" });
 * console.log((await catalog.list()).map((j) => j.job));
 * ```
 */
export class PgJobCatalog implements JobCatalog {
  readonly #init: PgJobCatalogInit;
  readonly #list: string;
  readonly #remove: string;
  readonly #members = filterSql(keys.memberPrefix);

  /** A catalog on `init.client` (closed by {@linkcode PgJobCatalog.close}). */
  constructor(init: PgJobCatalogInit) {
    this.#init = init;
    const s = init.schema;
    // Rows of every job (or of $1), each job at least once (no key: a job without records).
    this.#list = `select j.name, k.key, k.value, k.revision::text as revision, extract(epoch from k.at) * 1000 as at
      from ${s}.jobs j left join ${s}.kv k on k.job = j.id and k.value is not null
        and (k.key in ('${keys.job}', '${keys.plan}', '${keys.leader}') or (true${this.#members.where(2)}))
      where $1::text is null or j.name = $1 order by j.name, k.key`;
    // One statement, one transaction: the job's rows and its counter go together.
    this.#remove = `with j as (delete from ${s}.jobs where name = $1 returning id),
      k as (delete from ${s}.kv where job in (select id from j)),
      l as (delete from ${s}.log where job in (select id from j))
      select count(*)::int as n from j`;
  }

  async list(job?: string): Promise<JobListing[]> {
    if (job !== undefined) checkJob(job);
    const rows = await this.#op("list", async (signal) => {
      try {
        return await this.#init.client.query(this.#list, [job ?? null, ...this.#members.params], signal);
      } catch (e) {
        if (NO_TABLES.has(sqlState(e) ?? "")) return [];
        throw e;
      }
    });
    const jobs = new Map<string, JobListing>();
    for (const r of rows) {
      const name = String(r.name);
      let l = jobs.get(name);
      if (!l) jobs.set(name, l = { job: name, record: undefined, plan: undefined, leader: undefined, members: [], bytes: null });
      if (r.key === null || r.key === undefined) continue;
      const entry: CatalogEntry = { key: String(r.key), value: String(r.value), revision: rev(r.revision), writtenAt: Math.round(Number(r.at)) };
      if (entry.key === keys.job) l.record = entry;
      else if (entry.key === keys.plan) l.plan = entry;
      else if (entry.key === keys.leader) l.leader = entry;
      else l.members.push(entry);
    }
    return [...jobs.values()];
  }

  async remove(job: string): Promise<boolean> {
    checkJob(job);
    const rows = await this.#op("delete", async (signal) => {
      try {
        return await this.#init.client.query(this.#remove, [job], signal);
      } catch (e) {
        if (NO_TABLES.has(sqlState(e) ?? "")) return [{ n: 0 }];
        throw e;
      }
    });
    return Number(rows[0]?.n ?? 0) > 0;
  }

  /** Closes the catalog's connections. */
  async close(): Promise<void> {
    await this.#init.client.close();
  }

  /** Closes the catalog (`await using`). */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** One statement within the op timeout: a refused login or privilege is named, anything else is an outage. */
  async #op<T>(op: string, run: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const { opTimeoutMs, server, schema } = this.#init;
    try {
      return await run(AbortSignal.timeout(opTimeoutMs));
    } catch (e) {
      if (isAuthFailure(e)) throw authError(e, `the job catalog's ${op} on schema ${schema} at ${server}`);
      throw new StoreUnavailableError(op, opTimeoutMs, { cause: e, detail: `PostgreSQL at ${server}: ${describePgError(e)}` });
    }
  }
}

function checkJob(job: string): void {
  if (!isValidId(job)) throw new SplitleaseError("INVALID_ARGUMENT", `Job name ${JSON.stringify(job)} is not 1-128 of [A-Za-z0-9_-]`);
}
