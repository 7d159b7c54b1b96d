/**
 * Statements bounded by a deadline: a driver call that never settles
 * cannot hold a store operation past its `opTimeoutMs`, and a read whose
 * connection the server ended is tried again on a new one while time is
 * left. Writes go through {@linkcode DeadlineCalls.bounded} once and are
 * never sent twice: a write whose answer is lost is resolved by re-reading.
 *
 * @module
 */
import { clampTimerMs } from "../util/timers.ts";
import { isTransient, type SqlClient, type SqlParam, type SqlRow } from "./sql_client.ts";

/**
 * An operation got no answer in time (it may still run on the server).
 *
 * @example
 * ```ts
 * import { Timeout } from "./deadline_calls.ts";
 * const e = new Timeout("no answer within 5000 ms");
 * console.assert(e instanceof Error);
 * ```
 */
export class Timeout extends Error {}

/**
 * One store's driver calls, each bounded by the deadline it is given.
 *
 * @example
 * ```ts ignore
 * const calls = new DeadlineCalls(client, (what) => closed ? new Error(`${what}: the store is closed`) : undefined);
 * const rows = await calls.retried("select 1", [], Date.now() + 5000);
 * ```
 */
export class DeadlineCalls {
  readonly #client: SqlClient;
  readonly #closed: (what: string) => Error | undefined;

  /** Calls on `client`; `closed` returns the error to fail with once the store is closed. */
  constructor(client: SqlClient, closed: (what: string) => Error | undefined) {
    this.#client = client;
    this.#closed = closed;
  }

  /**
   * A read, tried again within `deadline` when its connection failed (a
   * connection ended by the server fails the statement sent on it; the
   * next goes on a new one). Reads only: a write is never sent twice.
   */
  async retried(text: string, params: readonly SqlParam[], deadline: number): Promise<SqlRow[]> {
    for (let pause = 10;; pause = Math.min(pause * 2, 200)) {
      try {
        return await this.query(text, params, deadline);
      } catch (e) {
        if (this.#closed("query") || !isTransient(e) || Date.now() + pause >= deadline) throw e;
        await new Promise((r) => setTimeout(r, pause));
      }
    }
  }

  /** One pooled statement, cancelled and rejected at `deadline`. */
  query(text: string, params: readonly SqlParam[], deadline: number): Promise<SqlRow[]> {
    return this.bounded("query", (signal) => this.#client.query(text, params, signal), deadline);
  }

  /** Runs `f`, aborting its signal and rejecting at `deadline` (a driver that never settles cannot hold us). */
  bounded<T>(what: string, f: (signal: AbortSignal) => Promise<T>, deadline: number): Promise<T> {
    const ms = deadline - Date.now();
    const closed = this.#closed(what);
    if (closed) return Promise.reject(closed);
    if (ms <= 0) return Promise.reject(new Timeout(`no time left for ${what}`));
    const ac = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = f(ac.signal);
    run.catch(() => {});
    return Promise.race([
      run,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          ac.abort();
          reject(new Timeout(`no answer within ${Math.round(ms)} ms`));
        }, clampTimerMs(ms));
      }),
    ]).finally(() => clearTimeout(timer));
  }
}
