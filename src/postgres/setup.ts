/**
 * Opening a job on PostgreSQL: reaching the server (retried for
 * `connectWaitMs`, each attempt logged; a refused login at once), checking
 * or creating the schema (versioned, created under an advisory lock so that
 * concurrent first workers do not race), and finding or creating the job's
 * row.
 *
 * @module
 */
import { SplitleaseError, StoreUnavailableError } from "../errors.ts";
import type { Logger } from "../util/logger.ts";
import { sleep } from "../util/timers.ts";
import { invalidPg, type ResolvedPgOptions } from "./options.ts";
import { Queries } from "./queries.ts";
import { PG_SCHEMA_VERSION, postgresSchemaSql } from "./schema.ts";
import { isAuthFailure, type SqlClient, sqlState } from "./sql_client.ts";

const BACKOFF_MS = 250;
const BACKOFF_MAX_MS = 5000;

/** An error's message, for logs and error details. */
export function describePgError(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  const code = (e as { code?: unknown }).code;
  return typeof code === "string" && !e.message.includes(code) ? `${e.message} (${code})` : e.message;
}

/** `STORE_AUTH_FAILED` for a refused login or a missing privilege. */
export function authError(e: unknown, what: string): SplitleaseError {
  return new SplitleaseError(
    "STORE_AUTH_FAILED",
    `PostgresStore: ${what} was refused: ${describePgError(e)} ` +
      "(check the user and password in the URL, and the grants listed by postgresSchemaSql/postgresGrantsSql)",
    { cause: e },
  );
}

/** Runs `f` until it works, for at most `connectWaitMs`, logging each failure; a refused login is thrown at once. */
async function reach<T>(opts: ResolvedPgOptions, where: string, log: Logger, f: () => Promise<T>): Promise<T> {
  const started = Date.now();
  const deadline = started + opts.connectWaitMs;
  for (let attempt = 1;; attempt++) {
    let error: unknown;
    try {
      return await f();
    } catch (e) {
      if (isAuthFailure(e)) throw authError(e, `the connection to ${where}`);
      if (e instanceof SplitleaseError) throw e;
      error = e;
    }
    const remaining = deadline - Date.now();
    if (remaining <= 0) {
      throw new StoreUnavailableError("connect", opts.connectWaitMs, {
        cause: error,
        detail: `PostgreSQL at ${where} unreachable after ${Date.now() - started} ms and ${attempt} attempt${attempt === 1 ? "" : "s"} ` +
          `(connectWaitMs ${opts.connectWaitMs}); last error: ${describePgError(error)}`,
      });
    }
    const pause = Math.min(BACKOFF_MS * 2 ** Math.min(attempt - 1, 10), BACKOFF_MAX_MS, remaining);
    log("warn", "PostgreSQL unreachable, retrying", {
      event: "storeConnectRetry",
      server: where,
      attempt,
      waitedMs: Date.now() - started,
      retryInMs: pause,
      connectWaitMs: Number.isFinite(opts.connectWaitMs) ? opts.connectWaitMs : "Infinity",
      error: describePgError(error),
    });
    await sleep(pause);
  }
}

/** `f`, failing with a plain error after `ms` (the retry loop turns it into an attempt). */
function within<T>(ms: number, f: () => Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const p = f();
  p.catch(() => {});
  return Promise.race([
    p,
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms))),
  ]).finally(() => clearTimeout(timer));
}

/** The schema's version, or `undefined` when its tables do not exist. */
async function schemaVersion(client: SqlClient, q: Queries): Promise<number | undefined> {
  try {
    const rows = await client.query(q.version, []);
    return rows.length ? Number(rows[0].version) : 0;
  } catch (e) {
    const s = sqlState(e);
    if (s === "42P01" || s === "3F000") return undefined; // no such table / schema
    throw e;
  }
}

/** Creates the schema under a transaction-scoped advisory lock (concurrent creators wait for each other). */
async function createSchema(client: SqlClient, schema: string): Promise<void> {
  await client.transaction((s) =>
    s.simple(`select pg_advisory_xact_lock(hashtext('splitlease schema ${schema}')); ${postgresSchemaSql(schema)}`)
  );
}

/**
 * Checks (or creates) the schema and finds (or creates) the job; returns
 * the job's id. `where` names the server in messages (credentials removed).
 */
export async function openJob(client: SqlClient, opts: ResolvedPgOptions, where: string, log: Logger): Promise<number> {
  const q = new Queries(opts.schema);
  const attempt = Math.max(2000, opts.opTimeoutMs);
  let version = await reach(opts, where, log, () => within(attempt, () => schemaVersion(client, q)));
  if (version === undefined) {
    if (!opts.createSchema) {
      throw invalidPg(
        `schema ${opts.schema} has no splitlease tables on ${where} (createSchema: false): ` +
          "create them with the DDL of postgresSchemaSql() (docs/OPERATIONS.md, \"PostgreSQL as the store\")",
      );
    }
    try {
      await within(Math.max(10_000, opts.opTimeoutMs), () => createSchema(client, opts.schema));
    } catch (e) {
      if (isAuthFailure(e)) throw authError(e, `creating schema ${opts.schema}`);
      throw new StoreUnavailableError("connect", opts.opTimeoutMs, { cause: e, detail: `creating schema ${opts.schema}: ${describePgError(e)}` });
    }
    version = await within(attempt, () => schemaVersion(client, q));
  }
  if (version !== PG_SCHEMA_VERSION) {
    throw invalidPg(
      `schema ${opts.schema} on ${where} is at version ${version}, this splitlease reads version ${PG_SCHEMA_VERSION}` +
        (version !== undefined && version > PG_SCHEMA_VERSION ? " (written by a newer splitlease: upgrade this one)" : ""),
    );
  }
  try {
    let rows = await within(attempt, () => client.query(opts.createJob ? q.job : q.findJob, [opts.job]));
    if (rows.length === 0 && opts.createJob) {
      // Another worker created the job while this statement ran: its insert
      // waited for that one's commit and did nothing, and its select still
      // read the snapshot from before it. A new statement sees the row.
      rows = await within(attempt, () => client.query(q.findJob, [opts.job]));
    }
    if (rows.length === 0) {
      throw invalidPg(
        `there is no job ${JSON.stringify(opts.job)} in schema ${opts.schema} on ${where} ` +
          (opts.createJob ? "(it was deleted while this worker created it)" : "(createJob: false)"),
      );
    }
    return Number(rows[0].id);
  } catch (e) {
    if (e instanceof SplitleaseError) throw e;
    if (isAuthFailure(e)) throw authError(e, `opening job ${JSON.stringify(opts.job)}`);
    throw new StoreUnavailableError("connect", opts.opTimeoutMs, { cause: e, detail: `opening job ${JSON.stringify(opts.job)}: ${describePgError(e)}` });
  }
}
