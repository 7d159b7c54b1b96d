/**
 * The NATS JetStream KV store: {@linkcode Store} over `@nats-io/kv` on a
 * WebSocket connection.
 *
 * @module
 */
import type { KvEntry } from "@nats-io/kv";
import { Empty, headers } from "@nats-io/nats-core";
import { JetStreamApiError } from "@nats-io/jetstream";
import { JobGoneError, StoreUnavailableError } from "../errors.ts";
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
import { Connection, isConflict } from "./connection.ts";
import { describe } from "./describe.ts";
import type { NatsStoreOptions } from "./options.ts";
import { type Scan, startScan } from "./scan.ts";
import { isNoResponders, untilReceived } from "./unsent.ts";
import { NatsWatch } from "./watch.ts";
import { clampTimerMs } from "../util/timers.ts";

/** JetStream's API error code for a stream that does not exist (`JetStreamApiCodes.StreamNotFound`). */
const STREAM_NOT_FOUND = 10059;


/**
 * {@linkcode Store} backed by a NATS JetStream KV bucket (`splitlease_<job>`,
 * history 1) reached over WebSocket. Revisions are the bucket's stream
 * sequence; lost races are result values; every operation is bounded by
 * `opTimeoutMs` and fails with `StoreUnavailableError` past it. A write that
 * timed out is re-read before it is reported ("maybe-landed" writes): it
 * succeeds if the key holds exactly its value at a revision it could have
 * produced. Watches survive reconnects, server restarts and cluster failover
 * with a `reset` and a fresh snapshot.
 *
 * @example
 * ```ts
 * import { NatsStore } from "@splitlease/splitlease/nats";
 * await using store = await NatsStore.connect({
 *   servers: ["ws://127.0.0.1:8080"],
 *   job: "backfill",
 * });
 * const r = await store.create("plan", "{}");
 * if (r.ok) await store.update("plan", '{"v":1}', r.revision);
 * ```
 */
export class NatsStore implements Store {
  #conn: Connection;
  #timeout: number;
  /** Share of the op budget kept for re-reading a maybe-landed write. */
  #reserve: number;
  #watches = new Set<NatsWatch>();
  /** Closed state, call checks, `seen`, outages and maybe-landed writes (the store kit's). */
  readonly #guard: WriteGuard;

  private constructor(conn: Connection) {
    this.#conn = conn;
    this.#guard = new WriteGuard({
      timeoutMs: conn.opts.opTimeoutMs,
      describe,
      // JetStream answered that the bucket's stream does not exist: deleted under us, not an outage.
      special: (op, cause) =>
        cause instanceof JetStreamApiError && cause.code === STREAM_NOT_FOUND
          ? new JobGoneError(op, this.#timeout, { cause, detail: `its bucket ${this.bucket} does not exist any more` })
          : undefined,
    });
    this.#timeout = this.#guard.timeoutMs;
    this.#reserve = this.#guard.reserve;
  }

  /**
   * Connects to NATS over WebSocket and opens the job's bucket, creating it
   * when absent. Throws `INVALID_CONFIG` for bad options (an unknown key
   * included), `STORE_AUTH_FAILED` at once when the server refuses the
   * credentials, `UNSUPPORTED_SERVER` for `replicas > 1` on nats-server older
   * than 2.9.21, and `StoreUnavailableError` when the servers cannot be
   * reached.
   *
   * @example
   * ```ts
   * import { NatsStore } from "@splitlease/splitlease/nats";
   * const store = await NatsStore.connect({ servers: "ws://127.0.0.1:8080", job: "j1", opTimeoutMs: 2000 });
   * await store.close();
   * ```
   */
  static async connect(options: NatsStoreOptions): Promise<NatsStore> {
    return new NatsStore(await Connection.open(options));
  }

  /** The job this store is bound to (its bucket is `splitlease_<job>`): a coordinator joining another job through it is refused. */
  get job(): string {
    return this.#conn.opts.job;
  }

  /** The bucket name (`splitlease_<job>`). */
  get bucket(): string {
    return this.#conn.opts.bucket;
  }

  /** The server this store is connected to now (`host:port`). */
  get server(): string {
    return this.#conn.nc.getServer();
  }

  async create(key: string, value: string): Promise<WriteResult> {
    this.#guard.checkWrite("create", key, value);
    const deadline = Date.now() + this.#timeout;
    const before = this.#guard.seen;
    if (!this.#conn.connected) await this.#ready("create", deadline);
    try {
      return this.#landed(await this.#sent(deadline, () => this.#conn.kv.put(key, value, { previousSeq: 0, timeout: this.#writeBudget(deadline) })));
    } catch (e) {
      if (!isConflict(e)) return this.#maybeLanded("create", key, value, before, deadline, e);
    }
    // The key exists, or its last operation was a delete: create over the marker.
    const entry = await this.#read("create", key, deadline);
    if (!entry || entry.operation === "PUT") return CONFLICT;
    const expected = entry.revision;
    try {
      return this.#landed(
        await this.#sent(deadline, () => this.#conn.kv.put(key, value, { previousSeq: expected, timeout: this.#writeBudget(deadline) })),
      );
    } catch (e) {
      if (isConflict(e)) return CONFLICT;
      return this.#maybeLanded("create", key, value, Math.max(before, expected), deadline, e);
    }
  }

  async update(key: string, value: string, revision: number): Promise<WriteResult> {
    this.#guard.checkWrite("update", key, value);
    this.#guard.checkRevision("Update", key, revision);
    const deadline = Date.now() + this.#timeout;
    const before = this.#guard.seen;
    if (!this.#conn.connected) await this.#ready("update", deadline);
    try {
      return this.#guard.landed(
        await this.#sent(deadline, () => this.#conn.kv.put(key, value, { previousSeq: revision, timeout: this.#writeBudget(deadline) })),
      );
    } catch (e) {
      if (isConflict(e)) return CONFLICT;
      return this.#maybeLanded("update", key, value, Math.max(before, revision), deadline, e);
    }
  }

  async delete(key: string, revision?: number): Promise<DeleteResult> {
    this.#guard.checkKey("delete", key);
    if (revision !== undefined) this.#guard.checkRevision("Delete", key, revision);
    const deadline = Date.now() + this.#timeout;
    await this.#ready("delete", deadline);
    // A guarded delete is one round trip. Known divergence from MemoryStore:
    // guarded at the revision of a delete *marker* (only seen in watch
    // `delete` events), NATS writes a second marker (bumping the revision);
    // the result is still `{ ok: true }` with the key absent.
    let guard = revision;
    while (true) {
      if (guard === undefined) {
        // Unguarded: delete whatever is there, without writing a marker over nothing.
        const entry = await this.#read("delete", key, deadline);
        if (!entry || entry.operation !== "PUT") return DELETED;
        guard = entry.revision;
      }
      try {
        const h = headers();
        h.set("KV-Operation", "DEL");
        h.set("Nats-Expected-Last-Subject-Sequence", String(guard));
        const ack = await this.#sent(deadline, () =>
          this.#conn.js.publish(this.#conn.prefix + key, Empty, {
            headers: h,
            timeout: this.#writeBudget(deadline),
          })
        );
        this.#guard.saw(ack.seq);
        return DELETED;
      } catch (e) {
        if (!isConflict(e)) {
          // Maybe landed: gone now means done; still there means unknown.
          return await this.#guard.deleteMaybeLanded("delete", e, async () => raw(await this.#read("delete", key, deadline, e)));
        }
      }
      // Conflict: also what NATS answers over a delete marker. Absent is success.
      const entry = await this.#read("delete", key, deadline);
      if (!entry || entry.operation !== "PUT") return DELETED;
      if (revision !== undefined) return DELETE_CONFLICT;
      guard = undefined; // unguarded delete lost a race with a write: try again
      if (Date.now() >= deadline) throw this.#guard.unavailable("delete");
    }
  }

  async get(key: string): Promise<StoreEntry | undefined> {
    this.#guard.checkKey("get", key);
    const deadline = Date.now() + this.#timeout;
    if (!this.#conn.connected) await this.#ready("get", deadline);
    const e = await this.#read("get", key, deadline);
    if (!e || e.operation !== "PUT") return undefined;
    return { key, value: e.string(), revision: e.revision };
  }

  async list(filter: KeyFilter): Promise<StoreEntry[]> {
    this.#guard.checkFilter("list", filter);
    const deadline = Date.now() + this.#timeout;
    await this.#ready("list", deadline);
    const latest = new Map<string, StoreEntry>();
    let finish!: () => void;
    let fail!: (e: unknown) => void;
    const done = new Promise<void>((resolve, reject) => {
      finish = resolve;
      fail = reject;
    });
    done.catch(() => {});
    let abandoned = false;
    let scan: Scan | undefined;
    // A deadline on progress, not on the whole listing: 100k keys stream for
    // longer than one op timeout, but each message must follow the last
    // within it (the first within what the connection wait left).
    let timer = setTimeout(() => fail(this.#guard.unavailable("list")), clampTimerMs(deadline - Date.now()));
    const progressed = () => {
      clearTimeout(timer);
      timer = setTimeout(() => fail(this.#guard.unavailable("list", undefined, "no progress")), clampTimerMs(this.#timeout));
    };
    // The end of the replay: the last revision under the filter once the
    // consumer exists (see `Scan.endAt`: pending counts lie on 2.9, where a
    // listing failed for want of progress 2 in 20 while its prefix was being
    // written, and on a loaded replicated stream, where one came back empty
    // right after writes). Only when that revision cannot be read (no
    // permission) does a message with nothing pending end it.
    let handled = 0;
    let endAt: number | undefined;
    let blind = false;
    let lastPending = Infinity;
    const started = startScan(this.#conn, filter, (m) => {
      progressed();
      if (m.value === undefined) latest.delete(m.key);
      else latest.set(m.key, { key: m.key, value: m.value, revision: m.revision });
      if (m.revision > handled) handled = m.revision;
      lastPending = m.pending;
      if (endAt !== undefined ? handled >= endAt : blind && m.pending === 0) finish();
    });
    started.then((s) => {
      if (abandoned) return s.stop();
      s.endAt.then((at) => {
        if (at !== undefined) {
          endAt = at;
          if (handled >= at) finish();
        } else {
          blind = true;
          if (s.pendingAtStart === 0 || lastPending === 0) finish();
        }
      });
    }, () => {});
    try {
      scan = await Promise.race([started, done.then(() => started)]);
      scan.closed.then(() => fail(this.#guard.unavailable("list", undefined, "consumer closed during listing")));
      await done;
    } catch (e) {
      if (e instanceof StoreUnavailableError) throw e;
      throw this.#guard.unavailable("list", e);
    } finally {
      abandoned = true;
      clearTimeout(timer);
      scan?.stop();
    }
    const out = [...latest.values()];
    out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    for (const e of out) this.#guard.saw(e.revision);
    return out;
  }

  watch(filter: KeyFilter): Watch {
    this.#guard.checkFilter("watch", filter);
    const w = new NatsWatch(this.#conn, filter, (x) => this.#watches.delete(x));
    this.#watches.add(w);
    return w;
  }

  async close(): Promise<void> {
    if (!this.#guard.close()) return;
    await Promise.all([...this.#watches].map((w) => w.stop()));
    await this.#conn.close();
  }

  /** Closes the store (for `await using`). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #landed(revision: number): WriteResult {
    return this.#guard.landed(revision);
  }

  /** Sends a write, again while nothing received it (see {@linkcode untilReceived}), keeping the re-read reserve. */
  #sent<T>(deadline: number, write: () => Promise<T>): Promise<T> {
    return untilReceived(deadline - this.#reserve, write);
  }

  /** Time left for a write, keeping a reserve to re-read it if it times out. */
  #writeBudget(deadline: number): number {
    return Math.max(1, deadline - Date.now() - this.#reserve);
  }

  /** Waits (within the deadline) for a connection: requests sent while disconnected are lost. */
  async #ready(op: string, deadline: number): Promise<void> {
    if (this.#conn.connected) return;
    if (!(await this.#conn.waitConnected(deadline - this.#reserve))) {
      this.#guard.checkOpen(op);
      throw this.#guard.unavailable(op, undefined, "not connected");
    }
  }

  /** Point read of the raw entry (markers included), bounded by `deadline`. */
  async #read(op: string, key: string, deadline: number, cause?: unknown): Promise<KvEntry | null> {
    const ms = deadline - Date.now();
    if (ms <= 0 || !this.#conn.connected) throw this.#guard.unavailable(op, cause);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(this.#guard.unavailable(op, cause)), clampTimerMs(ms));
    });
    const read = untilReceived(deadline, () => this.#conn.kv.get(key));
    read.catch(() => {});
    try {
      const e = await Promise.race([read, timeout]);
      if (e) this.#guard.saw(e.revision);
      return e;
    } catch (e) {
      if (e instanceof StoreUnavailableError) throw e;
      throw this.#guard.unavailable(op, e);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * A write failed without a verdict (timeout, disconnect): it may have
   * landed (the kit's rule, over a re-read of the key), unless nobody
   * received it ("no responders", still at the deadline).
   */
  async #maybeLanded(
    op: string,
    key: string,
    value: string,
    before: number,
    deadline: number,
    cause: unknown,
  ): Promise<WriteResult> {
    this.#guard.checkOpen(op);
    if (isNoResponders(cause)) throw this.#guard.unavailable(op, cause, "no stream answered (its leader is being elected?)");
    return await this.#guard.maybeLanded(op, value, before, cause, async () => raw(await this.#read(op, key, deadline, cause)));
  }
}

/** A KV entry as the kit reads a key: a delete or purge marker has no value. */
function raw(e: KvEntry | null): RawEntry | null {
  return e ? { value: e.operation === "PUT" ? e.string() : null, revision: e.revision } : null;
}
