/**
 * The PostgreSQL store: {@linkcode Store} over any driver that implements
 * {@linkcode SqlClient} (the package's `postgres` entry wires postgres.js).
 *
 * @module
 */
import { SplitleaseError } from "../errors.ts";
import type { Logger } from "../util/logger.ts";
import { CONFLICT, DELETE_CONFLICT, DELETED } from "../store/write_checks.ts";
import { type RawEntry, WriteGuard } from "../store/write_guard.ts";
import type {
  DeleteResult,
  KeyFilter,
  Store,
  StoreEntry,
  Watch,
  WriteResult,
} from "../store/store.ts";
import { channelOf, channelsOfKey } from "./channels.ts";
import { DeadlineCalls, Timeout } from "./deadline_calls.ts";
import type { ResolvedPgOptions } from "./options.ts";
import { PAGE_ROWS, PgWatch } from "./pg_watch.ts";
import { PgWatches } from "./pg_watches.ts";
import { filterSql, literal, pageRows, Queries, rev } from "./queries.ts";
import { authError, describePgError } from "./setup.ts";
import { isAuthFailure, isTransient, type SqlClient, type SqlParam, type SqlRow, sqlState } from "./sql_client.ts";

/** SQLSTATE the write functions raise for a lost compare-and-swap inside a transaction. */
const CAS_LOST = "SL409";

/**
 * What a {@linkcode PgStore} is built from: a driver's client on a database
 * whose schema and job were opened (see the `postgres` entry's
 * `PostgresStore.connect`).
 *
 * @example
 * ```ts ignore
 * const init: PgStoreInit = { client, options, jobId: 1, server: "127.0.0.1:5432/app", logger: console.log };
 * ```
 */
export interface PgStoreInit {
  /** The driver. */
  client: SqlClient;
  /** Options after validation. */
  options: ResolvedPgOptions;
  /** The job's id in the schema's `jobs` table. */
  jobId: number;
  /** The server, for messages (no credentials). */
  server: string;
  /** Where listener losses are logged. */
  logger: Logger;
}

/**
 * {@linkcode Store} on PostgreSQL tables (see `postgresSchemaSql`): one live
 * row per key, a counter row per job whose lock orders the job's writes so
 * that revisions are in commit order, and a bounded change log for watches.
 * Lost races are result values; every operation is bounded by
 * `opTimeoutMs` and fails with `StoreUnavailableError` past it. A write
 * whose answer is lost is resolved by reading the key again, never by
 * writing again: it landed only if the key holds exactly its value at a
 * revision above any this store saw before it.
 *
 * `Tx` is the driver's transaction handle given to
 * {@linkcode PgStore.updateInTransaction}.
 *
 * @example
 * ```ts
 * import { PostgresStore } from "@splitlease/splitlease/postgres";
 * await using store = await PostgresStore.connect({ url: "postgres://app@127.0.0.1:5432/app", job: "backfill" });
 * const r = await store.create("plan", "{}");
 * if (r.ok) await store.update("plan", '{"v":1}', r.revision);
 * ```
 */
export class PgStore<Tx = unknown> implements Store {
  /** The job this store is bound to. */
  readonly job: string;
  readonly #client: SqlClient;
  readonly #opts: ResolvedPgOptions;
  readonly #jobId: number;
  readonly #q: Queries;
  readonly #timeout: number;
  /** Share of the op budget kept for re-reading a write whose answer was lost. */
  readonly #reserve: number;
  /** Closed state, call checks, `seen`, outages and maybe-landed writes (the store kit's). */
  readonly #guard: WriteGuard;
  /** Its watches, the listener that wakes them and the host they are given. */
  readonly #watches: PgWatches;
  readonly #pruneEvery: number;
  readonly #calls: DeadlineCalls;

  /** Builds the store on an opened job (drivers' `connect` functions call this). */
  constructor(init: PgStoreInit) {
    this.#client = init.client;
    this.#guard = new WriteGuard({
      timeoutMs: init.options.opTimeoutMs,
      describe: describePgError,
      where: `PostgreSQL at ${init.server}`,
      refuseValue: (key, value) =>
        value.includes("\u0000") ? `Value for key "${key}" contains a NUL character, which PostgreSQL text cannot hold` : undefined,
    });
    this.#calls = new DeadlineCalls(init.client, (what) => (this.#guard.closed ? this.#guard.unavailable(what) : undefined));
    this.#opts = init.options;
    this.job = init.options.job;
    this.#jobId = init.jobId;
    this.#q = new Queries(init.options.schema);
    this.#timeout = this.#guard.timeoutMs;
    this.#reserve = this.#guard.reserve;
    this.#pruneEvery = Math.max(1, Math.min(1000, Math.floor(init.options.changeLogSize / 2)));
    this.#watches = new PgWatches({
      client: init.client,
      logger: init.logger,
      q: this.#q,
      jobId: this.#jobId,
      opts: this.#opts,
      read: (op, text, params) => this.#read(op, text, params),
      saw: (revision) => this.#guard.saw(revision),
    });
  }

  /** The schema holding the store's tables. */
  get schema(): string {
    return this.#opts.schema;
  }

  async create(key: string, value: string): Promise<WriteResult> {
    this.#guard.checkWrite("create", key, value);
    return await this.#put("create", key, value, null);
  }

  async update(key: string, value: string, revision: number): Promise<WriteResult> {
    this.#guard.checkWrite("update", key, value);
    this.#guard.checkRevision("Update", key, revision);
    return await this.#put("update", key, value, revision);
  }

  async delete(key: string, revision?: number): Promise<DeleteResult> {
    this.#guard.checkKey("delete", key);
    if (revision !== undefined) this.#guard.checkRevision("Delete", key, revision);
    const deadline = Date.now() + this.#timeout;
    let r: number;
    try {
      const rows = await this.#calls.query(this.#q.del, [this.#jobId, key, revision ?? null, channelsOfKey(this.#jobId, key)], deadline - this.#reserve);
      r = Number(rows[0]?.r);
      if (!Number.isSafeInteger(r)) throw new Error(`the delete function answered ${String(rows[0]?.r)}`);
    } catch (e) {
      if (isAuthFailure(e)) throw authError(e, "delete");
      // Maybe landed: gone now means done; still there means unknown.
      return await this.#guard.deleteMaybeLanded("delete", e, () => this.#entry("delete", key, deadline, e));
    }
    if (r < 0) return DELETE_CONFLICT;
    this.#guard.saw(r);
    return DELETED;
  }

  async get(key: string): Promise<StoreEntry | undefined> {
    this.#guard.checkKey("get", key);
    const e = await this.#entry("get", key, Date.now() + this.#timeout);
    if (!e || e.value === null) return undefined;
    return { key, value: e.value, revision: e.revision };
  }

  /**
   * See `Store.list`. Read in pages in revision order (each bounded by the
   * operation timeout, not the whole listing); a key changed while paging
   * reappears in a later page, so the result is the state at the last
   * page's revision.
   */
  async list(filter: KeyFilter): Promise<StoreEntry[]> {
    this.#guard.checkFilter("list", filter);
    const f = filterSql(filter);
    if (f.kind === "exact") {
      const e = await this.get(filter);
      return e ? [e] : [];
    }
    const latest = new Map<string, StoreEntry>();
    let after = 0;
    while (true) {
      const rows = pageRows(await this.#read("list", this.#q.page("kv", f), [this.#jobId, after, PAGE_ROWS, ...f.params]));
      let n = 0;
      for (const r of rows) {
        this.#guard.saw(r.head);
        const c = r.change;
        if (!c) continue;
        n++;
        after = c.revision;
        if (c.value === null) latest.delete(c.key);
        else latest.set(c.key, { key: c.key, value: c.value, revision: c.revision });
      }
      if (n < PAGE_ROWS) break;
    }
    const out = [...latest.values()];
    out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return out;
  }

  watch(filter: KeyFilter): Watch {
    this.#guard.checkFilter("watch", filter);
    return new PgWatch(this.#watches.host, filter, channelOf(this.#jobId, filter));
  }

  /**
   * Compare-and-swap of `key` at `revision` committed in ONE transaction
   * with `work`'s own statements on the store's database: `work` runs first
   * on a connection of its own inside `begin`, then the write and `commit`
   * go to the server in one round trip. If the compare-and-swap is lost,
   * everything `work` wrote rolls back and the result is a conflict; if
   * `work` throws, everything rolls back and its error is rethrown (a lost
   * connection as `StoreUnavailableError`). A commit whose answer is lost
   * is resolved by re-reading the key, like every write: `ok` then means
   * `work`'s rows are committed too, an outage means neither or both.
   *
   * `work` may run more than once when a caller retries after a conflict:
   * each run is its own transaction, and only the one whose write landed
   * is kept. A transaction left idle by a frozen client is ended by the
   * server after `transactionIdleTimeoutMs` (its locks freed, its rows
   * rolled back).
   *
   * @example
   * ```ts
   * import { PostgresStore } from "@splitlease/splitlease/postgres";
   * await using store = await PostgresStore.connect({ url: "postgres://app@127.0.0.1:5432/app", job: "copy" });
   * const at = await store.get("progress");
   * if (at) {
   *   const r = await store.updateInTransaction("progress", '{"last":200}', at.revision, async (sql) => {
   *     await sql`insert into sink select * from source where id > 100 and id <= 200`;
   *   });
   *   console.log(r.ok ? "rows and progress committed" : "lost the race: nothing written");
   * }
   * ```
   */
  async updateInTransaction(key: string, value: string, revision: number, work: (tx: Tx) => Promise<void>): Promise<WriteResult> {
    this.#guard.checkWrite("update", key, value);
    this.#guard.checkRevision("Update", key, revision);
    if (typeof work !== "function") throw new SplitleaseError("INVALID_ARGUMENT", `updateInTransaction of key "${key}" needs a function`);
    const script = `select ${this.#q.schema}.put(${this.#jobId}, ${literal(key)}, ${literal(value)}, ${revision}, ` +
      `${literal(channelsOfKey(this.#jobId, key))}, true)::text as r; commit`;
    /** The write's revision once its script answered: committed, whatever happens to the connection next. */
    let landed: number | undefined;
    /** The commit was sent and not answered: it may have landed. */
    let unknown: { before: number; deadline: number; cause: unknown } | undefined;
    let started = false;
    let abandoned = false;
    const ran = this.#client.transaction(async (session) => {
      started = true;
      if (abandoned) throw new Error("the transaction started after its caller gave up");
      await this.#calls.bounded(
        "begin",
        // Also set on the connection at connect where the server allows it; a pooler (PgBouncer)
        // refuses session settings in the startup packet and keeps only these.
        (signal) =>
          session.simple(
            `set local idle_in_transaction_session_timeout = ${this.#opts.transactionIdleTimeoutMs}; ` +
              `set local statement_timeout = ${this.#opts.transactionIdleTimeoutMs}`,
            signal,
          ),
        Date.now() + this.#timeout,
      );
      try {
        await work(session.native as Tx);
      } catch (e) {
        // A lost connection or a server that ended the transaction is an outage; anything else is the caller's.
        throw isTransient(e) ? new WorkFailed(e) : e;
      }
      // The write and `commit` in one message: the job's counter row is locked from the write to
      // the commit on the server alone, never across a round trip to this (maybe frozen) client.
      const deadline = Date.now() + this.#timeout;
      const before = Math.max(this.#guard.seen, revision);
      try {
        const rows = await this.#calls.bounded("update", (signal) => session.simple(script, signal), deadline - this.#reserve);
        landed = rev(rows[0]?.[0]?.r);
      } catch (e) {
        if (sqlState(e) !== CAS_LOST && !isAuthFailure(e)) unknown = { before, deadline, cause: e };
        throw e;
      }
    });
    ran.catch(() => {});
    let timer: ReturnType<typeof setTimeout> | undefined;
    const notStarted = new Promise<never>((_, reject) => {
      timer = setTimeout(() => started || reject(new Timeout(`no connection for the transaction within ${this.#timeout} ms`)), this.#timeout);
    });
    try {
      await Promise.race([ran, notStarted]);
    } catch (e) {
      abandoned = true;
      if (landed !== undefined) return this.#landed(landed); // committed; only the driver's closing `commit` failed
      if (sqlState(e) === CAS_LOST) return CONFLICT;
      if (isAuthFailure(e)) throw authError(e, "update");
      if (unknown) return await this.#maybeLanded("update", key, value, unknown.before, unknown.deadline, unknown.cause);
      if (e instanceof WorkFailed) throw this.#guard.unavailable("update", e.cause, "the transaction failed");
      if (!started || isTransient(e) || e instanceof Timeout) throw this.#guard.unavailable("update", e, started ? "the transaction failed" : undefined);
      throw e;
    } finally {
      clearTimeout(timer);
    }
    return this.#landed(landed!);
  }

  async close(): Promise<void> {
    if (!this.#guard.close()) return;
    await this.#watches.close(() => this.#client.close());
  }

  /** Closes the store (for `await using`). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #put(op: string, key: string, value: string, expected: number | null): Promise<WriteResult> {
    const deadline = Date.now() + this.#timeout;
    const before = Math.max(this.#guard.seen, expected ?? 0);
    let r: unknown;
    try {
      const rows = await this.#calls.query(this.#q.put, [this.#jobId, key, value, expected, channelsOfKey(this.#jobId, key)], deadline - this.#reserve);
      r = rows[0]?.r;
    } catch (e) {
      if (isAuthFailure(e)) throw authError(e, op);
      return await this.#maybeLanded(op, key, value, before, deadline, e);
    }
    if (r === null || r === undefined) return CONFLICT;
    return this.#landed(rev(r));
  }

  #landed(revision: number): WriteResult {
    // One writer sees each revision: the one that lands a multiple of the prune step prunes.
    if (revision % this.#pruneEvery === 0 && revision > this.#opts.changeLogSize) this.#prune(revision - this.#opts.changeLogSize);
    return this.#guard.landed(revision);
  }

  #prune(upTo: number): void {
    this.#calls.query(this.#q.prune, [this.#jobId, upTo, this.#opts.changeLogMinAgeMs], Date.now() + this.#timeout).catch(() => {});
  }

  /** A write failed without a verdict: the kit's maybe-landed rule, over a re-read of the key's row. */
  #maybeLanded(op: string, key: string, value: string, before: number, deadline: number, cause: unknown): Promise<WriteResult> {
    return this.#guard.maybeLanded(op, value, before, cause, () => this.#entry(op, key, deadline, cause));
  }

  /** The key's row (a delete marker has a null value), or null when it has none; bounded by `deadline`. */
  async #entry(op: string, key: string, deadline: number, cause?: unknown): Promise<RawEntry | null> {
    let rows: SqlRow[];
    try {
      rows = await this.#calls.retried(this.#q.get, [this.#jobId, key], deadline);
    } catch (e) {
      if (isAuthFailure(e)) throw authError(e, op);
      throw this.#guard.unavailable(op, cause ?? e);
    }
    if (rows.length === 0) return null;
    const revision = rev(rows[0].revision);
    this.#guard.saw(revision);
    return { value: rows[0].value === null ? null : String(rows[0].value), revision };
  }

  /** A read for watches and listings: one operation timeout, outages as `StoreUnavailableError`. */
  async #read(op: string, text: string, params: SqlParam[]): Promise<SqlRow[]> {
    this.#guard.checkOpen(op);
    try {
      return await this.#calls.retried(text, params, Date.now() + this.#timeout);
    } catch (e) {
      if (isAuthFailure(e)) throw authError(e, op);
      throw this.#guard.unavailable(op, e);
    }
  }
}

/** The transaction's work failed for an outage (kept apart from the caller's own errors). */
class WorkFailed extends Error {
  constructor(cause: unknown) {
    super("the transaction's work failed for an outage", { cause });
  }
}
