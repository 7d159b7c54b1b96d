/**
 * The Redis store: {@linkcode Store} over any driver that implements
 * {@linkcode RedisClient} (the package's `redis` entry wires node-redis).
 *
 * @module
 */
import { JobGoneError, SplitleaseError, StoreUnavailableError } from "../errors.ts";
import type { Logger } from "../util/logger.ts";
import type { DeleteResult, KeyFilter, Store, StoreEntry, Watch, WriteResult } from "../store/store.ts";
import { CONFLICT, DELETE_CONFLICT, DELETED } from "../store/write_checks.ts";
import { type RawEntry, WriteGuard } from "../store/write_guard.ts";
import { PAGE_ROWS } from "../store/polled_watch.ts";
import type { DurabilityMode } from "./durability.ts";
import { jobKeys, type ResolvedRedisOptions } from "./options.ts";
import { RedisCallError, type RedisClient, type RedisReply } from "./redis_client.ts";
import { DEL, PAGE, POINT, PUT } from "./scripts.ts";
import { pageOf, revOf, RedisWatch, type RedisWatchHost, SCAN_ROWS } from "./redis_watch.ts";

/**
 * What a {@linkcode RedisKvStore} is built from: a driver's client on a server
 * whose settings were judged and whose job was opened (see the `redis`
 * entry's `RedisStore.connect`).
 *
 * @example
 * ```ts ignore
 * const init: RedisStoreInit = { client, options, server: "127.0.0.1:6379", mode, logger: console.log };
 * ```
 */
export interface RedisStoreInit {
  /** The driver. */
  client: RedisClient;
  /** Options after validation. */
  options: ResolvedRedisOptions;
  /** The server, for messages (no credentials). */
  server: string;
  /** The durability mode decided at connect. */
  mode: DurabilityMode;
  /** Where connection losses are logged. */
  logger: Logger;
  /** Whether `close()` closes the client (default true; a catalog's stores share its client). */
  ownsClient?: boolean;
}

/** A hex SHA-1 of `text` (the id `EVALSHA` runs a cached script by). */
async function sha1(text: string): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-1", new TextEncoder().encode(text)));
  return [...d].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** A driver failure in one line. */
function describe(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * {@linkcode Store} on Redis: one hash of values, one sorted set of
 * revisions (delete markers included), a counter and a change-log stream
 * per job, under one hash tag. Every write is one server-side script that
 * checks the key's revision, takes the next revision from the job's
 * counter, writes the value and appends the change to the log, atomically;
 * on a primary with replicas it then waits for `waitReplicas` of them
 * (`WAIT`) before it reports the write landed. A write whose answer is lost
 * is resolved by reading the key again, never by writing again; one that
 * was never sent (its time ran out while the connection was down) is an
 * outage at once. Lost races are result values; every operation is bounded
 * by `opTimeoutMs` and fails with `StoreUnavailableError` past it.
 *
 * @example
 * ```ts
 * import { RedisStore } from "@splitlease/splitlease/redis";
 * await using store = await RedisStore.connect({ url: "redis://127.0.0.1:6379", job: "backfill" });
 * const r = await store.create("plan", "{}");
 * if (r.ok) await store.update("plan", '{"v":1}', r.revision);
 * ```
 */
export class RedisKvStore implements Store {
  /** The job this store is bound to. */
  readonly job: string;
  readonly #client: RedisClient;
  readonly #o: ResolvedRedisOptions;
  readonly #keys: ReturnType<typeof jobKeys>;
  /** kv, rev, head, log: the keys every script takes, in order. */
  readonly #scriptKeys: readonly string[];
  readonly #guard: WriteGuard;
  readonly #mode: DurabilityMode;
  readonly #server: string;
  readonly #ownsClient: boolean;
  readonly #sha = new Map<string, Promise<string>>();
  readonly #watches = new Map<string, Set<RedisWatch>>();
  readonly #host: RedisWatchHost;

  /** Builds the store on an opened job (the driver entry's `connect` calls this). */
  constructor(init: RedisStoreInit) {
    this.#client = init.client;
    this.#o = init.options;
    this.job = init.options.job;
    this.#keys = jobKeys(init.options.keyPrefix, init.options.job);
    this.#scriptKeys = [this.#keys.kv, this.#keys.rev, this.#keys.head, this.#keys.log];
    this.#mode = init.mode;
    this.#server = init.server;
    this.#ownsClient = init.ownsClient ?? true;
    this.#guard = new WriteGuard({
      timeoutMs: init.options.opTimeoutMs,
      describe,
      where: `Redis at ${init.server}`,
      special: (op, cause) =>
        cause instanceof JobGone ? new JobGoneError(op, this.#o.opTimeoutMs, { cause, detail: `the job ${this.job} does not exist any more on Redis at ${this.#server}` }) : undefined,
    });
    this.#host = {
      keys: this.#scriptKeys,
      job: this.job,
      timings: init.options,
      read: (op, script, keys, args) => this.#read(op, script, keys, args, Date.now() + this.#o.opTimeoutMs),
      listen: (w) => this.#listen(w),
      stopped: (w) => this.#unlisten(w),
      saw: (revision) => this.#guard.saw(revision),
    };
    // A lost subscription connection lost its messages: every watch reads now.
    init.client.onReconnect(() => {
      for (const set of this.#watches.values()) for (const w of set) w.wake();
    });
  }

  /**
   * The durability mode decided at connect: what an acknowledged write
   * survives on this server, and how many replicas each write waits for.
   */
  get durability(): string {
    return this.#mode.text;
  }

  /** The replicas each write waits for (`WAIT`) before it is reported landed. */
  get waitReplicas(): number {
    return this.#mode.waitReplicas;
  }

  /** The prefix of the job's keys (`<keyPrefix>{<job>}:`). */
  get keyPrefix(): string {
    return this.#o.keyPrefix;
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
    const deadline = Date.now() + this.#o.opTimeoutMs;
    let r: number;
    try {
      r = Number(await this.#eval(DEL, this.#scriptKeys, [key, revision === undefined ? "" : String(revision), String(this.#o.changeLogSize), this.#keys.wake], deadline - this.#guard.reserve - Date.now()));
    } catch (e) {
      if (!maybeRan(e)) throw this.#failed("delete", e);
      // Maybe landed: gone now means done; still there means unknown.
      const gone = await this.#guard.deleteMaybeLanded("delete", e, () => this.#raw("delete", key, deadline));
      await this.#replicated("delete", deadline, true);
      return gone;
    }
    if (r === -2) throw this.#guard.unavailable("delete", new JobGone());
    if (r === -1) return DELETE_CONFLICT;
    if (r > 0) {
      await this.#replicated("delete", deadline);
      this.#guard.saw(r);
    }
    return DELETED;
  }

  async get(key: string): Promise<StoreEntry | undefined> {
    this.#guard.checkKey("get", key);
    const e = await this.#raw("get", key, Date.now() + this.#o.opTimeoutMs);
    if (!e || e.value === null) return undefined;
    return { key, value: e.value, revision: e.revision };
  }

  /**
   * See `Store.list`. Read in pages of the live keys in revision order (each
   * bounded by the operation timeout, not the whole listing); a key changed
   * while paging reappears in a later page, so the result is the state at
   * the last page's revision.
   */
  async list(filter: KeyFilter): Promise<StoreEntry[]> {
    this.#guard.checkFilter("list", filter);
    if (filter !== "" && !filter.endsWith(".")) {
      const e = await this.get(filter);
      return e ? [e] : [];
    }
    const latest = new Map<string, StoreEntry>();
    let after = 0;
    while (true) {
      const reply = (await this.#read("list", PAGE, this.#scriptKeys, [String(after), String(PAGE_ROWS), filter, String(SCAN_ROWS), "live", ""], Date.now() + this.#o.opTimeoutMs)) as RedisReply[];
      const page = pageOf(reply, () => {
        throw this.#guard.unavailable("list", new JobGone());
      });
      this.#guard.saw(page.head);
      for (const c of page.changes) {
        after = c.revision;
        if (c.value === null) latest.delete(c.key);
        else latest.set(c.key, { key: c.key, value: c.value, revision: c.revision });
      }
      if (page.through !== undefined) after = Math.max(after, page.through);
      else if (page.changes.length < PAGE_ROWS) break;
    }
    const out = [...latest.values()];
    out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return out;
  }

  watch(filter: KeyFilter): Watch {
    this.#guard.checkFilter("watch", filter);
    return new RedisWatch(this.#host, filter);
  }

  async close(): Promise<void> {
    if (!this.#guard.close()) return;
    for (const set of [...this.#watches.values()]) for (const w of [...set]) await w.stop();
    if (this.#ownsClient) await this.#client.close();
  }

  /** Closes the store (for `await using`). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #put(op: string, key: string, value: string, expected: number | null): Promise<WriteResult> {
    const deadline = Date.now() + this.#o.opTimeoutMs;
    const before = Math.max(this.#guard.seen, expected ?? 0);
    let r: number;
    try {
      r = Number(await this.#eval(PUT, this.#scriptKeys, [key, value, expected === null ? "" : String(expected), String(this.#o.changeLogSize), this.#keys.wake], deadline - this.#guard.reserve - Date.now()));
    } catch (e) {
      if (!maybeRan(e)) throw this.#failed(op, e);
      const landed = await this.#guard.maybeLanded(op, value, before, e, () => this.#raw(op, key, deadline));
      await this.#replicated(op, deadline, true);
      return landed;
    }
    if (r === -2) throw this.#guard.unavailable(op, new JobGone());
    if (r === -1) return CONFLICT;
    await this.#replicated(op, deadline);
    return this.#guard.landed(r);
  }

  /**
   * On a primary with replicas: waits until `waitReplicas` of them have this
   * connection's writes (`WAIT`), within the operation's deadline; fewer is
   * an outage (the write is on the primary, and may be lost in a failover).
   * `resync` first writes the job's sync counter: after a reconnect the
   * connection's own replication offset is 0, and only a write of its own
   * makes `WAIT` cover what an earlier connection wrote.
   */
  async #replicated(op: string, deadline: number, resync = false): Promise<void> {
    const n = this.#mode.waitReplicas;
    if (n === 0) return;
    try {
      if (resync) await this.#client.send(["INCR", this.#keys.sync], Math.max(1, deadline - Date.now()));
      const ms = Math.max(1, deadline - Date.now());
      const acked = Number(await this.#client.send(["WAIT", String(n), String(ms)], ms + 1000));
      if (acked >= n) return;
      throw this.#guard.unavailable(op, undefined, `the write reached ${acked} of the ${n} replica${n === 1 ? "" : "s"} it waits for within ${ms} ms: it may be lost in a failover`);
    } catch (e) {
      if (e instanceof StoreUnavailableError) throw e;
      throw this.#failed(op, e);
    }
  }

  /** A failure that did not run the command (or that names the credentials): the error the caller gets. */
  #failed(op: string, e: unknown): Error {
    if (e instanceof RedisCallError && e.kind === "auth") {
      return new SplitleaseError("STORE_AUTH_FAILED", `Store operation "${op}" failed: Redis at ${this.#server} refused it (${e.message})`, { cause: e });
    }
    return this.#guard.unavailable(op, e);
  }

  /** The key's raw state (a delete marker has a null value), or null when it has none; bounded by `deadline`. */
  async #raw(op: string, key: string, deadline: number): Promise<RawEntry | null> {
    const r = (await this.#read(op, POINT, this.#scriptKeys.slice(0, 3), [key, ""], deadline)) as RedisReply[];
    if (!Array.isArray(r) || r[0] === null) throw this.#guard.unavailable(op, new JobGone());
    this.#guard.saw(revOf(r[0]));
    if (r[2] === null) return null;
    const revision = revOf(r[2]);
    return { value: r[3] === null ? null : String(r[3]), revision };
  }

  /**
   * A read script, bounded by `deadline`: sent again while its answer is
   * lost (a read may run twice), failed with `StoreUnavailableError` past
   * the deadline.
   */
  async #read(op: string, script: string, keys: readonly string[], args: readonly string[], deadline: number): Promise<RedisReply> {
    this.#guard.checkOpen(op);
    let backoff = 25;
    for (;;) {
      try {
        return await this.#eval(script, keys, args, deadline - Date.now());
      } catch (e) {
        if (e instanceof RedisCallError && e.kind === "auth") throw this.#failed(op, e);
        if (this.#guard.closed || Date.now() + backoff >= deadline) throw this.#guard.unavailable(op, e);
        await new Promise((r) => setTimeout(r, backoff));
        backoff = Math.min(backoff * 2, 250);
      }
    }
  }

  /** Runs `script` by its SHA-1 (`EVALSHA`), sending the text only when the server does not have it (`NOSCRIPT`: it did not run). */
  async #eval(script: string, keys: readonly string[], args: readonly string[], ms: number): Promise<RedisReply> {
    if (ms <= 0) throw new RedisCallError("unsent", "no time was left to send it");
    let sha = this.#sha.get(script);
    if (!sha) this.#sha.set(script, (sha = sha1(script)));
    const tail = [String(keys.length), ...keys, ...args];
    const started = Date.now();
    try {
      return await this.#client.send(["EVALSHA", await sha, ...tail], ms);
    } catch (e) {
      if (!(e instanceof RedisCallError && e.kind === "refused" && e.message.startsWith("NOSCRIPT"))) throw e;
    }
    return await this.#client.send(["EVAL", script, ...tail], Math.max(1, ms - (Date.now() - started)));
  }

  #channel(filter: string): string {
    return this.#keys.wake + filter;
  }

  async #listen(w: RedisWatch): Promise<void> {
    const channel = this.#channel(w.filter);
    let set = this.#watches.get(channel);
    if (!set) this.#watches.set(channel, (set = new Set()));
    set.add(w);
    if (set.size > 1) return;
    try {
      await this.#client.subscribe(channel, () => {
        for (const x of this.#watches.get(channel) ?? []) x.wake();
      });
    } catch {
      // Wake-ups are never the record: the watch's poll bounds the delay.
    }
  }

  #unlisten(w: RedisWatch): void {
    const channel = this.#channel(w.filter);
    const set = this.#watches.get(channel);
    if (!set?.delete(w)) return;
    if (set.size > 0) return;
    this.#watches.delete(channel);
    if (!this.#guard.closed || !this.#ownsClient) this.#client.unsubscribe(channel).catch(() => {});
  }
}

/** The job's counter is gone: a script answered -2 (the job was deleted under the store). */
class JobGone extends Error {
  constructor() {
    super("the job does not exist");
  }
}

/** Whether a failed command may have run (its answer was lost), so a write must be re-read. */
function maybeRan(e: unknown): boolean {
  return !(e instanceof RedisCallError) || e.kind === "unanswered";
}
