/**
 * The small SQL client the PostgreSQL store is written against. The store's
 * logic (revisions, compare-and-swap, watches, the change log) lives in
 * `src/postgres/` and stays Web-standards only; a driver (postgres.js in
 * `adapters/postgres.ts`) implements this interface, and tests can put a
 * fault layer in front of it.
 *
 * @module
 */

/**
 * One result row: column name to value (text, number, bigint as text, or null).
 *
 * @example
 * ```ts
 * import type { SqlRow } from "@splitlease/splitlease/postgres";
 * const row: SqlRow = { key: "plan", revision: "12", value: null };
 * ```
 */
export type SqlRow = Record<string, unknown>;

/**
 * A query parameter: text, a number, or null.
 *
 * @example
 * ```ts
 * import type { SqlParam } from "@splitlease/splitlease/postgres";
 * const params: SqlParam[] = [7, "split.a", null];
 * ```
 */
export type SqlParam = string | number | null;

/**
 * The connection of one explicit transaction (see
 * {@linkcode SqlClient.transaction}).
 *
 * @example
 * ```ts
 * import type { SqlSession } from "@splitlease/splitlease/postgres";
 * async function step(s: SqlSession): Promise<void> {
 *   await s.simple("set local statement_timeout = 5000");
 *   await s.query("select 1", []);
 * }
 * ```
 */
export interface SqlSession {
  /** One parameterised statement in the transaction. */
  query(text: string, params: readonly SqlParam[], signal?: AbortSignal): Promise<SqlRow[]>;
  /**
   * A script of one or more statements without parameters, sent in one
   * message (the simple query protocol): the server runs them back to back
   * without waiting for the client, and skips the rest after an error.
   * Resolves to the rows of each statement, in order.
   */
  simple(text: string, signal?: AbortSignal): Promise<SqlRow[][]>;
  /** The driver's own handle on the transaction, handed to transaction callbacks. */
  readonly native: unknown;
}

/**
 * A connection that only `LISTEN`s (a session of its own: poolers in
 * transaction mode cannot keep one).
 *
 * @example
 * ```ts
 * import type { SqlListener } from "@splitlease/splitlease/postgres";
 * async function follow(l: SqlListener): Promise<void> {
 *   await l.listen("sl1_0123456789abcdef");
 * }
 * ```
 */
export interface SqlListener {
  /** `LISTEN` on `channel` (a plain identifier). */
  listen(channel: string): Promise<void>;
  /** `UNLISTEN` `channel`. */
  unlisten(channel: string): Promise<void>;
  /** Closes the connection (no `closed` callback follows). */
  close(): Promise<void>;
}

/**
 * What a listener reports: a notification on a channel, or the loss of its
 * connection (after which it is dead: the store opens another).
 *
 * @example
 * ```ts
 * import type { SqlListenerEvents } from "@splitlease/splitlease/postgres";
 * const events: SqlListenerEvents = {
 *   notify: (channel) => console.log("woken by", channel),
 *   closed: (error) => console.log("listener lost", error),
 * };
 * ```
 */
export interface SqlListenerEvents {
  /** A `NOTIFY` arrived on `channel`. */
  notify(channel: string): void;
  /** The connection is gone (called at most once). */
  closed(error: unknown): void;
}

/**
 * A connection pool to one PostgreSQL database.
 *
 * Errors: a statement the server refused rejects with an error carrying the
 * server's five-character SQLSTATE in `code`; anything else (a connection
 * lost, refused or reset, an aborted query) rejects with an error without
 * one, or with a driver code such as `CONNECTION_CLOSED`.
 *
 * @example
 * ```ts
 * import type { SqlClient } from "@splitlease/splitlease/postgres";
 * async function now(client: SqlClient): Promise<unknown> {
 *   const [row] = await client.query("select now() as at", []);
 *   return row.at;
 * }
 * ```
 */
export interface SqlClient {
  /**
   * One statement in a transaction of its own (autocommit) on a pooled
   * connection. `signal` cancels it (the statement may have run anyway).
   */
  query(text: string, params: readonly SqlParam[], signal?: AbortSignal): Promise<SqlRow[]>;
  /**
   * Runs `fn` in an explicit transaction on a connection of its own:
   * `begin`, `fn`, then `commit` (a no-op when `fn` committed itself), or
   * `rollback` when `fn` throws (its error is rethrown). A lost connection
   * rejects, and the transaction is gone with it.
   */
  transaction<T>(fn: (session: SqlSession) => Promise<T>): Promise<T>;
  /** A new connection that listens; `events` reports notifications and its loss. */
  listener(events: SqlListenerEvents): Promise<SqlListener>;
  /** Closes every connection. */
  close(): Promise<void>;
}

const SQLSTATE = /^[0-9A-Z]{5}$/;

/** The server's SQLSTATE of `e`, if the server answered with an error. */
export function sqlState(e: unknown): string | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === "string" && SQLSTATE.test(code) ? code : undefined;
}

/**
 * Whether the server refused the credentials or a privilege the job needs
 * (class 28: invalid authorization; 42501: insufficient privilege): no
 * retry fixes these. A missing database (3D000) is not one of them: see
 * {@linkcode isMissingDatabase}.
 */
export function isAuthFailure(e: unknown): boolean {
  const s = sqlState(e);
  return s !== undefined && (s.startsWith("28") || s === "42501");
}

/** Whether the server says the URL's database does not exist (3D000): no retry fixes it, `createdb` does. */
export function isMissingDatabase(e: unknown): boolean {
  return sqlState(e) === "3D000";
}

/**
 * Whether the connection failed because TLS did not verify the server (an
 * unknown or wrong CA, a self-signed or expired certificate, a host name
 * the certificate does not name) or the server offers no TLS where the URL
 * requires it: configuration, which no retry fixes. The runtimes report
 * these with OpenSSL's codes (Deno's Node-compatible TLS and Bun's too).
 */
export function isCertificateFailure(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code === "string") {
    if (code === "SSL_NOT_SUPPORTED" || code === "ERR_TLS_CERT_ALTNAME_INVALID") return true;
    if (/^(UNABLE_TO_(VERIFY|GET_ISSUER)|SELF_SIGNED_CERT|DEPTH_ZERO_SELF_SIGNED|CERT_(HAS_EXPIRED|NOT_YET_VALID|UNTRUSTED|REJECTED|SIGNATURE_FAILURE))/.test(code)) {
      return true;
    }
  }
  return e instanceof Error && /invalid peer certificate/i.test(e.message);
}

/**
 * Why the server refused a connection it could not take now, in words, for
 * the SQLSTATEs that mean "not now" rather than "never": too many
 * connections (53300: `max_connections`, or a role's or database's
 * connection limit), a configuration limit (53400), or a server starting up,
 * shutting down or in recovery (57P03). `undefined` for anything else.
 */
export function connectionRefusal(e: unknown): string | undefined {
  switch (sqlState(e)) {
    case "53300":
      return "too many connections";
    case "53400":
      return "a configuration limit was reached";
    case "57P03":
      return "it is not accepting connections now (starting up, shutting down or in recovery)";
    default:
      return undefined;
  }
}

/** SQLSTATEs of failures that are the server's or the connection's, not the statement's. */
const TRANSIENT_STATES = new Set(["25P03", "57014", "57P01", "57P02", "57P03", "40001", "40P01"]);

/**
 * Whether `e` is an outage rather than a fault of the statement: a lost,
 * refused or reset connection (a driver error without a SQLSTATE), a
 * connection exception (class 08), a shutdown or terminated session
 * (57P01-57P03), an idle transaction ended by the server (25P03), a
 * cancelled statement (57014: `statement_timeout`), too few resources
 * (class 53), a serialization failure or a deadlock (40001, 40P01).
 */
export function isTransient(e: unknown): boolean {
  const s = sqlState(e);
  if (s === undefined) {
    const code = (e as { code?: unknown } | null)?.code;
    return typeof code === "string" && /^(E[A-Z]+|CONNECTION_[A-Z_]+|CONNECT_TIMEOUT)$/.test(code);
  }
  return s.startsWith("08") || s.startsWith("53") || TRANSIENT_STATES.has(s);
}
