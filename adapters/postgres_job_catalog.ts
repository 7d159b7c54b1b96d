/**
 * The jobs of a PostgreSQL database as the operator's commands see them
 * (`PostgresJobCatalog`, over the driver-independent `PgJobCatalog`): one
 * connection, checked to answer, no job opened. Apart from the store
 * (postgres.ts) because it opens no job and needs none of the store's
 * options.
 *
 * @module
 */
import { StoreUnavailableError } from "../src/errors.ts";
import { CONNECT_VERDICT_MARGIN_MS, connectTimeoutMs, invalidPg, resolvePgOptions } from "../src/postgres/options.ts";
import { authError, certificateError, connectFailure, missingDatabaseError } from "../src/postgres/setup.ts";
import { PgJobCatalog } from "../src/postgres/pg_catalog.ts";
import { isAuthFailure, isCertificateFailure, isMissingDatabase } from "../src/postgres/sql_client.ts";
import { postgresJsClient, serverOf } from "./postgres_js_client.ts";


/**
 * Options of {@linkcode PostgresJobCatalog.connect}: the database and
 * schema of the store's tables.
 *
 * @example
 * ```ts
 * import type { PostgresJobCatalogOptions } from "@splitlease/splitlease/postgres";
 * const options: PostgresJobCatalogOptions = { url: "postgres://ops@db.internal:5432/app", opTimeoutMs: 3000 };
 * ```
 */
export interface PostgresJobCatalogOptions {
  /** `postgres://` or `postgresql://` URL. */
  url: string;
  /** The schema of the store's tables (default `splitlease`). */
  schema?: string;
  /** Bound of each statement, and of reaching the server (default 5000). */
  opTimeoutMs?: number;
  /** `application_name` of the catalog's connection (default `splitlease:catalog`). */
  applicationName?: string;
}

/**
 * The jobs of a PostgreSQL database (`JobCatalog`, as `splitlease jobs`
 * and `splitlease delete` use it): each job's `job`, `plan`, `leader` and
 * member records with the time the server wrote each, and the removal of a
 * job's rows in one transaction. Removing needs `delete` on the schema's
 * `jobs`, `kv` and `log` tables (the schema's owner has it; the workers'
 * least-privilege role does not).
 *
 * @example
 * ```ts
 * import { PostgresJobCatalog } from "@splitlease/splitlease/postgres";
 * import { listJobs } from "@splitlease/splitlease/admin";
 * await using catalog = await PostgresJobCatalog.connect({ url: "postgres://ops@127.0.0.1:5432/app" });
 * for (const j of await listJobs(catalog)) console.log(j.job, j.state, j.createdAt);
 * ```
 */
export class PostgresJobCatalog extends PgJobCatalog {
  /**
   * Opens a connection and checks that the server answers within
   * `opTimeoutMs`: `STORE_AUTH_FAILED` when it refuses the login,
   * `StoreUnavailableError` when it cannot be reached, `INVALID_CONFIG` for
   * bad options.
   *
   * @example
   * ```ts
   * import { PostgresJobCatalog } from "@splitlease/splitlease/postgres";
   * const catalog = await PostgresJobCatalog.connect({ url: "postgres://ops@127.0.0.1:5432/app", schema: "splitlease" });
   * console.log((await catalog.list()).map((j) => j.job));
   * await catalog.close();
   * ```
   */
  static async connect(options: PostgresJobCatalogOptions): Promise<PostgresJobCatalog> {
    const { url, schema, opTimeoutMs, applicationName, ...rest } = options;
    const unknown = Object.keys(rest);
    if (unknown.length > 0) throw invalidPg(`unknown option ${unknown.join(", ")} of PostgresJobCatalog.connect`);
    const opts = resolvePgOptions({ job: "catalog", ...(schema === undefined ? {} : { schema }), ...(opTimeoutMs === undefined ? {} : { opTimeoutMs }) }, []);
    const client = postgresJsClient({ url, poolSize: 1, opTimeoutMs: opts.opTimeoutMs, applicationName: applicationName ?? "splitlease:catalog" });
    const server = serverOf(url);
    // Long enough for the driver's verdict on a refused connection (see openJob).
    const waitMs = connectTimeoutMs(opts.opTimeoutMs) + CONNECT_VERDICT_MARGIN_MS;
    const started = Date.now();
    try {
      await client.query("select 1", [], AbortSignal.timeout(waitMs));
    } catch (e) {
      await client.close();
      if (isAuthFailure(e)) throw authError(e, `the job catalog's login at ${server}`);
      if (isMissingDatabase(e)) throw missingDatabaseError(e, server);
      if (isCertificateFailure(e)) throw certificateError(e, server);
      throw new StoreUnavailableError("connect", opts.opTimeoutMs, {
        cause: e,
        detail: connectFailure(e, server, `after ${Date.now() - started} ms`, undefined),
      });
    }
    return new PostgresJobCatalog({ client, schema: opts.schema, opTimeoutMs: opts.opTimeoutMs, server });
  }
}