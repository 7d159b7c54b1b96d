/**
 * The coordination store: six primitives every backend implements with the
 * same semantics (NATS JetStream KV is the reference model).
 *
 * @module
 */

/**
 * Largest value a store accepts, in UTF-8 bytes (256 KiB).
 *
 * @example
 * ```ts
 * import { MAX_VALUE_BYTES } from "@splitlease/splitlease/store";
 * console.log(MAX_VALUE_BYTES); // 262144
 * ```
 */
export const MAX_VALUE_BYTES = 256 * 1024;

/**
 * A live value with the revision that wrote it.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { type StoreEntry } from "@splitlease/splitlease/store";
 * const store = new MemoryStore();
 * await store.create("plan", "{}");
 * const e: StoreEntry | undefined = await store.get("plan");
 * console.log(e?.revision); // 1
 * ```
 */
export interface StoreEntry {
  /** The full key. */
  key: string;
  /** The value (JSON text for every splitlease record). */
  value: string;
  /**
   * The revision of the write that produced this value. Revisions increase
   * strictly across the whole store (a bucket-wide sequence), so a later
   * write to any key has a higher revision.
   */
  revision: number;
}

/**
 * Outcome of a conditional write. A lost race is a value, not an exception.
 *
 * - `{ ok: true, revision }`: the write landed at `revision`.
 * - `{ ok: false, conflict: true }`: the condition did not hold; nothing was
 *   written. Re-read to see what is there.
  *
  * @example
  * ```ts
  * import { MemoryStore } from "@splitlease/splitlease";
  * import { type WriteResult } from "@splitlease/splitlease/store";
  * const store = new MemoryStore();
  * const r: WriteResult = await store.create("job", "{}");
  * if (r.ok) console.log(r.revision); else console.log("already exists");
  * ```
 */
export type WriteResult =
  | { ok: true; revision: number }
  | { ok: false; conflict: true };

/**
 * Outcome of a guarded delete: `ok` when the key is gone (deleted now, or
 * already absent), a conflict when it exists at another revision.
  *
  * @example
  * ```ts
  * import { MemoryStore } from "@splitlease/splitlease";
  * import { type DeleteResult } from "@splitlease/splitlease/store";
  * const store = new MemoryStore();
  * const r: DeleteResult = await store.delete("plan");
  * console.log(r.ok); // true: deleting an absent key succeeds
  * ```
 */
export type DeleteResult = { ok: true } | { ok: false; conflict: true };

/**
 * One event of a watch, in this order: the snapshot (`put` for every live
 * key), then `ready`, then live `put` and `delete` events in revision order.
 * A change superseded before the watch delivered it may be left out (a
 * NATS bucket keeps one value per key, and a consumer that is behind skips
 * what is gone): the last change of every key is always delivered, so
 * consumers act on the latest state of a key, never on a count of events.
 *
 * A `reset` means the watch was re-established (reconnect, server restart,
 * failover): a fresh snapshot follows, then `ready` again. Consumers must
 * treat everything they derived from this watch as stale and rebuild it from
 * the new snapshot (a key absent from it was deleted meanwhile). Consumers
 * must also be idempotent: after a reset a value already seen is delivered
 * again.
  *
  * @example
  * ```ts
  * import type { WatchEvent } from "@splitlease/splitlease/store";
  * function describe(ev: WatchEvent): string {
  *   return ev.type === "put" ? `${ev.key}@${ev.revision}` : ev.type;
  * }
  * ```
 */
export type WatchEvent =
  | { type: "put"; key: string; value: string; revision: number }
  | { type: "delete"; key: string; revision: number }
  | { type: "ready" }
  | { type: "reset"; reason: string };

/**
 * A running watch: an async iterable of {@linkcode WatchEvent}s that ends
 * when stopped or when the store is closed.
  *
  * @example
  * ```ts
  * import { MemoryStore } from "@splitlease/splitlease";
  * import { type Watch } from "@splitlease/splitlease/store";
  * const store = new MemoryStore();
  * const w: Watch = store.watch("member.");
  * for await (const ev of w) {
  *   if (ev.type === "ready") break; // snapshot done
  * }
  * await w.stop();
  * ```
 */
export interface Watch extends AsyncIterable<WatchEvent>, AsyncDisposable {
  /** Stops the watch; iteration ends. Idempotent. */
  stop(): Promise<void>;
  /**
   * Optional: the revision of the last change to the watched keys made
   * before the call (0 when there is none; `Infinity` when the watch cannot
   * tell yet). A consumer that has applied every event up to this revision
   * has seen every change made before the call. It is never the revision
   * of a key outside the filter: a watch that delivered everything under
   * its filter is caught up whatever was written elsewhere. Backends that
   * cannot tell leave it out (callers then fall back to a listing).
   */
  position?(): Promise<number>;
}

/**
 * A key filter for {@linkcode Store.watch} and {@linkcode Store.list}: a
 * string ending in `"."` selects every key that starts with it (`"split."`),
 * `""` selects every key, anything else selects that exact key (`"plan"`).
  *
  * @example
  * ```ts
  * import { MemoryStore } from "@splitlease/splitlease";
  * import { type KeyFilter } from "@splitlease/splitlease/store";
  * const filter: KeyFilter = "split."; // every split record
  * console.log(await new MemoryStore().list(filter));
  * ```
 */
export type KeyFilter = string;

/**
 * Statements a caller runs inside the store's own database transaction (see
 * {@linkcode Store.updateInTransaction}). `tx` is the store's transaction
 * handle: for `PostgresStore`, postgres.js's `sql` tag bound to the
 * transaction (`PgTransaction`). It may run more than once (each run in a
 * transaction of its own; only the one whose write landed is kept).
 *
 * @example
 * ```ts
 * import type { TransactionWork } from "@splitlease/splitlease/store";
 * const work: TransactionWork = async (sql) => {
 *   await sql`insert into sink (id, payload) values (${1}, ${"a"})`;
 * };
 * ```
 */
// deno-lint-ignore no-explicit-any -- the handle's type is the backend's (a driver's transaction)
export type TransactionWork = (tx: any) => Promise<void>;

/**
 * The six primitives of the coordination store. Every method is required and
 * has the semantics written here, on every backend.
 *
 * Keys are dot-separated tokens of `[A-Za-z0-9_=-]`. Values are strings of at
 * most {@linkcode MAX_VALUE_BYTES} UTF-8 bytes (`ValueTooLargeError` above).
 * Outages and timeouts throw `StoreUnavailableError`; a bad key throws
 * `InvalidKeyError`. Expected outcomes are result values.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * await using store = new MemoryStore();
 * const r = await store.create("plan", "{}");
 * if (r.ok) await store.update("plan", "{\"v\":1}", r.revision);
 * ```
 */
export interface Store extends AsyncDisposable {
  /**
   * The job this store is bound to, when the backend binds one (a NATS
   * store opens the bucket `splitlease_<job>`, a PostgreSQL store its
   * job's rows). A coordinator refuses to
   * join another job through it (`INVALID_CONFIG` naming both), so data,
   * logs, metrics and the CLI always speak of the same job. Stores shared
   * by several jobs (`MemoryStore`) leave it out.
   */
  readonly job?: string;
  /**
   * What an acknowledged write survives on this store's server, in one
   * line, for a backend that reads and checks it at connect (Redis: its
   * persistence settings, its replicas and what the store waits for).
   * `/status` shows it. Backends whose guarantee is fixed leave it out.
   */
  readonly durability?: string;
  /**
   * Writes `value` only if `key` is absent (never written, or its last
   * operation was a delete). Returns the new revision, or a conflict when the
   * key holds a value.
   */
  create(key: string, value: string): Promise<WriteResult>;
  /**
   * Compare-and-swap: writes `value` only if the key's current revision is
   * `revision` (the revision of the last write or delete of that key).
   * Returns the new revision, or a conflict.
   */
  update(key: string, value: string, revision: number): Promise<WriteResult>;
  /**
   * Deletes `key`. With `revision`, only if the key's value is still at that
   * revision (a conflict otherwise). Deleting an absent key succeeds
   * vacuously. Watchers see a `delete` event.
   */
  delete(key: string, revision?: number): Promise<DeleteResult>;
  /** Point read: the live value and its revision, or `undefined` if absent. */
  get(key: string): Promise<StoreEntry | undefined>;
  /**
   * Watches the keys selected by `filter`: the current values, then
   * `ready`, then live changes in revision order (see {@linkcode WatchEvent};
   * a superseded change may be left out, the last one of a key never).
   */
  watch(filter: KeyFilter): Watch;
  /**
   * Every live entry selected by `filter`, in key order. A large listing is
   * streamed: it fails with `StoreUnavailableError` only when it makes no
   * progress for the operation timeout, not when it takes longer than one.
   */
  list(filter: KeyFilter): Promise<StoreEntry[]>;
  /** Closes the store: ends every watch and releases connections. */
  close(): Promise<void>;
  /**
   * Optional, for stores on a database that can also hold a worker's
   * output: a compare-and-swap (as {@linkcode Store.update}) committed in
   * ONE transaction with `work`'s own statements, so that they land
   * together or not at all. A lost race rolls `work`'s writes back and
   * returns a conflict; `work`'s own error rolls everything back and is
   * rethrown; an outage is `StoreUnavailableError` (both landed or
   * neither; the key's revision tells which). Backends that cannot leave
   * it out: a lane's transactional commit then fails with `INVALID_CONFIG`.
   */
  updateInTransaction?(key: string, value: string, revision: number, work: TransactionWork): Promise<WriteResult>;
}
