/**
 * Options of the NATS store, their validation, and the server version gate.
 *
 * @module
 */
import { SplitleaseError } from "../errors.ts";
import { isValidId } from "../store/keys.ts";
import { keysOf, rejectUnknownKeys } from "../util/options.ts";
import { durationIssue } from "../util/timers.ts";
import type { Logger } from "../util/logger.ts";
import { type NatsTransport, type TransportImpl, webSocketTransport } from "./transport.ts";
import { pointMisdirectedUrl, TCP_IMPORT } from "./listener.ts";
import { redactUrl } from "../util/urls.ts";
import { NATS_URLS, probeableUrl, schemeList, wrongStoreUrlMessage } from "../store/store_urls.ts";

export { redactUrl };

/**
 * Opens a WebSocket to `url` for runtimes without a global `WebSocket` (or to
 * customise it): resolves to the socket and whether it is encrypted. The
 * second argument is the nats-core connection options.
 *
 * @example
 * ```ts
 * import type { WebSocketFactory } from "@splitlease/splitlease/nats";
 * const factory: WebSocketFactory = (url) =>
 *   Promise.resolve({ socket: new WebSocket(url), encrypted: url.startsWith("wss:") });
 * ```
 */
export type WebSocketFactory = (
  url: string,
  options: unknown,
) => Promise<{ socket: WebSocket; encrypted: boolean }>;

/**
 * Options of `NatsStore.connect`.
 *
 * @example
 * ```ts
 * import type { NatsStoreOptions } from "@splitlease/splitlease/nats";
 * const options: NatsStoreOptions = {
 *   servers: ["wss://nats-1.example:443", "wss://nats-2.example:443"],
 *   job: "backfill-2024",
 *   user: "worker",
 *   pass: "secret",
 *   opTimeoutMs: 3000,
 * };
 * ```
 */
export interface NatsStoreOptions {
  /**
   * Server URLs; several for a cluster. WebSocket URLs (`ws://` or `wss://`)
   * by default; `nats://` or `tls://` (the client port; `tls://` requires
   * TLS) with `transport: tcpTransport()` from
   * `@splitlease/splitlease/nats/tcp`. A URL may
   * carry credentials: `ws://user:pass@host:port` (user and password) or
   * `ws://token@host:port` (token), percent-encoded. They are removed from
   * the URL and used for every server; they cannot be combined with the
   * `token`, `user`/`pass`, `nkey` or `creds` options, and every URL that
   * carries credentials must carry the same ones.
   */
  servers: string | string[];
  /** Job name: 1-128 characters of `[A-Za-z0-9_-]` (as everywhere); the bucket is `splitlease_<job>`. */
  job: string;
  /** A token the server's `authorization { token }` accepts (or put it in the URL: `ws://token@host`). */
  token?: string;
  /** User name (with `pass`). */
  user?: string;
  /** Password (with `user`). */
  pass?: string;
  /** NKey seed (`SU...`) for nkey authentication. */
  nkey?: string;
  /** Text of a `.creds` file (JWT + nkey seed). */
  creds?: string;
  /** Bucket replicas (default 1). More than 1 needs nats-server >= 2.9.21. */
  replicas?: number;
  /** Bound on every operation in milliseconds (default 5000). */
  opTimeoutMs?: number;
  /**
   * Client ping interval in milliseconds (default 2000). A link that stops
   * answering is declared stale after about three intervals and the client
   * fails over to another server: with 10000 a worker connected to a node
   * cut off from the network (not closed) stayed on it for 30 s, two default
   * leases; with 2000, about 6 s.
   */
  pingIntervalMs?: number;
  /** Try `servers` in the given order instead of shuffling them. */
  noRandomize?: boolean;
  /** WebSocket factory for runtimes without a global `WebSocket` (WebSocket transport only). */
  wsFactory?: WebSocketFactory;
  /**
   * How to reach the servers (default: WebSocket). `tcpTransport()` from
   * `@splitlease/splitlease/nats/tcp` dials `nats://` and `tls://` URLs on
   * Node, Bun and Deno; one process uses one transport at a time: nats-core
   * keeps one for the whole process (connecting over the other while a
   * store is open throws `INVALID_CONFIG`).
   */
  transport?: NatsTransport;
  /** Connection name shown in server monitoring. */
  name?: string;
  /**
   * Subject prefix of this connection's reply inboxes (default
   * `_INBOX.splitlease_<job>`): every reply (KV reads, publish acks, watch
   * deliveries) arrives under it, so a server can let each job's user
   * subscribe to its own job's replies only (`_INBOX.splitlease_<job>.>`)
   * instead of `_INBOX.>`, where one job could read another's replies.
   * Dot-separated tokens of `[A-Za-z0-9_$-]`.
   */
  inboxPrefix?: string;
  /**
   * Create the job's bucket when it does not exist (default `true`). Tools
   * that only read or repair a job (the CLI) pass `false`: a mistyped job
   * name then fails with `INVALID_CONFIG` instead of creating an empty bucket.
   */
  createBucket?: boolean;
  /**
   * How long `connect` keeps trying to reach a server, in milliseconds
   * (default `opTimeoutMs`). Every server is tried in each attempt; each
   * failed attempt is logged (`storeConnectRetry`, warn) and the next one
   * follows after a short back-off (250 ms doubling to 5 s). At the end
   * `connect` throws `STORE_UNAVAILABLE` naming the URLs and the time
   * waited. `Infinity` waits for a server for ever, still logging every
   * attempt: for a worker that may start before NATS. A refused login is
   * never retried.
   */
  connectWaitMs?: number;
  /** Where `connect` logs its attempts (default: JSON lines, warnings on stderr, as `serve` logs). */
  logger?: Logger;
}

/** Options after defaults and validation. */
export interface ResolvedOptions {
  /** Create the bucket when absent. */
  createBucket: boolean;
  /** Server URLs without credentials. */
  servers: string[];
  /** The transport that dials them. */
  transport: TransportImpl;
  job: string;
  bucket: string;
  replicas: number;
  opTimeoutMs: number;
  pingIntervalMs: number;
  /** Prefix of reply inboxes. */
  inboxPrefix: string;
  /** How long connect waits for a server (Infinity: for ever). */
  connectWaitMs: number;
  /** Credentials taken from the server URLs, if any. */
  urlAuth?: { user: string; pass: string } | { token: string };
}

/** Every option `NatsStore.connect` takes: anything else is a typo. */
const NATS_KEYS = keysOf<NatsStoreOptions>({
  servers: true,
  job: true,
  token: true,
  user: true,
  pass: true,
  nkey: true,
  creds: true,
  replicas: true,
  opTimeoutMs: true,
  pingIntervalMs: true,
  noRandomize: true,
  wsFactory: true,
  transport: true,
  name: true,
  inboxPrefix: true,
  createBucket: true,
  connectWaitMs: true,
  logger: true,
});

function invalid(message: string): SplitleaseError {
  return new SplitleaseError("INVALID_CONFIG", `NatsStore: ${message}`);
}

/** The `scheme://userinfo@` part of a URL that carries credentials. */
const USERINFO = /^([a-z]+:\/\/)([^/@\s]*)@/i;

/**
 * Splits the credentials off a server URL: `ws://user:pass@host` gives user
 * and password, `ws://token@host` a token (both percent-decoded).
 */
function splitCredentials(server: string): { url: string; auth?: { user: string; pass: string } | { token: string } } {
  const m = USERINFO.exec(server);
  if (!m) return { url: server };
  const shown = JSON.stringify(redactUrl(server));
  const colon = m[2].indexOf(":");
  let user: string, pass: string | undefined;
  try {
    user = decodeURIComponent(colon < 0 ? m[2] : m[2].slice(0, colon));
    pass = colon < 0 ? undefined : decodeURIComponent(m[2].slice(colon + 1));
  } catch {
    throw invalid(`the credentials in server ${shown} are not valid percent-encoding`);
  }
  if (user === "") throw invalid(`server ${shown} has credentials without a user or token`);
  const url = m[1] + server.slice(m[0].length);
  if (USERINFO.test(url)) throw invalid(`server ${shown} has more than one "@": percent-encode "@" in credentials as %40`);
  return { url, auth: pass === undefined ? { token: user } : { user, pass } };
}

/** "ws:// or wss://" for a transport's schemes. */
function transportSchemes(t: NatsTransport): string {
  return schemeList(t.schemes);
}

/** What NatsStore takes through `t`, for messages: its schemes, and the other transport's. */
function acceptedText(t: NatsTransport): string {
  return t === webSocketTransport
    ? "ws:// or wss:// (WebSocket), or nats:// or tls:// with the TCP transport"
    : `${transportSchemes(t)} (${t.name}), or ws:// or wss:// without the transport option`;
}

/**
 * Throws `INVALID_CONFIG` unless `server` is a URL `transport` dials; a NATS
 * TCP URL without the TCP transport says what to import, any other URL what
 * it is and what it likely meant (the store URL registry, `store_urls.ts`).
 */
function checkScheme(server: unknown, transport: NatsTransport, pointed?: ReadonlyMap<string, string>): void {
  const shown = JSON.stringify(typeof server === "string" ? redactUrl(server) : server);
  const m = typeof server === "string" ? /^([a-z][a-z0-9+.-]*):\/\/[^\s]+$/i.exec(server) : null;
  const scheme = m?.[1].toLowerCase();
  if (scheme !== undefined && transport.schemes.includes(scheme)) return;
  if (transport === webSocketTransport && (scheme === "nats" || scheme === "tls")) {
    throw invalid(
      `server ${shown} is a NATS TCP URL, which needs the TCP transport: ${TCP_IMPORT} and pass ` +
        "transport: tcpTransport() (Node, Bun and Deno; edge platforms reach NATS over WebSocket only: " +
        "give them a ws:// or wss:// URL)",
    );
  }
  if (scheme === "ws" || scheme === "wss") {
    throw invalid(
      `server ${shown} is a WebSocket URL, but the transport is ${transport.name} (${transportSchemes(transport)}): ` +
        "drop the transport option to connect over WebSocket, or give the server's client port as nats://",
    );
  }
  const found = typeof server === "string" ? pointed?.get(server) : undefined;
  throw invalid(wrongStoreUrlMessage(server, NATS_URLS, "server", { acceptedText: acceptedText(transport), ...(found ? { found } : {}) }));
}

/**
 * Where each server URL no transport takes (`http://`, a bare `host:port`)
 * really points, when a nats-server listener answers there
 * ({@linkcode pointMisdirectedUrl}, 1 s at most): for the message
 * `resolveOptions` throws. Empty when every URL has a NATS scheme.
 */
export async function pointServers(servers: unknown): Promise<Map<string, string>> {
  const list = typeof servers === "string" ? [servers] : Array.isArray(servers) ? servers : [];
  const odd = list.filter((s): s is string => typeof s === "string" && probeableUrl(s));
  const found = await Promise.all(odd.map((s) => pointMisdirectedUrl(s, AbortSignal.timeout(1000))));
  return new Map(odd.flatMap((s, i) => (found[i] ? [[s, found[i]!] as [string, string]] : [])));
}

/** Validates `options` and applies defaults; throws `INVALID_CONFIG`. */
export function resolveOptions(options: NatsStoreOptions, pointed?: ReadonlyMap<string, string>): ResolvedOptions {
  if (!options || typeof options !== "object") throw invalid("options are required");
  rejectUnknownKeys(options, NATS_KEYS, "NatsStore");
  const transport = (options.transport ?? webSocketTransport) as TransportImpl;
  if (
    typeof transport !== "object" || transport === null || typeof transport.connect !== "function" ||
    typeof transport.identify !== "function" || !Array.isArray(transport.schemes)
  ) {
    throw invalid(`transport must be a NATS transport such as tcpTransport() (${TCP_IMPORT}), got ${typeof transport}`);
  }
  if (options.wsFactory !== undefined && transport !== webSocketTransport) {
    throw invalid(`wsFactory applies to the WebSocket transport only, not to ${transport.name}`);
  }
  const given = typeof options.servers === "string" ? [options.servers] : options.servers;
  if (!Array.isArray(given) || given.length === 0) {
    throw invalid(`\`servers\` needs at least one ${transportSchemes(transport)} URL`);
  }
  const servers: string[] = [];
  let urlAuth: ResolvedOptions["urlAuth"];
  for (const s of given) {
    checkScheme(s, transport, pointed);
    const { url, auth } = splitCredentials(s);
    servers.push(url);
    if (!auth) continue;
    if (urlAuth && JSON.stringify(urlAuth) !== JSON.stringify(auth)) {
      throw invalid("the server URLs carry different credentials; one connection uses one set for every server");
    }
    urlAuth = auth;
  }
  if (typeof options.job !== "string" || !isValidId(options.job)) {
    throw invalid(
      `job ${JSON.stringify(options.job)} must be 1-128 characters of [A-Za-z0-9_-] (the bucket is splitlease_<job>)`,
    );
  }
  const replicas = options.replicas ?? 1;
  if (!Number.isInteger(replicas) || replicas < 1 || replicas > 5) {
    throw invalid(`replicas must be an integer in 1..5, got ${replicas}`);
  }
  const opTimeoutMs = options.opTimeoutMs ?? 5000;
  const pingIntervalMs = options.pingIntervalMs ?? DEFAULT_PING_INTERVAL_MS;
  const issue = durationIssue("opTimeoutMs", opTimeoutMs, 50) ?? durationIssue("pingIntervalMs", pingIntervalMs, 100);
  if (issue) throw invalid(issue);
  const connectWaitMs = options.connectWaitMs ?? opTimeoutMs;
  if (connectWaitMs !== Infinity) {
    const waitIssue = durationIssue("connectWaitMs", connectWaitMs);
    if (waitIssue) throw invalid(`${waitIssue} (or Infinity to wait for ever)`);
  }
  if (options.logger !== undefined && typeof options.logger !== "function") {
    throw invalid("logger must be a function (level, message, fields)");
  }
  if ((options.user === undefined) !== (options.pass === undefined)) {
    throw invalid("`user` and `pass` go together");
  }
  const auths = [options.token, options.user, options.nkey, options.creds].filter((a) => a !== undefined);
  if (auths.length > 1) throw invalid("give one of token, user/pass, nkey or creds");
  if (urlAuth && auths.length > 0) {
    throw invalid("credentials are given both in a server URL and as options; give them once");
  }
  const inboxPrefix = options.inboxPrefix ?? `_INBOX.splitlease_${options.job}`;
  if (typeof inboxPrefix !== "string" || !/^[A-Za-z0-9_$-]+(\.[A-Za-z0-9_$-]+)*$/.test(inboxPrefix)) {
    throw invalid(
      `inboxPrefix ${JSON.stringify(inboxPrefix)} must be dot-separated tokens of [A-Za-z0-9_$-] (no wildcards or spaces)`,
    );
  }
  if (options.createBucket !== undefined && typeof options.createBucket !== "boolean") {
    throw invalid(`createBucket must be true or false, got ${JSON.stringify(options.createBucket)}`);
  }
  return {
    createBucket: options.createBucket ?? true,
    servers,
    transport,
    job: options.job,
    bucket: `splitlease_${options.job}`,
    replicas,
    opTimeoutMs,
    pingIntervalMs,
    inboxPrefix,
    connectWaitMs,
    ...(urlAuth ? { urlAuth } : {}),
  };
}

/** First server version whose replicated KV compare-and-swap is correct. */
export const MIN_REPLICATED_VERSION: readonly [number, number, number] = [2, 9, 21];

/** Parses "2.9.10" (ignoring suffixes) into numbers. */
export function parseVersion(v: string | undefined): [number, number, number] {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(v ?? "");
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : [0, 0, 0];
}

/** Whether version `a` is older than `b`. */
export function olderThan(a: readonly number[], b: readonly number[]): boolean {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] < b[i];
  return false;
}

/** Default client ping: a silent (partitioned) server is noticed in about three pings, well within a lease. */
const DEFAULT_PING_INTERVAL_MS = 2000;

/** Throws `UNSUPPORTED_SERVER` when replicated buckets are asked of a server with the CAS bug. */
export function checkServerVersion(version: string | undefined, replicas: number): void {
  if (replicas <= 1) return;
  if (olderThan(parseVersion(version), MIN_REPLICATED_VERSION)) {
    throw new SplitleaseError(
      "UNSUPPORTED_SERVER",
      `NatsStore: replicas: ${replicas} needs nats-server >= 2.9.21, but the server is ${version ?? "unknown"}: ` +
        "compare-and-swap on replicated KV buckets is broken before 2.9.21 (nats-server#4320: " +
        "concurrent updates at one revision can all win), and lease fencing depends on it. " +
        "Upgrade the server or use replicas: 1.",
    );
  }
}
