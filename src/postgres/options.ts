/**
 * Options of the PostgreSQL store that do not depend on the driver, and
 * their validation.
 *
 * @module
 */
import { SplitleaseError } from "../errors.ts";
import { isValidId } from "../store/keys.ts";
import { keysOf, rejectUnknownKeys } from "../util/options.ts";
import { durationIssue } from "../util/timers.ts";
import type { Logger } from "../util/logger.ts";

/**
 * How the PostgreSQL store behaves, whatever the driver. Every duration is in
 * milliseconds.
 *
 * @example
 * ```ts
 * import type { PgStoreOptions } from "@splitlease/splitlease/postgres";
 * const options: PgStoreOptions = { job: "backfill-2024", opTimeoutMs: 3000, schema: "splitlease" };
 * ```
 */
export interface PgStoreOptions {
  /** Job name: 1-128 characters of `[A-Za-z0-9_-]`; every job has its own revisions and keys. */
  job: string;
  /**
   * The schema holding the store's tables (default `splitlease`): a plain
   * lower-case identifier. Every job of a database shares its tables, keyed
   * by job.
   */
  schema?: string;
  /** Bound on every operation (default 5000). */
  opTimeoutMs?: number;
  /**
   * Create the schema when it is missing (default `true`). With `false` the
   * store uses tables an operator created from the documented DDL
   * (`postgresSchemaSql`) and needs only the grants listed there.
   */
  createSchema?: boolean;
  /**
   * Create the job when it is missing (default `true`). Tools that only read
   * or repair a job (the CLI) pass `false`: a mistyped job name then fails
   * with `INVALID_CONFIG` instead of creating an empty job.
   */
  createJob?: boolean;
  /**
   * How often a watch reads the store when no notification woke it
   * (default 1000). Watches wake on `LISTEN`/`NOTIFY`; this poll is the
   * fallback that bounds the delay of a notification that was missed.
   */
  pollIntervalMs?: number;
  /**
   * Whether the watches of one exact key (a member's own assignment, the
   * plan, the leader record) `LISTEN` (`true`) or poll, all of a store's in
   * one statement every `keyPollMs` (`false`). By default they listen while
   * the job has at most 16 members and poll once it has more than 24 (the
   * `member.` records, counted every 5 s). PostgreSQL signals every
   * listening connection of a database at every commit that notifies,
   * whatever the channel, so each listening worker adds a wake-up of a
   * server process to every write of the fleet: 100 listening workers cut
   * the write rate about tenfold (docs/OPERATIONS.md, "Sizing"). Prefix
   * watches (the leader's view of splits and members, observers) always
   * listen.
   */
  listenExactKeys?: boolean;
  /**
   * How often exact-key watches that poll read their keys, so the delay
   * within which a grant or a revocation reaches its member. By default it
   * follows the fleet's size: a millisecond per member, from 10 to 100 (about
   * 1000 of these reads per second for a fleet of 100).
   */
  keyPollMs?: number;
  /**
   * Changes kept in the change log for watches beyond the live values
   * (default 10000): a change is pruned once it is both this many revisions
   * old and older than `changeLogMinAgeMs`. A watch that falls behind the
   * log catches up from the live values (skipping superseded changes, as
   * the watch contract allows), never from a gap.
   */
  changeLogSize?: number;
  /** The youngest change the log may prune (default 60000). */
  changeLogMinAgeMs?: number;
  /**
   * A transaction of `updateInTransaction` whose client stops answering (a
   * frozen process) is ended by the server after this long (default 10000):
   * its rows roll back and the locks it held (sink rows) are freed for the
   * split's next owner. It bounds both the time between two statements of a
   * transaction (`idle_in_transaction_session_timeout`) and each statement
   * (`statement_timeout`: a client frozen between the messages of one
   * statement leaves its session "active", and PostgreSQL before 17 has no
   * `transaction_timeout`), so every statement of the work must finish
   * within it too.
   */
  transactionIdleTimeoutMs?: number;
  /**
   * How long `connect` keeps trying to reach the server (default
   * `opTimeoutMs`; `Infinity` waits for ever, logging every attempt).
   */
  connectWaitMs?: number;
  /** Where connection retries and listener losses are logged (default: JSON lines). */
  logger?: Logger;
}

/**
 * {@linkcode PgStoreOptions} after defaults and validation (what a
 * `PgStore` is built with).
 *
 * @example
 * ```ts
 * import type { ResolvedPgOptions } from "@splitlease/splitlease/postgres";
 * function describe(o: ResolvedPgOptions): string {
 *   return `${o.schema}/${o.job}, timeout ${o.opTimeoutMs} ms`;
 * }
 * ```
 */
export interface ResolvedPgOptions {
  /** The job name. */
  job: string;
  /** The schema of the tables. */
  schema: string;
  /** Bound on every operation. */
  opTimeoutMs: number;
  /** Create the schema when missing. */
  createSchema: boolean;
  /** Create the job when missing. */
  createJob: boolean;
  /** Watch poll fallback. */
  pollIntervalMs: number;
  /** Whether exact-key watches listen (`undefined`: by the fleet's size). */
  listenExactKeys: boolean | undefined;
  /** Poll period of exact-key watches that do not listen (`undefined`: follows the fleet's size). */
  keyPollMs: number | undefined;
  /** Changes the log keeps at least. */
  changeLogSize: number;
  /** Youngest change the log may prune. */
  changeLogMinAgeMs: number;
  /** Idle transactions ended after this. */
  transactionIdleTimeoutMs: number;
  /** How long connecting may take. */
  connectWaitMs: number;
}

/** Every key of {@linkcode PgStoreOptions}. */
export const PG_STORE_KEYS: readonly string[] = keysOf<PgStoreOptions>({
  job: true,
  schema: true,
  opTimeoutMs: true,
  createSchema: true,
  createJob: true,
  pollIntervalMs: true,
  listenExactKeys: true,
  keyPollMs: true,
  changeLogSize: true,
  changeLogMinAgeMs: true,
  transactionIdleTimeoutMs: true,
  connectWaitMs: true,
  logger: true,
});

const SCHEMA = /^[a-z_][a-z0-9_]{0,62}$/;

/** `INVALID_CONFIG` with the store's name in front. */
export function invalidPg(message: string): SplitleaseError {
  return new SplitleaseError("INVALID_CONFIG", `PostgresStore: ${message}`);
}

/**
 * Validates the driver-independent options and applies defaults; `extra`
 * names the driver's own keys (accepted here, checked by the driver).
 */
export function resolvePgOptions(options: PgStoreOptions, extra: readonly string[] = []): ResolvedPgOptions {
  if (!options || typeof options !== "object") throw invalidPg("options are required");
  rejectUnknownKeys(options, [...PG_STORE_KEYS, ...extra], "PostgresStore");
  if (typeof options.job !== "string" || !isValidId(options.job)) {
    throw invalidPg(`job ${JSON.stringify(options.job)} must be 1-128 characters of [A-Za-z0-9_-]`);
  }
  const schema = options.schema ?? "splitlease";
  if (typeof schema !== "string" || !SCHEMA.test(schema)) {
    throw invalidPg(`schema ${JSON.stringify(schema)} must be a plain lower-case SQL identifier ([a-z_][a-z0-9_]*, at most 63 characters)`);
  }
  const opTimeoutMs = options.opTimeoutMs ?? 5000;
  const pollIntervalMs = options.pollIntervalMs ?? 1000;
  const keyPollMs = options.keyPollMs;
  const changeLogMinAgeMs = options.changeLogMinAgeMs ?? 60_000;
  const transactionIdleTimeoutMs = options.transactionIdleTimeoutMs ?? 10_000;
  const issue = durationIssue("opTimeoutMs", opTimeoutMs, 50) ??
    durationIssue("pollIntervalMs", pollIntervalMs, 10) ??
    (keyPollMs === undefined ? undefined : durationIssue("keyPollMs", keyPollMs, 5)) ??
    durationIssue("changeLogMinAgeMs", changeLogMinAgeMs) ??
    durationIssue("transactionIdleTimeoutMs", transactionIdleTimeoutMs, 100);
  if (issue) throw invalidPg(issue);
  const changeLogSize = options.changeLogSize ?? 10_000;
  if (!Number.isInteger(changeLogSize) || changeLogSize < 1 || changeLogSize > 100_000_000) {
    throw invalidPg(`changeLogSize must be an integer from 1 to 100000000, got ${changeLogSize}`);
  }
  const connectWaitMs = options.connectWaitMs ?? opTimeoutMs;
  if (connectWaitMs !== Infinity) {
    const waitIssue = durationIssue("connectWaitMs", connectWaitMs);
    if (waitIssue) throw invalidPg(`${waitIssue} (or Infinity to wait for ever)`);
  }
  for (const key of ["createSchema", "createJob", "listenExactKeys"] as const) {
    const v = options[key];
    if (v !== undefined && typeof v !== "boolean") throw invalidPg(`${key} must be true or false, got ${JSON.stringify(v)}`);
  }
  if (options.logger !== undefined && typeof options.logger !== "function") {
    throw invalidPg("logger must be a function (level, message, fields)");
  }
  return {
    job: options.job,
    schema,
    opTimeoutMs,
    createSchema: options.createSchema ?? true,
    createJob: options.createJob ?? true,
    pollIntervalMs,
    listenExactKeys: options.listenExactKeys,
    keyPollMs,
    changeLogSize,
    changeLogMinAgeMs,
    transactionIdleTimeoutMs,
    connectWaitMs,
  };
}

/**
 * How long the driver may take to open one connection (its handshake's
 * bound): `max(2000, opTimeoutMs)`. postgres.js also uses it as the time it
 * keeps retrying a connection the server refused as "too many" (53300)
 * before it reports the refusal, so a connect attempt waits for it plus
 * {@linkcode CONNECT_VERDICT_MARGIN_MS} (see `openJob`).
 */
export function connectTimeoutMs(opTimeoutMs: number): number {
  return Math.max(2000, opTimeoutMs);
}

/**
 * What a connect attempt waits beyond {@linkcode connectTimeoutMs} for the
 * driver's verdict: its last retry's pause (the adapter caps it at 500 ms)
 * and the failing handshake itself.
 */
export const CONNECT_VERDICT_MARGIN_MS = 1500;

/**
 * The connections one store may open to its server: the statement pool,
 * one `LISTEN` connection, and the transaction pool (opened on first use:
 * `updateInTransaction`, a lane's transactional commit, the schema's
 * creation).
 *
 * @example
 * ```ts ignore
 * const budget: ConnectionBudget = { poolSize: 4, transactionPoolSize: 4 };
 * connectionsOf(budget); // 9
 * ```
 */
export interface ConnectionBudget {
  /** `poolSize`: connections for the store's statements. */
  poolSize: number;
  /** `transactionPoolSize`: connections for transactions, one per transaction in flight. */
  transactionPoolSize: number;
}

/** How many connections a store with `budget` opens at most (the listener counted). */
export function connectionsOf(budget: ConnectionBudget): number {
  return budget.poolSize + 1 + budget.transactionPoolSize;
}

/** The budget in words, with the options that lower it: for the log at connect and for a refused connection. */
export function budgetText(budget: ConnectionBudget): string {
  return `a store opens up to ${connectionsOf(budget)} connections to the server ` +
    `(poolSize ${budget.poolSize} for statements, 1 to LISTEN, transactionPoolSize ${budget.transactionPoolSize} once it commits in transactions); ` +
    `lower poolSize and transactionPoolSize to open fewer`;
}
