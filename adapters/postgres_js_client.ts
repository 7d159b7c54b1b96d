/**
 * The PostgreSQL store's driver: the {@linkcode SqlClient} of postgres.js
 * (`postgresJsClient`: a statement pool, a transaction pool opened on first
 * use, a connection per listener) and the options that reach it
 * ({@linkcode PostgresStoreOptions}: the URLs, pools, prepared statements
 * and pipelining, beside the driver-independent `PgStoreOptions`). Apart
 * from the entry (postgres.ts: the store, its transaction handle, what the
 * package exports) because it is the one file that speaks postgres.js.
 *
 * @module
 */
import postgres from "postgres";
import { connectTimeoutMs, invalidPg, type PgStoreOptions } from "../src/postgres/options.ts";
import type { SqlClient, SqlListener, SqlListenerEvents, SqlParam, SqlRow, SqlSession } from "../src/postgres/sql_client.ts";
import { durationIssue } from "../src/util/timers.ts";
import { POSTGRES_URLS, wrongStoreUrlMessage } from "../src/store/store_urls.ts";


/**
 * Options of {@linkcode PostgresStore.connect}: where the database is, and
 * the driver-independent {@linkcode PgStoreOptions}.
 *
 * @example
 * ```ts
 * import type { PostgresStoreOptions } from "@splitlease/splitlease/postgres";
 * const options: PostgresStoreOptions = {
 *   url: "postgres://splitlease_worker:secret@db.internal:5432/app",
 *   job: "backfill-2024",
 *   createSchema: false,
 * };
 * ```
 */
export interface PostgresStoreOptions extends PgStoreOptions {
  /**
   * `postgres://` or `postgresql://` URL (`?sslmode=verify-full&sslrootcert=/path/ca.crt`
   * and the other libpq parameters postgres.js reads are honoured). Behind
   * PgBouncer in transaction mode, give `listenUrl` too, and `prepare:
   * false` and `pipeline: false` (docs/OPERATIONS.md, "Poolers").
   */
  url: string;
  /**
   * URL of the connection that `LISTEN`s (default `url`). It must be a
   * session of its own: a direct connection, or a pooler in session mode.
   * PgBouncer in transaction mode does not keep `LISTEN` (watches would
   * fall back to polling every `pollIntervalMs`).
   */
  listenUrl?: string;
  /** Connections for the store's statements (default 4; statements are pipelined on each). */
  poolSize?: number;
  /** Connections for `updateInTransaction`, opened on first use (default 4): one per transaction in flight. */
  transactionPoolSize?: number;
  /**
   * Named prepared statements (default `true`). Pass `false` behind a
   * transaction-mode pooler that cannot keep them (PgBouncer before 1.21,
   * or with `max_prepared_statements = 0`).
   */
  prepare?: boolean;
  /**
   * Pipeline statements on each connection (default `true`: the store's
   * compare-and-swap rate depends on it). Pass `false` behind PgBouncer in
   * transaction mode: it hands the server connection to another client
   * when one statement's transaction ends, and the answers of the
   * statements pipelined behind it are lost (PgBouncer logs "got packet
   * ... from server when not linked"; the store's statements time out).
   * Each connection then carries one statement at a time.
   */
  pipeline?: boolean;
  /**
   * `application_name` of the store's connections (default
   * `splitlease:<job>`; the listener's ends in `:listen`, the
   * transactions' in `:tx`), as `pg_stat_activity` shows them.
   */
  applicationName?: string;
}

/**
 * The keys of {@linkcode PostgresStoreOptions} that are the driver's, not
 * `PgStoreOptions`' (the store's option check accepts them as known).
 *
 * @example
 * ```ts
 * import { DRIVER_KEYS } from "./postgres_js_client.ts";
 * console.log(DRIVER_KEYS.includes("poolSize")); // true
 * ```
 */
export const DRIVER_KEYS = ["url", "listenUrl", "poolSize", "transactionPoolSize", "prepare", "pipeline", "applicationName"];
/** A URL of the registry's PostgreSQL schemes (src/store/store_urls.ts). */
const PG_URL = new RegExp(`^(${POSTGRES_URLS.schemes.map((s) => s.scheme).join("|")}):\\/\\/\\S+$`, "i");

/**
 * `url` without its credentials, for messages.
 *
 * @example
 * ```ts
 * import { serverOf } from "./postgres_js_client.ts";
 * console.log(serverOf("postgres://app:secret@db.internal:5432/app")); // "db.internal:5432/app"
 * ```
 */
export function serverOf(url: string): string {
  const rest = url.replace(/^[a-z]+:\/\//i, "");
  const at = rest.lastIndexOf("@", rest.indexOf("/") < 0 ? rest.length : rest.indexOf("/"));
  const hostPart = at >= 0 ? rest.slice(at + 1) : rest;
  return hostPart.replace(/\?.*$/, "");
}

function checkUrl(key: string, url: unknown): string {
  // What it is instead (a NATS URL), or what it likely meant: the registry's message.
  if (typeof url !== "string" || !PG_URL.test(url)) throw invalidPg(wrongStoreUrlMessage(url, POSTGRES_URLS, key));
  return url;
}

function checkCount(key: string, v: unknown, fallback: number): number {
  const n = v ?? fallback;
  if (!Number.isInteger(n) || (n as number) < 1 || (n as number) > 1000) throw invalidPg(`${key} must be an integer from 1 to 1000, got ${JSON.stringify(v)}`);
  return n as number;
}

type Pg = postgres.Sql<Record<string, never>>;

/**
 * Seconds postgres.js waits before its next try at a connection that failed,
 * with jitter: 0.1 doubling to 0.5 until its connect timeout has surely
 * passed, then doubling to 5. It retries a connection the server refused as
 * "too many" (53300) until the connect timeout has passed and only then
 * rejects the statements waiting for it; its own backoff (threefold to 20 s)
 * made that verdict come up to 3 s past the timeout (measured: 8.1 s with a
 * 5 s timeout), after the connect attempt had given up without the reason.
 * Quick tries bring the verdict within 0.5 s of the timeout; once it is
 * out, statements fail at once with it until the next try, and slower
 * tries spare a full server a new backend every half second.
 */
function backoffFor(connectMs: number): (attempt: number) => number {
  const quick = Math.ceil(connectMs / 375) + 4;
  return (attempt) => (attempt <= quick ? Math.min(0.05 * 2 ** attempt, 0.5) : Math.min(0.5 * 2 ** (attempt - quick), 5)) * (0.75 + Math.random() / 4);
}

/** The postgres.js options every connection of the store shares. */
function driverOptions(connectMs: number, pipeline = true) {
  return {
    // One statement at a time on a connection without pipelining (PgBouncer in transaction mode
    // loses the answers of statements pipelined behind one that ended a transaction).
    max_pipeline: pipeline ? 100 : 1,
    onnotice: false as const,
    fetch_types: false,
    connect_timeout: connectMs / 1000,
    backoff: backoffFor(connectMs),
    // Detects a dead peer in a minute instead of the system's two hours.
    keep_alive: 30,
  };
}

function openPool(
  url: string,
  max: number,
  o: { prepare: boolean; pipeline: boolean; connectMs: number },
  name: string,
  settings: Record<string, string> = {},
): Pg {
  const { prepare } = o;
  return postgres(url, {
    ...driverOptions(o.connectMs, o.pipeline),
    max,
    prepare,
    connection: { application_name: name, ...settings },
  }) as unknown as Pg;
}

/** PgBouncer's refusal of a startup packet with a parameter it does not know (`ignore_startup_parameters`). */
function unsupportedStartupParameter(e: unknown): boolean {
  return (e as { code?: unknown })?.code === "08P01" && /unsupported startup parameter/i.test(e instanceof Error ? e.message : "");
}

/** Rows of a statement, or of each statement of a script. */
function statements(result: unknown): SqlRow[][] {
  const r = result as SqlRow[] | SqlRow[][];
  return r.length > 0 && Array.isArray(r[0]) ? (r as SqlRow[][]) : [r as SqlRow[]];
}

/** A pending postgres.js query as a promise, cancelled when `signal` aborts. */
function run(q: postgres.PendingQuery<postgres.Row[]>, signal?: AbortSignal): Promise<SqlRow[]> {
  return Promise.resolve(signal ? q.signal(signal) : q) as Promise<SqlRow[]>;
}

/**
 * The {@linkcode SqlClient} of postgres.js: a pool for statements, a pool
 * opened on first use for transactions, and one connection per listener.
 *
 * @example
 * ```ts
 * import { postgresJsClient } from "@splitlease/splitlease/postgres";
 * const client = postgresJsClient({ url: "postgres://app@127.0.0.1:5432/app" });
 * console.log(await client.query("select 1 as one", []));
 * await client.close();
 * ```
 */
export function postgresJsClient(
  options: Pick<
    PostgresStoreOptions,
    | "url"
    | "listenUrl"
    | "poolSize"
    | "transactionPoolSize"
    | "prepare"
    | "pipeline"
    | "opTimeoutMs"
    | "applicationName"
    | "transactionIdleTimeoutMs"
    | "logger"
  >,
): SqlClient {
  const name = options.applicationName ?? "splitlease";
  if (typeof name !== "string" || name.length === 0 || name.length > 63) {
    throw invalidPg(`applicationName must be 1-63 characters, got ${JSON.stringify(options.applicationName)}`);
  }
  const url = checkUrl("url", options.url);
  const listenUrl = options.listenUrl === undefined ? url : checkUrl("listenUrl", options.listenUrl);
  const prepare = options.prepare ?? true;
  if (typeof prepare !== "boolean") throw invalidPg(`prepare must be true or false, got ${JSON.stringify(options.prepare)}`);
  const poolSize = checkCount("poolSize", options.poolSize, 4);
  const txSize = checkCount("transactionPoolSize", options.transactionPoolSize, 4);
  const connectMs = connectTimeoutMs(options.opTimeoutMs ?? 5000);
  const issue = options.opTimeoutMs === undefined ? undefined : durationIssue("opTimeoutMs", options.opTimeoutMs, 50);
  if (issue) throw invalidPg(issue);
  const pipeline = options.pipeline ?? true;
  if (typeof pipeline !== "boolean") throw invalidPg(`pipeline must be true or false, got ${JSON.stringify(options.pipeline)}`);
  const driver = { prepare, pipeline, connectMs };
  const pool = openPool(url, poolSize, driver, name);
  let txPool: Pg | undefined;
  const bound = String(options.transactionIdleTimeoutMs ?? 10_000);
  /** Session settings of the transaction connections, sent at connect (dropped when a pooler refuses them). */
  let txSettings: Record<string, string> = { idle_in_transaction_session_timeout: bound, statement_timeout: bound };
  const listeners = new Set<Pg>();
  return {
    // Named prepared statements (postgres.js leaves them off for `unsafe`): parsed once per
    // connection, and only a prepared statement is pipelined (an unprepared one with parameters
    // waits for its own Describe round trip first).
    query: (text: string, params: readonly SqlParam[], signal?: AbortSignal) =>
      run(pool.unsafe(text, params as SqlParam[] as never[], { prepare }), signal),
    async transaction<T>(fn: (session: SqlSession) => Promise<T>): Promise<T> {
      // A client frozen inside a transaction holds its row locks until the server ends it:
      // idle between two statements (right after `begin` included, hence a session setting, not
      // `set local`) by idle_in_transaction_session_timeout, and in the middle of one statement's
      // messages (a Describe answered, its Bind never sent: the session stays "active") only by
      // statement_timeout (PostgreSQL before 17 has no transaction_timeout).
      const pool = txPool ??= openPool(url, txSize, driver, `${name}:tx`, txSettings);
      const settings = txSettings;
      let started = false;
      // postgres.js rejects a statement made on a transaction after it ended (its connection
      // closed by the server included), so a frozen client that wakes cannot write outside it.
      const attempt = (on: Pg) =>
        on.begin((tx) => {
          started = true;
          return fn({
            native: tx,
            query: (text, params, s) => run(tx.unsafe(text, params as SqlParam[] as never[], { prepare }), s),
            simple: async (text, s) => statements(await run(tx.unsafe(text), s)),
          });
        }) as Promise<T>;
      try {
        return await attempt(pool);
      } catch (e) {
        // PgBouncer (any pool mode) refuses a connection whose startup packet sets parameters it
        // does not track. Its transactions then go without them: the store sets both bounds with
        // `set local` as its transaction's first statement, which leaves only the moment between
        // `begin` and that statement to the role's or the server's own settings.
        if (started || !unsupportedStartupParameter(e) || Object.keys(settings).length === 0) throw e;
        if (txPool === pool) {
          txSettings = {};
          txPool = openPool(url, txSize, driver, `${name}:tx`, txSettings);
          void pool.end({ timeout: 1 }).catch(() => {});
          options.logger?.("warn", "The pooler refused the transaction connections' session settings; transactions set them with SET LOCAL", {
            event: "storeTxSettingsRefused",
            error: e instanceof Error ? e.message : String(e),
            hint: "set idle_in_transaction_session_timeout on the workers' role too (docs/OPERATIONS.md, \"Poolers\")",
          });
        }
        return await attempt(txPool!);
      }
    },
    async listener(events: SqlListenerEvents): Promise<SqlListener> {
      let open = false;
      let closing = false;
      let reported = false;
      // One connection for every channel (postgres.js's own `listen` reconnects by itself, and a
      // LISTEN that fails while the server is away is not retried); `onclose` tells us it is gone.
      const sql = postgres(listenUrl, {
        ...driverOptions(connectMs),
        max: 1,
        connection: { application_name: `${name}:listen` },
        idle_timeout: null,
        max_lifetime: null,
        onnotify: (channel: string) => events.notify(channel),
        onclose: () => {
          if (!open || closing || reported) return;
          reported = true;
          events.closed(new Error("the listener's connection closed"));
        },
      }) as unknown as Pg;
      listeners.add(sql);
      const close = async () => {
        closing = true;
        listeners.delete(sql);
        await sql.end({ timeout: 1 }).catch(() => {});
      };
      try {
        await sql`select 1`;
      } catch (e) {
        await close();
        throw e;
      }
      open = true;
      const quote = (channel: string) => '"' + channel.replaceAll('"', '""') + '"';
      return {
        listen: async (channel) => void await sql.unsafe(`listen ${quote(channel)}`),
        unlisten: async (channel) => void await sql.unsafe(`unlisten ${quote(channel)}`),
        close,
      };
    },
    async close(): Promise<void> {
      await Promise.all([pool, ...(txPool ? [txPool] : []), ...listeners].map((s) => s.end({ timeout: 2 }).catch(() => {})));
    },
  };
}
