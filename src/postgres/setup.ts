/**
 * Opening a job on PostgreSQL: reaching the server (retried for
 * `connectWaitMs`, each attempt logged with the server's reason when it
 * refused the connection; a refused login, a missing database or a server
 * certificate that does not verify at once),
 * checking or creating the schema (versioned, created under an advisory lock
 * so that concurrent first workers do not race), and finding or creating
 * the job's row.
 *
 * @module
 */
import { SplitleaseError, StoreUnavailableError } from "../errors.ts";
import type { Logger } from "../util/logger.ts";
import { sleep } from "../util/timers.ts";
import {
  budgetText,
  CONNECT_VERDICT_MARGIN_MS,
  type ConnectionBudget,
  connectionsOf,
  connectTimeoutMs,
  invalidPg,
  type ResolvedPgOptions,
} from "./options.ts";
import { Queries } from "./queries.ts";
import { PG_SCHEMA_VERSION, postgresSchemaSql } from "./schema.ts";
import { connectionRefusal, isAuthFailure, isCertificateFailure, isMissingDatabase, type SqlClient, sqlState } from "./sql_client.ts";

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

/**
 * `INVALID_CONFIG` for a URL whose database does not exist (3D000): no
 * retry and no password fixes it; creating the database, or naming the
 * right one, does. `where` is `host:port/database` (no credentials).
 */
export function missingDatabaseError(e: unknown, where: string): SplitleaseError {
  const named = /database "([^"]*)"/.exec(e instanceof Error ? e.message : "")?.[1];
  const db = named ?? where.slice(where.indexOf("/") + 1);
  return new SplitleaseError(
    "INVALID_CONFIG",
    `PostgresStore: ${describePgError(e)} on ${where}: create it (\`createdb ${db}\`, or \`create database ${JSON.stringify(db)}\` ` +
      "as a role allowed to) or fix the database name in the URL",
    { cause: e },
  );
}

/**
 * `STORE_AUTH_FAILED` for a server whose TLS certificate did not verify (or
 * that offers no TLS where the URL requires it): this client refused the
 * server, and no retry fixes it.
 */
export function certificateError(e: unknown, where: string): SplitleaseError {
  const code = (e as { code?: unknown }).code;
  const fix = code === "SSL_NOT_SUPPORTED"
    ? "the URL's sslmode requires TLS: enable ssl on the server or fix the URL's host"
    : "the server's TLS certificate was not accepted: give the CA that signed it (sslrootcert=/path/ca.crt in the URL), " +
      "and check that the certificate names the URL's host (sslmode=verify-full checks it) and is not expired";
  return new SplitleaseError("STORE_AUTH_FAILED", `PostgresStore: the TLS connection to ${where} failed: ${describePgError(e)}: ${fix}`, { cause: e });
}

/**
 * The detail of a connect that failed: the server's reason when it refused
 * the connection (too many connections, a server starting up) and what to
 * change, else the last error. `tried` says how long and how often.
 */
export function connectFailure(error: unknown, where: string, tried: string, budget: ConnectionBudget | undefined): string {
  const refusal = connectionRefusal(error);
  if (refusal === undefined) return `PostgreSQL at ${where} unreachable ${tried}; last error: ${describePgError(error)}`;
  const full = sqlState(error) === "57P03" ? "" : budget
    ? `; ${budgetText(budget)}, or raise the server's max_connections (or the role's or the database's connection limit): ` +
      `docs/OPERATIONS.md, "Connection budget"`
    : `; raise the server's max_connections or open fewer connections: docs/OPERATIONS.md, "Connection budget"`;
  const said = error instanceof Error ? JSON.stringify(error.message) : String(error);
  return `PostgreSQL at ${where}: the server refused the connection: ${refusal} (${said}, SQLSTATE ${sqlState(error)}), ${tried}${full}`;
}

/**
 * Runs `f` until it works, for at most `connectWaitMs`, logging each
 * failure (with the server's reason when it refused the connection: too
 * many connections, a server starting up); a refused login or a missing
 * database is thrown at once.
 */
async function reach<T>(opts: ResolvedPgOptions, where: string, log: Logger, budget: ConnectionBudget | undefined, f: () => Promise<T>): Promise<T> {
  const started = Date.now();
  const deadline = started + opts.connectWaitMs;
  for (let attempt = 1;; attempt++) {
    let error: unknown;
    try {
      return await f();
    } catch (e) {
      if (isAuthFailure(e)) throw authError(e, `the connection to ${where}`);
      if (isMissingDatabase(e)) throw missingDatabaseError(e, where);
      if (isCertificateFailure(e)) throw certificateError(e, where);
      if (e instanceof SplitleaseError) throw e;
      error = e;
    }
    const remaining = deadline - Date.now();
    if (remaining <= 0) {
      const tried = `after ${Date.now() - started} ms and ${attempt} attempt${attempt === 1 ? "" : "s"} (connectWaitMs ${opts.connectWaitMs})`;
      throw new StoreUnavailableError("connect", opts.connectWaitMs, { cause: error, detail: connectFailure(error, where, tried, budget) });
    }
    const pause = Math.min(BACKOFF_MS * 2 ** Math.min(attempt - 1, 10), BACKOFF_MAX_MS, remaining);
    const refusal = connectionRefusal(error);
    log("warn", refusal === undefined ? "PostgreSQL unreachable, retrying" : `PostgreSQL refused the connection: ${refusal}; retrying`, {
      event: "storeConnectRetry",
      server: where,
      attempt,
      waitedMs: Date.now() - started,
      retryInMs: pause,
      connectWaitMs: Number.isFinite(opts.connectWaitMs) ? opts.connectWaitMs : "Infinity",
      ...(refusal === undefined ? {} : { reason: refusal, sqlState: sqlState(error) }),
      ...(refusal !== undefined && budget ? { connections: connectionsOf(budget) } : {}),
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
 * the job's id. `where` names the server in messages (credentials removed);
 * `budget`, the connections the store may open, is logged once the job is
 * open and named when the server refuses a connection as one too many.
 */
export async function openJob(
  client: SqlClient,
  opts: ResolvedPgOptions,
  where: string,
  log: Logger,
  budget?: ConnectionBudget,
): Promise<number> {
  const q = new Queries(opts.schema);
  const attempt = Math.max(2000, opts.opTimeoutMs);
  // The first statement needs a connection: postgres.js reports one that the server refused as
  // "too many" (53300) only after retrying it for its connect timeout, so an attempt waits for
  // that verdict (bounded a little past it) rather than timing out first without the reason.
  const reachMs = connectTimeoutMs(opts.opTimeoutMs) + CONNECT_VERDICT_MARGIN_MS;
  let version = await reach(opts, where, log, budget, () => within(reachMs, () => schemaVersion(client, q)));
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
    const id = Number(rows[0].id);
    if (budget) {
      log("info", `PostgreSQL job ${JSON.stringify(opts.job)} open on ${where}: ${budgetText(budget)}`, {
        event: "storeConnected",
        server: where,
        connections: connectionsOf(budget),
        poolSize: budget.poolSize,
        transactionPoolSize: budget.transactionPoolSize,
      });
    }
    return id;
  } catch (e) {
    if (e instanceof SplitleaseError) throw e;
    if (isAuthFailure(e)) throw authError(e, `opening job ${JSON.stringify(opts.job)}`);
    throw new StoreUnavailableError("connect", opts.opTimeoutMs, { cause: e, detail: `opening job ${JSON.stringify(opts.job)}: ${describePgError(e)}` });
  }
}
