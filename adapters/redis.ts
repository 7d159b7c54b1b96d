/**
 * The Redis backend of splitlease: coordinate through the Redis you already
 * run (a BullMQ shop's, for one). {@linkcode RedisStore} implements the
 * store with one server-side script per write (compare-and-swap on the
 * key's revision, the job's next revision, the value and a change-log
 * entry, atomically) and watches that read the change log by revision, so
 * they resume across disconnects and never depend on keyspace
 * notifications. At connect it reads the server's persistence and
 * replication and refuses a server under which an acknowledged write can
 * be lost on a restart unless the weaker mode is accepted by name
 * (`durability`); on a primary with replicas each write waits for them
 * (`WAIT`).
 *
 * The driver is node-redis (`@redis/client`): no dependencies of its own,
 * the same code on Node, Bun and Deno, maintained by Redis, and a command
 * timeout that tells a command never sent (it cannot have run) from one
 * sent and unanswered (it may have); commands in flight on a lost
 * connection fail and are never sent again.
 *
 * @example
 * ```ts
 * import { RedisStore } from "@splitlease/splitlease/redis";
 * await using store = await RedisStore.connect({ url: "redis://127.0.0.1:6379", job: "backfill" });
 * console.log(store.durability, await store.list("split."));
 * ```
 *
 * @module
 */
import { createClient, ErrorReply, TimeoutError, TimeoutReadError } from "@redis/client";
import { SplitleaseError, StoreUnavailableError } from "../src/errors.ts";
import { jsonLogger } from "../src/util/logger.ts";
import type { Logger } from "../src/util/logger.ts";
import { durationIssue } from "../src/util/timers.ts";
import { redactUrl } from "../src/util/urls.ts";
import { REDIS_URLS, wrongStoreUrlMessage } from "../src/store/store_urls.ts";
import { invalidRedis, type RedisStoreCoreOptions, resolveRedisOptions } from "../src/redis/options.ts";
import { RedisCallError, type RedisClient, type RedisReply } from "../src/redis/redis_client.ts";
import { RedisKvStore } from "../src/redis/redis_kv_store.ts";
import { RedisJobCatalogCore } from "../src/redis/redis_catalog.ts";
import { openRedisJob } from "../src/redis/setup.ts";

export { RedisKvStore, type RedisStoreInit } from "../src/redis/redis_kv_store.ts";
export { RedisJobCatalogCore, type RedisJobCatalogInit } from "../src/redis/redis_catalog.ts";
export { RedisCallError, type RedisClient, type RedisFailure, type RedisReply } from "../src/redis/redis_client.ts";
export type { RedisDurability, RedisStoreCoreOptions, ResolvedRedisOptions } from "../src/redis/options.ts";
export type { DurabilityMode } from "../src/redis/durability.ts";
export type { CatalogEntry, JobCatalog, JobListing } from "../src/store/job_catalog.ts";
export type { Logger, LogLevel } from "../src/util/logger.ts";
export type { DeleteResult, KeyFilter, Store, StoreEntry, TransactionWork, Watch, WatchEvent, WriteResult } from "../src/store/store.ts";

/**
 * Options of {@linkcode RedisStore.connect}: the server's URL and the
 * store's options.
 *
 * @example
 * ```ts
 * import type { RedisStoreOptions } from "@splitlease/splitlease/redis";
 * const options: RedisStoreOptions = { url: "rediss://app:secret@cache.internal:6380", job: "backfill", durability: "everysec" };
 * ```
 */
export interface RedisStoreOptions extends RedisStoreCoreOptions {
  /** `redis://` or `rediss://` (TLS) URL: `redis[s]://[user:password@]host[:port][/db]`. */
  url: string;
  /** How long `connect` keeps trying to reach the server (default `opTimeoutMs`). */
  connectWaitMs?: number;
  /** The connection's name in `CLIENT LIST` (default `splitlease:<job>`). */
  clientName?: string;
  /** TLS options for `rediss://` (a CA of your own: `{ ca }`), passed to Node's `tls.connect`. */
  tls?: Record<string, unknown>;
}

const DRIVER_KEYS = ["url", "connectWaitMs", "clientName", "tls"];

/** A URL of the registry's Redis schemes (src/store/store_urls.ts). */
function checkUrl(url: unknown): string {
  if (typeof url !== "string" || !REDIS_URLS.schemes.some((s) => url.trim().toLowerCase().startsWith(`${s.scheme}://`))) {
    throw invalidRedis(wrongStoreUrlMessage(url, REDIS_URLS, "url"));
  }
  try {
    new URL(url.trim());
  } catch {
    throw invalidRedis(`url ${JSON.stringify(redactUrl(url))} is not a URL: give redis://[user:password@]host[:port][/db]`);
  }
  return url.trim();
}

/** `host:port` of a Redis URL, for messages. */
function serverOf(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${u.port || "6379"}`;
}

const AUTH = /^(NOAUTH|WRONGPASS|NOPERM)\b/;

/** `STORE_AUTH_FAILED` for a refusal at connect: the credentials, or a command the user may not run. */
function authRefusal(server: string, e: Error): SplitleaseError {
  const fix = e.message.startsWith("NOPERM")
    ? "grant the user the store's commands (docs/OPERATIONS.md, \"Sharing the Redis of a BullMQ fleet\")"
    : "check the URL's user and password";
  return new SplitleaseError("STORE_AUTH_FAILED", `RedisStore: Redis at ${server} refused the connection (${e.message}): ${fix}`, { cause: e });
}

/** What a node-redis failure lets the store conclude (see `RedisFailure`). */
function callError(e: unknown): RedisCallError {
  if (e instanceof RedisCallError) return e;
  const message = e instanceof Error ? e.message : String(e);
  if (e instanceof ErrorReply) return new RedisCallError(AUTH.test(message) ? "auth" : "refused", message, { cause: e });
  // TimeoutError: its time ran out before it was sent; the closed and offline clients refuse before sending.
  const name = e instanceof Error ? e.constructor.name : "";
  if (e instanceof TimeoutError || name === "ClientClosedError" || name === "ClientOfflineError") {
    return new RedisCallError("unsent", message, { cause: e });
  }
  return new RedisCallError("unanswered", message, { cause: e });
}

/** How long nothing must have answered before a timed-out command recycles the connection, and how often it may (ms). */
const RECYCLE_MS = 2000;
/** How long a graceful close may wait for pending replies before the connection is dropped (ms). */
const CLOSE_WAIT_MS = 1000;

/**
 * Options of {@linkcode nodeRedisClient}.
 *
 * @example
 * ```ts
 * import type { NodeRedisClientOptions } from "@splitlease/splitlease/redis";
 * const options: NodeRedisClientOptions = { url: "redis://127.0.0.1:6379", connectWaitMs: 5000, clientName: "tool" };
 * ```
 */
export interface NodeRedisClientOptions {
  /** `redis://` or `rediss://` URL. */
  url: string;
  /** The connection's name in `CLIENT LIST`. */
  clientName?: string;
  /** TLS options for `rediss://`. */
  tls?: Record<string, unknown>;
  /** How long to wait for the first connection (ms). */
  connectWaitMs: number;
  /** Where connection losses are logged. */
  logger?: Logger;
}

/**
 * A {@linkcode RedisClient} on node-redis: one connection for commands (RESP2;
 * a command waits while the connection is down and is sent once it is back,
 * unless its time runs out first), and one for wake-up subscriptions,
 * opened on first use. Both reconnect for ever (backoff to 1 s).
 *
 * @example
 * ```ts
 * import { nodeRedisClient } from "@splitlease/splitlease/redis";
 * const client = await nodeRedisClient({ url: "redis://127.0.0.1:6379", connectWaitMs: 2000 });
 * console.log(await client.send(["PING"], 1000)); // "PONG"
 * await client.close();
 * ```
 */
export async function nodeRedisClient(o: NodeRedisClientOptions): Promise<RedisClient> {
  const url = checkUrl(o.url);
  const server = serverOf(url);
  const logger = o.logger ?? (() => {});
  const secure = url.toLowerCase().startsWith("rediss://");
  const options = {
    url,
    RESP: 2 as const,
    ...(o.clientName ? { name: o.clientName } : {}),
    socket: {
      connectTimeout: Math.max(100, Math.min(o.connectWaitMs, 10_000)),
      reconnectStrategy: (retries: number) => Math.min(50 * 2 ** retries, 1000),
      ...(secure ? { tls: true as const, ...(o.tls ?? {}) } : {}),
    },
  };
  const cmd = createClient(options);
  let sub: ReturnType<typeof createClient> | undefined;
  let subReady: Promise<void> | undefined;
  const reconnectListeners: (() => void)[] = [];
  let closed = false;
  let lost = false;
  const onError = (e: unknown) => {
    if (closed) return;
    if (!lost) logger("warn", "Redis connection lost", { server, error: e instanceof Error ? e.message : String(e) });
    lost = true;
  };
  cmd.on("error", onError);
  // A connection that takes commands but never answers (a half-open TCP
  // connection, one accepted by something in between that never forwards,
  // a handshake never answered) is never noticed by node-redis: commands
  // time out one by one for ever. So a command that timed out when nothing
  // has answered for a while recycles the connection (the queue is failed,
  // unsent or unanswered as each command was; a fresh connection is made).
  // At most once per `RECYCLE_MS`, so a server that is down is not redialled
  // faster than the reconnect strategy would.
  let lastAnswer = Date.now();
  let recycledAt = 0;
  const recycle = (why: string) => {
    const now = Date.now();
    if (closed || now - lastAnswer < RECYCLE_MS || now - recycledAt < RECYCLE_MS) return;
    recycledAt = now;
    if (!lost) logger("warn", "Redis connection unresponsive: reconnecting", { server, error: why, silentMs: now - lastAnswer });
    lost = true;
    try {
      cmd.destroy();
    } catch { /* already torn down */ }
    // Resolves once ready (the reconnect strategy retries for ever); a later recycle or close() ends it.
    cmd.connect().catch(() => {});
  };
  cmd.on("ready", () => {
    if (!lost) return;
    lost = false;
    logger("info", "Redis connection re-established", { server });
    for (const fn of reconnectListeners) fn();
  });
  // The first connection: at most connectWaitMs; refused credentials at once.
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      cmd.destroy();
      reject(new StoreUnavailableError("connect", o.connectWaitMs, { detail: `Redis at ${server} did not answer within ${o.connectWaitMs} ms` }));
    }, o.connectWaitMs);
    const early = (e: unknown) => {
      if (e instanceof ErrorReply && AUTH.test(e.message)) {
        clearTimeout(timer);
        cmd.destroy();
        reject(authRefusal(server, e));
      }
    };
    cmd.on("error", early);
    cmd.connect().then(() => {
      clearTimeout(timer);
      cmd.off("error", early);
      lost = false;
      resolve();
    }, (e) => {
      clearTimeout(timer);
      reject(e instanceof ErrorReply && AUTH.test(e.message)
        ? authRefusal(server, e)
        : new StoreUnavailableError("connect", o.connectWaitMs, { cause: e, detail: `${e instanceof Error ? e.message : String(e)}; Redis at ${server}` }));
    });
  });

  const subscriber = (): Promise<void> => {
    if (subReady) return subReady;
    sub = cmd.duplicate();
    let subLost = false;
    sub.on("error", () => (subLost = true));
    sub.on("ready", () => {
      if (!subLost) return;
      subLost = false;
      for (const fn of reconnectListeners) fn();
    });
    subReady = sub.connect().then(() => {});
    return subReady;
  };

  return {
    get connected() {
      return cmd.isReady;
    },
    async send(args: readonly string[], timeoutMs: number): Promise<RedisReply> {
      if (closed) throw new RedisCallError("unsent", "the client is closed");
      try {
        const reply = (await cmd.withCommandOptions({ timeout: Math.max(1, Math.floor(timeoutMs)), rejectInFlight: true }).sendCommand([...args])) as RedisReply;
        lastAnswer = Date.now();
        return reply;
      } catch (e) {
        if (e instanceof ErrorReply) lastAnswer = Date.now();
        else if (e instanceof TimeoutError || e instanceof TimeoutReadError) recycle(e.message);
        throw callError(e);
      }
    },
    async subscribe(channel: string, onMessage: () => void): Promise<void> {
      await subscriber();
      await sub!.subscribe(channel, onMessage);
    },
    async unsubscribe(channel: string): Promise<void> {
      if (!sub) return;
      await sub.unsubscribe(channel);
    },
    onReconnect(fn: () => void): void {
      reconnectListeners.push(fn);
    },
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      // Gracefully (pending replies drained), but bounded: a connection that
      // never answers would hold a graceful close for ever.
      await Promise.all([cmd, sub].map(async (c) => {
        if (!c) return;
        let timer: ReturnType<typeof setTimeout> | undefined;
        try {
          if (!c.isOpen) return void c.destroy();
          const late = new Promise<"late">((r) => (timer = setTimeout(() => r("late"), CLOSE_WAIT_MS)));
          if ((await Promise.race([c.close().then(() => "closed" as const), late])) === "late") c.destroy();
        } catch {
          c.destroy();
        } finally {
          clearTimeout(timer);
        }
      }));
    },
  };
}

/**
 * {@linkcode RedisKvStore} through node-redis: the store of a job on a Redis
 * server. See docs/OPERATIONS.md, "Redis as the store", for the key
 * layout, the durability modes and replicas.
 *
 * @example
 * ```ts
 * import { RedisStore } from "@splitlease/splitlease/redis";
 * import { MemoryStore } from "@splitlease/splitlease";
 * const url = Deno.env.get("REDIS_URL");
 * const store = url ? await RedisStore.connect({ url, job: "backfill" }) : new MemoryStore();
 * await store.close();
 * ```
 */
export class RedisStore extends RedisKvStore {
  /**
   * Connects, judges the server's persistence and replication against
   * `durability` and opens (or creates) the job. Throws `INVALID_CONFIG`
   * for bad options (an unknown key included), a server weaker than
   * `durability` (the message names its settings, what can be lost, and the
   * fix), a replica, or a missing job with `createJob: false`;
   * `UNSUPPORTED_SERVER` below Redis 5; `STORE_AUTH_FAILED` at once when the
   * server refuses the credentials; `StoreUnavailableError` when it cannot
   * be reached within `connectWaitMs`. Logs the durability mode.
   *
   * @example
   * ```ts
   * import { RedisStore } from "@splitlease/splitlease/redis";
   * const store = await RedisStore.connect({ url: "redis://127.0.0.1:6379", job: "j1", opTimeoutMs: 2000 });
   * console.log(store.durability);
   * await store.close();
   * ```
   */
  static async connect(options: RedisStoreOptions): Promise<RedisStore> {
    const opts = resolveRedisOptions(options, DRIVER_KEYS);
    const url = checkUrl(options.url);
    const wait = options.connectWaitMs ?? opts.opTimeoutMs;
    const issue = durationIssue("connectWaitMs", wait, 1);
    if (issue) throw invalidRedis(issue);
    const logger = options.logger ?? jsonLogger();
    const server = serverOf(url);
    const client = await nodeRedisClient({
      url,
      clientName: options.clientName ?? `splitlease:${opts.job}`,
      ...(options.tls ? { tls: options.tls } : {}),
      connectWaitMs: wait,
      logger,
    });
    try {
      const mode = await openRedisJob(client, opts, server, logger);
      return new RedisStore({ client, options: opts, server, mode, logger });
    } catch (e) {
      await client.close();
      throw e;
    }
  }
}

/**
 * Options of {@linkcode RedisJobCatalog.connect}.
 *
 * @example
 * ```ts
 * import type { RedisJobCatalogOptions } from "@splitlease/splitlease/redis";
 * const options: RedisJobCatalogOptions = { url: "redis://ops@cache.internal:6379", opTimeoutMs: 3000 };
 * ```
 */
export interface RedisJobCatalogOptions {
  /** `redis://` or `rediss://` URL. */
  url: string;
  /** The jobs' key prefix (default `splitlease:`). */
  keyPrefix?: string;
  /** Bound of each command, and of reaching the server (default 5000). */
  opTimeoutMs?: number;
  /** The connection's name (default `splitlease:catalog`). */
  clientName?: string;
  /** TLS options for `rediss://`. */
  tls?: Record<string, unknown>;
}

/**
 * The jobs of a Redis server under one key prefix (`JobCatalog`, as
 * `splitlease jobs` and `splitlease delete` use it): each job's records
 * and the memory its keys take, and the removal of a job's keys.
 *
 * @example
 * ```ts
 * import { RedisJobCatalog } from "@splitlease/splitlease/redis";
 * import { listJobs } from "@splitlease/splitlease/admin";
 * await using catalog = await RedisJobCatalog.connect({ url: "redis://127.0.0.1:6379" });
 * for (const j of await listJobs(catalog)) console.log(j.job, j.state);
 * ```
 */
export class RedisJobCatalog extends RedisJobCatalogCore {
  /**
   * Opens a connection (`STORE_AUTH_FAILED` when the server refuses the
   * credentials, `StoreUnavailableError` when it cannot be reached,
   * `INVALID_CONFIG` for bad options).
   *
   * @example
   * ```ts
   * import { RedisJobCatalog } from "@splitlease/splitlease/redis";
   * const catalog = await RedisJobCatalog.connect({ url: "redis://127.0.0.1:6379" });
   * console.log((await catalog.list()).map((j) => j.job));
   * await catalog.close();
   * ```
   */
  static async connect(options: RedisJobCatalogOptions): Promise<RedisJobCatalog> {
    const { url, keyPrefix, opTimeoutMs, clientName, tls, ...rest } = options;
    if (Object.keys(rest).length > 0) throw invalidRedis(`unknown option ${Object.keys(rest).join(", ")} of RedisJobCatalog.connect`);
    const o = resolveRedisOptions({ job: "catalog", ...(keyPrefix === undefined ? {} : { keyPrefix }), ...(opTimeoutMs === undefined ? {} : { opTimeoutMs }) });
    const u = checkUrl(url);
    const client = await nodeRedisClient({ url: u, clientName: clientName ?? "splitlease:catalog", ...(tls ? { tls } : {}), connectWaitMs: o.opTimeoutMs });
    return new RedisJobCatalog({ client, keyPrefix: o.keyPrefix, opTimeoutMs: o.opTimeoutMs, server: serverOf(u) });
  }
}
