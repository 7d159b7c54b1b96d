/**
 * The NATS connection of a store: connects through its transport (WebSocket
 * by default), opens (or creates)
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
} from "@nats-io/nats-core";
import { jetstream, JetStreamApiError, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import { SplitleaseError, StoreUnavailableError } from "../errors.ts";
import {
  checkServerVersion,
  type NatsStoreOptions,
  pointServers,
  redactUrl,
  resolveOptions,
  type ResolvedOptions,
} from "./options.ts";
import { clampTimerMs } from "../util/timers.ts";
import { describe } from "./describe.ts";
import { promptCloseFactory } from "./socket.ts";
import { connectWithin } from "./connect_within.ts";
import { awaitStreamLeader, openBucket, readyJetStream, requireBucket, settleLimitMs } from "./bucket.ts";
import { jsonLogger } from "../util/logger.ts";
import { claimTransport, webSocketTransport } from "./transport.ts";

/**
 * How often a connection's watchdog checks one of its watches' consumers
 * (round robin: with n watches, each is checked every n × this).
 */
export const WATCHDOG_INTERVAL_MS = 2000;

/** JetStream API codes of a failed "expected last subject sequence" check. */
const WRONG_LAST_SEQUENCE = 10071;
const WRONG_LAST_SEQUENCE_UNKNOWN = 10164;

/** Whether `e` is a lost compare-and-swap (matched by API code, never text). */
export function isConflict(e: unknown): boolean {
  if (!(e instanceof JetStreamApiError)) return false;
  const code = e.code;
  return code === WRONG_LAST_SEQUENCE || code === WRONG_LAST_SEQUENCE_UNKNOWN;
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
  /** Gives back this connection's hold on the process's transport (see transport.ts). */
  #release: () => void;

  private constructor(
    nc: NatsConnection,
    js: JetStreamClient,
    jsm: JetStreamManager,
    kv: KV,
    opts: ResolvedOptions,
    release: () => void,
  ) {
    this.nc = nc;
    this.#release = release;
    this.js = js;
    this.jsm = jsm;
    this.kv = kv;
    this.opts = opts;
    this.stream = `KV_${opts.bucket}`;
    this.prefix = `$KV.${opts.bucket}.`;
    this.#monitor();
  }

  /**
   * Connects to a server with the store's options and no bucket: the first
   * half of {@linkcode Connection.open}, and all a job catalog needs.
   * `STORE_AUTH_FAILED` for refused credentials, `StoreUnavailableError`
   * when no server answers.
   */
  static async client(
    options: NatsStoreOptions,
  ): Promise<{ nc: NatsConnection; opts: ResolvedOptions; user: string | undefined; release: () => void }> {
    // A URL no transport takes is probed first, so the error can name the listener it reached.
    const opts = resolveOptions(options, await pointServers(options?.servers));
    const ws = opts.transport === webSocketTransport;
    // Without one the NATS client waits on a socket that never opens: say so at once.
    if (ws && !options.wsFactory && typeof WebSocket !== "function") {
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
      ...(ws ? { wsFactory: promptCloseFactory(options.wsFactory) } : {}),
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
    const release = claimTransport(opts.transport, opts.servers.map(redactUrl).join(", "));
    let nc: NatsConnection;
    try {
      nc = await connectWithin(co, opts, options.logger ?? jsonLogger());
    } catch (e) {
      release();
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
      // A wrong listener or a TLS mismatch (INVALID_CONFIG), or the outage already described.
      if (e instanceof SplitleaseError) throw e;
      throw new StoreUnavailableError("connect", co.timeout!, { cause: e, detail: describe(e) });
    }
    return { nc, opts, user, release };
  }

  /** Connects, checks the server version and opens or creates the bucket. */
  static async open(options: NatsStoreOptions): Promise<Connection> {
    const started = Date.now();
    const { nc, opts, user, release } = await Connection.client(options);
    try {
      checkServerVersion(nc.info?.version, opts.replicas);
      const js = jetstream(nc, { timeout: opts.opTimeoutMs });
      // A cluster that is starting is waited for, JetStream first, then the bucket, within one limit:
      // the settle limit, or what is left of connectWaitMs if that is longer (a worker deployed with
      // its cluster waits as long for the cluster to settle as for it to answer).
      const settled = Math.max(Date.now() + settleLimitMs(opts), started + opts.connectWaitMs);
      const jsm = await readyJetStream(js, opts, settled);
      if (!opts.createBucket) await requireBucket(jsm, opts);
      const kv = await openBucket(js, opts, undefined, settled);
      if (opts.replicas > 1) await awaitStreamLeader(jsm, opts);
      return new Connection(nc, js, jsm, kv, opts, release);
    } catch (e) {
      await nc.close().catch(() => {});
      release();
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
    this.#release();
  }
}

function authenticator(o: NatsStoreOptions): Authenticator | undefined {
  if (o.nkey !== undefined) return nkeyAuthenticator(encoder.encode(o.nkey.trim()));
  if (o.creds !== undefined) return credsAuthenticator(encoder.encode(o.creds));
  return undefined;
}

/** The server's "Permissions Violation for …" text found in `e` or its causes, if any. */
function permissionViolation(e: unknown): string | undefined {
  for (let c: unknown = e, depth = 0; c instanceof Error && depth < 5; c = c.cause, depth++) {
    const m = /Permissions Violation for [^"]*"[^"]*"/.exec(c.message);
    if (m) return m[0];
  }
  return undefined;
}

