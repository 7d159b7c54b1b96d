/**
 * The NATS connection of a store: connects over WebSocket, opens (or creates)
 * the job's bucket, tracks connectivity from status events (deduping the
 * per-attempt `reconnect` events of the WebSocket transport), and maps
 * client errors to splitlease errors.
 *
 * @module
 */
import {
  AuthorizationError,
  type Authenticator,
  type ConnectionOptions,
  credsAuthenticator,
  type NatsConnection,
  nkeyAuthenticator,
  UserAuthenticationExpiredError,
  wsconnect,
} from "@nats-io/nats-core";
import { jetstream, JetStreamApiError, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { type KV, Kvm } from "@nats-io/kv";
import { SplitleaseError, StoreUnavailableError } from "../errors.ts";
import { MAX_VALUE_BYTES } from "../store/store.ts";
import {
  checkServerVersion,
  type NatsStoreOptions,
  redactUrl,
  resolveOptions,
  type ResolvedOptions,
} from "./options.ts";
import { clampTimerMs } from "../util/timers.ts";
import { promptCloseFactory } from "./socket.ts";
import { jsonLogger } from "../runtime/logger.ts";
import type { Logger } from "../coordinator/types.ts";

/**
 * How often a connection's watchdog checks one of its watches' consumers
 * (round robin: with n watches, each is checked every n × this).
 */
export const WATCHDOG_INTERVAL_MS = 2000;

/** JetStream API codes of a failed "expected last subject sequence" check. */
const WRONG_LAST_SEQUENCE = 10071;
const WRONG_LAST_SEQUENCE_UNKNOWN = 10164;
const STREAM_NAME_IN_USE = 10058;
/** A stream with the bucket's subjects exists already: another process created the bucket at the same moment. */
const STREAM_SUBJECT_OVERLAP = 10065;
const STREAM_NOT_FOUND = 10059;

/** Whether `e` is a lost compare-and-swap (matched by API code, never text). */
export function isConflict(e: unknown): boolean {
  if (!(e instanceof JetStreamApiError)) return false;
  const code = e.code;
  return code === WRONG_LAST_SEQUENCE || code === WRONG_LAST_SEQUENCE_UNKNOWN;
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, clampTimerMs(ms)));
}

const encoder = new TextEncoder();

/** A live connection to one job's bucket. */
export class Connection {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly kv: KV;
  readonly opts: ResolvedOptions;
  /** Stream name of the bucket. */
  readonly stream: string;
  /** Subject prefix of every key (`$KV.<bucket>.`). */
  readonly prefix: string;
  #connected = true;
  #closing = false;
  #waiters: (() => void)[] = [];
  #reconnectListeners = new Set<(reason: string) => void>();
  /** Checks of the watchdog, run one per tick in turn (one request per tick per connection). */
  #guards: (() => Promise<void>)[] = [];
  #guardAt = 0;
  #guardTimer: ReturnType<typeof setInterval> | undefined;

  private constructor(nc: NatsConnection, js: JetStreamClient, jsm: JetStreamManager, kv: KV, opts: ResolvedOptions) {
    this.nc = nc;
    this.js = js;
    this.jsm = jsm;
    this.kv = kv;
    this.opts = opts;
    this.stream = `KV_${opts.bucket}`;
    this.prefix = `$KV.${opts.bucket}.`;
    this.#monitor();
  }

  /** Connects, checks the server version and opens or creates the bucket. */
  static async open(options: NatsStoreOptions): Promise<Connection> {
    const opts = resolveOptions(options);
    // Without one the NATS client waits on a socket that never opens: say so at once.
    if (!options.wsFactory && typeof WebSocket !== "function") {
      throw new SplitleaseError(
        "INVALID_CONFIG",
        "NatsStore: this runtime has no global WebSocket (Node.js before 22?): use Node.js 22 or later, Deno or Bun, or pass `wsFactory`",
      );
    }
    const co: ConnectionOptions & { wsFactory?: unknown } = {
      servers: opts.servers,
      name: options.name ?? `splitlease:${opts.job}`,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      reconnectJitter: 250,
      timeout: Math.max(2000, opts.opTimeoutMs),
      pingInterval: opts.pingIntervalMs,
      maxPingOut: 2,
      noRandomize: options.noRandomize === true,
      // No stack capture per request: our errors carry their own context, and
      // the capture cost ~9% of a busy worker's CPU (measured by the peers bench).
      noAsyncTraces: true,
      wsFactory: promptCloseFactory(options.wsFactory),
      inboxPrefix: opts.inboxPrefix,
    };
    const auth = authenticator(options);
    if (auth) co.authenticator = auth;
    const url = opts.urlAuth;
    const token = options.token ?? (url && "token" in url ? url.token : undefined);
    const user = options.user ?? (url && "user" in url ? url.user : undefined);
    const pass = options.pass ?? (url && "pass" in url ? url.pass : undefined);
    if (token !== undefined) co.token = token;
    if (user !== undefined) {
      co.user = user;
      co.pass = pass;
    }
    let nc: NatsConnection;
    try {
      nc = await connectWithin(co, opts, options.logger ?? jsonLogger());
    } catch (e) {
      // A refused login is not an outage: retrying cannot help, so say so at once.
      if (e instanceof AuthorizationError || e instanceof UserAuthenticationExpiredError) {
        const used = token !== undefined
          ? "a token"
          : user !== undefined
          ? `user ${JSON.stringify(user)} and a password`
          : options.nkey !== undefined
          ? "an nkey"
          : options.creds !== undefined
          ? "a creds file"
          : "no credentials";
        throw new SplitleaseError(
          "STORE_AUTH_FAILED",
          `NatsStore: the NATS server at ${opts.servers.map(redactUrl).join(", ")} refused the login with ${used} ` +
            `(${describe(e)}); check the credentials`,
          { cause: e },
        );
      }
      if (e instanceof StoreUnavailableError) throw e;
      throw new StoreUnavailableError("connect", co.timeout!, { cause: e, detail: describe(e) });
    }
    try {
      checkServerVersion(nc.info?.version, opts.replicas);
      const js = jetstream(nc, { timeout: opts.opTimeoutMs });
      const jsm = await js.jetstreamManager();
      if (!opts.createBucket) await requireBucket(jsm, opts);
      const kv = await openBucket(js, opts);
      if (opts.replicas > 1) await awaitStreamLeader(jsm, opts);
      return new Connection(nc, js, jsm, kv, opts);
    } catch (e) {
      await nc.close().catch(() => {});
      if (e instanceof SplitleaseError) throw e;
      // Logged in but not allowed this job's subjects: no retry fixes that either.
      const denied = permissionViolation(e);
      if (denied) {
        throw new SplitleaseError(
          "STORE_AUTH_FAILED",
          `NatsStore: the NATS server at ${opts.servers.map(redactUrl).join(", ")} refused ` +
            `${user !== undefined ? `user ${JSON.stringify(user)}` : "this connection"} the subjects of job ${opts.job} ` +
            `(bucket ${opts.bucket}, inbox ${opts.inboxPrefix}): ${denied}; grant the user its job's permissions`,
          { cause: e },
        );
      }
      throw new StoreUnavailableError("connect", opts.opTimeoutMs, {
        cause: e,
        detail: `opening bucket ${opts.bucket}: ${describe(e)}`,
      });
    }
  }

  /** Whether the client currently holds a server connection. */
  get connected(): boolean {
    return this.#connected && !this.nc.isClosed();
  }

  /** Whether `close()` was called. */
  get closing(): boolean {
    return this.#closing;
  }

  /** Resolves once connected, or `false` at `deadline` (epoch ms). */
  waitConnected(deadline: number): Promise<boolean> {
    if (this.connected) return Promise.resolve(true);
    if (this.#closing) return Promise.resolve(false);
    const ms = clampTimerMs(deadline - Date.now());
    if (ms <= 0) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        resolve(this.connected);
      };
      const t = setTimeout(() => {
        const i = this.#waiters.indexOf(done);
        if (i >= 0) this.#waiters.splice(i, 1);
        resolve(false);
      }, ms);
      this.#waiters.push(done);
    });
  }

  /**
   * Adds a check to this connection's one watchdog: every
   * `WATCHDOG_INTERVAL_MS` the next check in turn runs. Returns the remover.
   */
  guard(check: () => Promise<void>): () => void {
    this.#guards.push(check);
    this.#guardTimer ??= setInterval(() => {
      if (this.#guards.length === 0) return;
      const next = this.#guards[this.#guardAt++ % this.#guards.length];
      void next().catch(() => {});
    }, WATCHDOG_INTERVAL_MS);
    return () => {
      const i = this.#guards.indexOf(check);
      if (i >= 0) this.#guards.splice(i, 1);
      if (this.#guards.length === 0 && this.#guardTimer !== undefined) {
        clearInterval(this.#guardTimer);
        this.#guardTimer = undefined;
      }
    };
  }

  /** Calls `fn` once per real reconnect (the transport's repeats are deduped). */
  onReconnect(fn: (reason: string) => void): () => void {
    this.#reconnectListeners.add(fn);
    return () => this.#reconnectListeners.delete(fn);
  }

  async #monitor(): Promise<void> {
    try {
      for await (const s of this.nc.status()) {
        if (s.type === "disconnect" || s.type === "staleConnection") {
          this.#connected = false;
        } else if (s.type === "reconnect") {
          // The WebSocket transport reports one `reconnect` per attempt:
          // only a transition from disconnected counts, once confirmed.
          if (this.#connected) continue;
          this.#connected = true;
          for (const w of this.#waiters.splice(0)) w();
          const server = this.nc.getServer();
          for (const fn of this.#reconnectListeners) fn(`reconnected to ${server}`);
        }
      }
    } catch { /* connection closed */ }
    this.#connected = false;
    for (const w of this.#waiters.splice(0)) w();
  }

  /** Closes the connection. */
  async close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    this.#reconnectListeners.clear();
    if (this.#guardTimer !== undefined) clearInterval(this.#guardTimer);
    this.#guardTimer = undefined;
    this.#guards = [];
    await this.nc.close().catch(() => {});
  }
}

/** First and longest pause between two connection attempts of `connectWithin`. */
const CONNECT_BACKOFF_MS = 250;
const CONNECT_BACKOFF_MAX_MS = 5000;
/** How long a connection attempt may outlive its own timeout before it is given up as hung. */
const ATTEMPT_GRACE_MS = 1000;

/**
 * Connects to one of `opts.servers`, trying them all again after a failed
 * attempt until `opts.connectWaitMs` has passed (for ever with Infinity),
 * and logging each failure. Each attempt is bounded by the client's own
 * connection timeout (cut to the time left) and, in case the client itself
 * never settles, by a timer of ours. A refused login is thrown at once.
 * Throws `STORE_UNAVAILABLE` naming the URLs, the attempts and the time waited.
 */
async function connectWithin(co: ConnectionOptions, opts: ResolvedOptions, log: Logger): Promise<NatsConnection> {
  const started = Date.now();
  const deadline = started + opts.connectWaitMs;
  const servers = opts.servers.map(redactUrl).join(", ");
  const attemptTimeout = co.timeout ?? 2000;
  for (let attempt = 1;; attempt++) {
    const left = deadline - Date.now();
    const timeout = Math.max(50, Math.min(attemptTimeout, left));
    let error: unknown;
    try {
      return await boundedConnect({ ...co, timeout }, timeout + ATTEMPT_GRACE_MS, servers);
    } catch (e) {
      if (e instanceof AuthorizationError || e instanceof UserAuthenticationExpiredError) throw e;
      error = e;
    }
    const waited = Date.now() - started;
    const remaining = deadline - Date.now();
    const pause = Math.min(CONNECT_BACKOFF_MS * 2 ** Math.min(attempt - 1, 10), CONNECT_BACKOFF_MAX_MS, remaining);
    if (remaining <= 0) {
      throw new StoreUnavailableError("connect", opts.connectWaitMs, {
        cause: error,
        detail: `no NATS server reachable at ${servers} after ${waited} ms and ${attempt} attempt${attempt === 1 ? "" : "s"} ` +
          `(connectWaitMs ${opts.connectWaitMs}); last error: ${describe(error)}`,
      });
    }
    log("warn", "NATS server unreachable, retrying", {
      event: "storeConnectRetry",
      servers,
      attempt,
      waitedMs: waited,
      retryInMs: pause,
      connectWaitMs: Number.isFinite(opts.connectWaitMs) ? opts.connectWaitMs : "Infinity",
      error: describe(error),
    });
    await sleep(pause);
  }
}

/**
 * `wsconnect`, given up after `ms` even if the client never settles (a
 * connection that arrives later is closed).
 */
function boundedConnect(co: ConnectionOptions, ms: number, servers: string): Promise<NatsConnection> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(() => {
      settled = true;
      reject(new Error(`the NATS client did not settle a connection to ${servers} within ${ms} ms`));
    }, clampTimerMs(ms));
    wsconnect(co).then(
      (nc) => {
        clearTimeout(timer);
        if (settled) void nc.close().catch(() => {});
        else resolve(nc);
        settled = true;
      },
      (e) => {
        clearTimeout(timer);
        if (!settled) reject(e);
        settled = true;
      },
    );
  });
}

function authenticator(o: NatsStoreOptions): Authenticator | undefined {
  if (o.nkey !== undefined) return nkeyAuthenticator(encoder.encode(o.nkey.trim()));
  if (o.creds !== undefined) return credsAuthenticator(encoder.encode(o.creds));
  return undefined;
}

/** Throws `INVALID_CONFIG` when the job's bucket does not exist (`createBucket: false`). */
async function requireBucket(jsm: JetStreamManager, opts: ResolvedOptions): Promise<void> {
  try {
    await jsm.streams.info(`KV_${opts.bucket}`);
  } catch (e) {
    if (e instanceof JetStreamApiError && e.code === STREAM_NOT_FOUND) {
      throw new SplitleaseError(
        "INVALID_CONFIG",
        `NatsStore: job ${JSON.stringify(opts.job)} has no bucket ${opts.bucket} on ${opts.servers.map(redactUrl).join(", ")} ` +
          "(createBucket: false); check the job name",
      );
    }
    throw e;
  }
}

async function openBucket(js: JetStreamClient, opts: ResolvedOptions): Promise<KV> {
  const kvm = new Kvm(js);
  const config = {
    history: 1,
    replicas: opts.replicas,
    // +1 KiB of headroom for the message headers; values are checked client side.
    maxValueSize: MAX_VALUE_BYTES + 1024,
    // Direct gets may be served by a stale follower: never for replicated buckets.
    allow_direct: opts.replicas === 1 ? undefined : false,
  } as Record<string, unknown>;
  if (config.allow_direct === undefined) delete config.allow_direct;
  for (let attempt = 0;; attempt++) {
    try {
      return await kvm.create(opts.bucket, config);
    } catch (e) {
      // Another process created it between our info and add (the server
      // answers "name in use" or, when the two adds cross, "subjects
      // overlap"): open it.
      const raced = e instanceof JetStreamApiError && (e.code === STREAM_NAME_IN_USE || e.code === STREAM_SUBJECT_OVERLAP);
      if (!raced || attempt >= 2) throw e;
      await sleep(50);
    }
  }
}

/**
 * Waits until a replicated bucket's stream has a Raft leader. A bucket just
 * created (or whose group is electing) answers writes with "no responders"
 * until then: measured on nats-server 2.15.2, the first write to a fresh R3
 * bucket failed that way. Bounded by five op timeouts (at least 10 s).
 */
async function awaitStreamLeader(jsm: JetStreamManager, opts: ResolvedOptions): Promise<void> {
  const limit = Math.max(10_000, 5 * opts.opTimeoutMs);
  const deadline = Date.now() + limit;
  let last: unknown;
  for (;;) {
    try {
      const info = await jsm.streams.info(`KV_${opts.bucket}`);
      if (info.cluster?.leader) return;
    } catch (e) {
      last = e;
    }
    if (Date.now() >= deadline) {
      throw new StoreUnavailableError("connect", limit, {
        cause: last,
        detail: `the replicated bucket ${opts.bucket} has no stream leader after ${limit} ms (is a majority of its ${opts.replicas} servers up?)`,
      });
    }
    await sleep(100);
  }
}

/** The server's "Permissions Violation for …" text found in `e` or its causes, if any. */
function permissionViolation(e: unknown): string | undefined {
  for (let c: unknown = e, depth = 0; c instanceof Error && depth < 5; c = c.cause, depth++) {
    const m = /Permissions Violation for [^"]*"[^"]*"/.exec(c.message);
    if (m) return m[0];
  }
  return undefined;
}

/** A short description of a client error for error messages. */
export function describe(e: unknown): string {
  if (e instanceof Error) {
    const cause = e.cause instanceof Error ? `: ${e.cause.message}` : "";
    return `${e.name}: ${e.message}${cause}`;
  }
  return String(e);
}
