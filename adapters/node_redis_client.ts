/**
 * The Redis store's driver: the {@linkcode RedisClient} of node-redis
 * (`nodeRedisClient`: a connection for commands, one for wake-up
 * subscriptions, a stuck connection recycled, a bounded close), the check of
 * a Redis URL and the server a message names. Apart from the entry
 * (redis.ts: the store and what the package exports) because it is the one
 * file that speaks node-redis.
 *
 * @module
 */
import { createClient, ErrorReply, TimeoutError, TimeoutReadError } from "@redis/client";
import { SplitleaseError, StoreUnavailableError } from "../src/errors.ts";
import type { Logger } from "../src/util/logger.ts";
import { redactUrl } from "../src/util/urls.ts";
import { REDIS_URLS, wrongStoreUrlMessage } from "../src/store/store_urls.ts";
import { invalidRedis } from "../src/redis/options.ts";
import { RedisCallError, type RedisClient, type RedisReply } from "../src/redis/redis_client.ts";


/**
 * A URL of the registry's Redis schemes (src/store/store_urls.ts).
 *
 * @example
 * ```ts
 * import { checkUrl } from "./node_redis_client.ts";
 * console.log(checkUrl(" redis://127.0.0.1:6379 ")); // "redis://127.0.0.1:6379"
 * ```
 */
export function checkUrl(url: unknown): string {
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

/**
 * `host:port` of a Redis URL, for messages.
 *
 * @example
 * ```ts
 * import { serverOf } from "./node_redis_client.ts";
 * console.log(serverOf("redis://app:secret@cache.internal")); // "cache.internal:6379"
 * ```
 */
export function serverOf(url: string): string {
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
