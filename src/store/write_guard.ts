/**
 * What every networked backend does around its own primitives, in one
 * place: the open/closed state, the checks of a call's key, value and
 * revision before anything is sent, the high-water mark of revisions seen
 * (`seen`), the outage error every failure becomes, and the resolution of
 * a write whose answer was lost by reading the key back ("maybe landed").
 * A backend supplies only how to describe its driver's errors and how to
 * read one key's raw state (a delete marker included).
 *
 * @module
 */
import { SplitleaseError, StoreUnavailableError } from "../errors.ts";
import { assertValidFilter, assertValidKey } from "./keys.ts";
import type { DeleteResult, WriteResult } from "./store.ts";
import { assertValidWrite, DELETED } from "./write_checks.ts";

/**
 * A key's raw state as its backend stores it: its value (`null` for a
 * delete marker) and the revision of its last write or delete.
 *
 * @example
 * ```ts
 * import type { RawEntry } from "./write_guard.ts";
 * const marker: RawEntry = { value: null, revision: 7 };
 * ```
 */
export interface RawEntry {
  /** The value, or `null` when the key's last operation was a delete. */
  value: string | null;
  /** Revision of the key's last write or delete. */
  revision: number;
}

/**
 * How a backend's failures read in messages, for {@linkcode WriteGuard}.
 *
 * @example
 * ```ts
 * import type { GuardOptions } from "./write_guard.ts";
 * const options: GuardOptions = { timeoutMs: 5000, describe: (e) => String(e), where: "Redis at 127.0.0.1:6379" };
 * ```
 */
export interface GuardOptions {
  /** Bound of each operation, in ms (named in every outage message). */
  timeoutMs: number;
  /** One line for a driver error (`describePgError`, the NATS describer). */
  describe: (cause: unknown) => string;
  /** Appended to every outage detail (`PostgreSQL at host:5432/app`), when the backend names its server. */
  where?: string;
  /**
   * A failure that is not an outage of the server but something more
   * specific (the job's bucket deleted: `JobGoneError`), or `undefined`.
   */
  special?: (op: string, cause: unknown) => StoreUnavailableError | undefined;
  /** A value the backend cannot hold although the contract allows it (PostgreSQL text and NUL): the message, or `undefined`. */
  refuseValue?: (key: string, value: string) => string | undefined;
}

/**
 * The state and checks every backend's calls go through. One per store.
 *
 * @example
 * ```ts
 * import { WriteGuard } from "./write_guard.ts";
 * const guard = new WriteGuard({ timeoutMs: 1000, describe: String });
 * guard.checkWrite("create", "split.a", "{}");
 * console.log(guard.landed(4)); // { ok: true, revision: 4 }, and guard.seen is 4
 * ```
 */
export class WriteGuard {
  /** Bound of each operation, in ms. */
  readonly timeoutMs: number;
  /**
   * Share of an operation's budget kept for re-reading a write whose answer
   * was lost (a quarter of it, at most a second): the write itself gets the rest.
   */
  readonly reserve: number;
  readonly #o: GuardOptions;
  #closed = false;
  #seen = 0;

  /** A guard for one store. */
  constructor(options: GuardOptions) {
    this.#o = options;
    this.timeoutMs = options.timeoutMs;
    this.reserve = Math.min(1000, Math.floor(options.timeoutMs / 4));
  }

  /** Whether the store was closed. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Marks the store closed: `false` when it already was (a second `close()` does nothing). */
  close(): boolean {
    if (this.#closed) return false;
    this.#closed = true;
    return true;
  }

  /**
   * Highest revision this store has seen (written, read or watched): a
   * lower bound for the revision of its next write, so a re-read value at
   * or below it cannot be that write's.
   */
  get seen(): number {
    return this.#seen;
  }

  /** Raises {@linkcode seen} to `revision`. */
  saw(revision: number): void {
    if (revision > this.#seen) this.#seen = revision;
  }

  /** A write that landed at `revision` (recorded as seen). */
  landed(revision: number): WriteResult {
    this.saw(revision);
    return { ok: true, revision };
  }

  /** Throws `CLOSED` once the store is closed. */
  checkOpen(op: string): void {
    if (this.#closed) throw new SplitleaseError("CLOSED", `Store operation "${op}" failed: the store is closed`);
  }

  /** `checkOpen`, then the key and value checks of every store (and the backend's own, `refuseValue`). */
  checkWrite(op: string, key: string, value: string): void {
    this.checkOpen(op);
    assertValidWrite(key, value);
    const refused = this.#o.refuseValue?.(key, value);
    if (refused !== undefined) throw new SplitleaseError("INVALID_ARGUMENT", refused);
  }

  /** `checkOpen`, then the key check (reads, deletes). */
  checkKey(op: string, key: string): void {
    this.checkOpen(op);
    assertValidKey(key);
  }

  /** `checkOpen`, then the filter check (listings, watches). */
  checkFilter(op: string, filter: string): void {
    this.checkOpen(op);
    assertValidFilter(filter);
  }

  /** Throws `INVALID_ARGUMENT` unless `revision` is a positive integer (`what`: `Update`, `Delete`). */
  checkRevision(what: string, key: string, revision: number): void {
    if (!Number.isInteger(revision) || revision <= 0) {
      throw new SplitleaseError("INVALID_ARGUMENT", `${what} of key "${key}" needs a positive integer revision, got ${revision}`);
    }
  }

  /**
   * The outage error of `op`: "the store is closed" once it is, the
   * backend's `special` error when it has one for `cause`, else `detail`
   * (or `cause` described, or "timed out"), with the server named.
   */
  unavailable(op: string, cause?: unknown, detail?: string): StoreUnavailableError {
    if (this.#closed) return new StoreUnavailableError(op, this.timeoutMs, { cause, detail: "the store is closed" });
    const special = cause === undefined ? undefined : this.#o.special?.(op, cause);
    if (special) return special;
    const text = detail ?? (cause === undefined ? "timed out" : this.#o.describe(cause));
    return new StoreUnavailableError(op, this.timeoutMs, { cause, detail: this.#o.where ? `${text}; ${this.#o.where}` : text });
  }

  /**
   * A write failed without a verdict (a timeout, a lost connection): it
   * may have landed. Re-read the key (`read`, bounded by the backend): our
   * exact value at a revision above `before` (everything seen before the
   * write, and the revision it was conditioned on) means it did; anything
   * else is reported as the outage. Never written again: a second attempt
   * of a compare-and-swap that landed would lose to itself.
   */
  async maybeLanded(op: string, value: string, before: number, cause: unknown, read: () => Promise<RawEntry | null>): Promise<WriteResult> {
    this.checkOpen(op);
    let entry: RawEntry | null;
    try {
      entry = await read();
    } catch {
      throw this.unavailable(op, cause);
    }
    if (entry && entry.value === value && entry.revision > before) return { ok: true, revision: entry.revision };
    throw this.unavailable(op, cause);
  }

  /**
   * A delete failed without a verdict: gone now (no entry, or a marker)
   * means done; still there, or unreadable, is the outage.
   */
  async deleteMaybeLanded(op: string, cause: unknown, read: () => Promise<RawEntry | null>): Promise<DeleteResult> {
    const entry = await read().catch(() => undefined);
    if (entry !== undefined && (entry === null || entry.value === null)) return DELETED;
    throw this.unavailable(op, cause);
  }
}
