/**
 * The PostgreSQL backend of splitlease: coordinate through the database you
 * already run. {@linkcode PostgresStore} implements the store on tables of
 * one schema (created on first use, or by an operator from
 * {@linkcode postgresSchemaSql}) through postgres.js, and commits a split's
 * progress together with a source's own rows in one transaction
 * ({@linkcode PgStore.updateInTransaction}; a lane's
 * `commit(progress, { transaction })`).
 *
 * The driver is postgres.js: no dependencies of its own, the same code on
 * Node, Bun and Deno (`LISTEN` included), and statements pipelined on a
 * connection, which the store's compare-and-swap rate depends on.
 *
 * @example
 * ```ts
 * import { PostgresStore } from "@splitlease/splitlease/postgres";
 * await using store = await PostgresStore.connect({ url: "postgres://app@127.0.0.1:5432/app", job: "backfill" });
 * console.log(await store.list("split."));
 * ```
 *
 * @module
 */
import { jsonLogger } from "../src/util/logger.ts";
import { resolvePgOptions } from "../src/postgres/options.ts";
import { PgStore } from "../src/postgres/pg_store.ts";
import { openJob } from "../src/postgres/setup.ts";
import { DRIVER_KEYS, postgresJsClient, type PostgresStoreOptions, serverOf } from "./postgres_js_client.ts";

export { PgStore, type PgStoreInit } from "../src/postgres/pg_store.ts";
export { PgJobCatalog, type PgJobCatalogInit } from "../src/postgres/pg_catalog.ts";
export type { CatalogEntry, JobCatalog, JobListing } from "../src/store/job_catalog.ts";
export type { PgStoreOptions, ResolvedPgOptions } from "../src/postgres/options.ts";
export type { Logger } from "../src/util/logger.ts";
export { PG_SCHEMA_VERSION, postgresGrantsSql, postgresSchemaSql } from "../src/postgres/schema.ts";
export type { SqlClient, SqlListener, SqlListenerEvents, SqlParam, SqlRow, SqlSession } from "../src/postgres/sql_client.ts";
export type { DeleteResult, KeyFilter, Store, StoreEntry, Watch, WatchEvent, WriteResult } from "../src/store/store.ts";
export { postgresJsClient, type PostgresStoreOptions } from "./postgres_js_client.ts";
export { PostgresJobCatalog, type PostgresJobCatalogOptions } from "./postgres_job_catalog.ts";

/**
 * The transaction handle `updateInTransaction` (and a lane's transactional
 * commit) gives its callback: postgres.js's `sql` tag bound to the
 * transaction's connection.
 *
 * @example
 * ```ts
 * import type { PgTransaction } from "@splitlease/splitlease/postgres";
 * async function write(sql: PgTransaction): Promise<void> {
 *   await sql`insert into sink (id) values (${1})`;
 * }
 * ```
 */
// Named through the module's type, not a type import: `deno doc --lint` counts an imported
// type of the driver as a private type of this package.
export type PgTransaction = Parameters<
  Parameters<ReturnType<(typeof import("postgres"))["default"]>["begin"]>[1]
>[0];

/**
 * {@linkcode PgStore} through postgres.js: the store of a job on a
 * PostgreSQL database. See docs/OPERATIONS.md, "PostgreSQL as the store",
 * for the schema, the grants, poolers and the replication settings fencing
 * needs (a store must never lose an acknowledged write).
 *
 * @example
 * ```ts
 * import { PostgresStore } from "@splitlease/splitlease/postgres";
 * import { MemoryStore } from "@splitlease/splitlease";
 * const url = Deno.env.get("PG_URL");
 * const store = url ? await PostgresStore.connect({ url, job: "backfill" }) : new MemoryStore();
 * await store.close();
 * ```
 */
export class PostgresStore extends PgStore<PgTransaction> {
  /**
   * Connects, checks (or creates) the schema and opens (or creates) the
   * job. Throws `INVALID_CONFIG` for bad options (an unknown key included),
   * a database that does not exist, a schema of another version or a
   * missing job with `createJob: false`; `STORE_AUTH_FAILED` at once when
   * the server refuses the login or a privilege, or its TLS certificate
   * does not verify; `StoreUnavailableError` when the server cannot be
   * reached, or refuses connections (too many), within `connectWaitMs`
   * (each retry logged with the server's reason). Logs the connections the
   * store may open once the job is open (`storeConnected`).
   *
   * @example
   * ```ts
   * import { PostgresStore } from "@splitlease/splitlease/postgres";
   * const store = await PostgresStore.connect({ url: "postgres://app@127.0.0.1:5432/app", job: "j1", opTimeoutMs: 2000 });
   * await store.close();
   * ```
   */
  static async connect(options: PostgresStoreOptions): Promise<PostgresStore> {
    const opts = resolvePgOptions(options, DRIVER_KEYS);
    const logger = options.logger ?? jsonLogger();
    const client = postgresJsClient({ ...options, logger, applicationName: options.applicationName ?? `splitlease:${opts.job}`.slice(0, 63) });
    const server = serverOf(options.url);
    // Validated by postgresJsClient.
    const budget = { poolSize: options.poolSize ?? 4, transactionPoolSize: options.transactionPoolSize ?? 4 };
    try {
      const jobId = await openJob(client, opts, server, logger, budget);
      return new PostgresStore({ client, options: opts, jobId, server, logger });
    } catch (e) {
      await client.close();
      throw e;
    }
  }
}
