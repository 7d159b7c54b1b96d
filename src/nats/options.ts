/**
 * Options of the NATS store, their validation, and the server version gate.
 *
 * @module
 */
import { SplitleaseError } from "../errors.ts";

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
  /** WebSocket URLs (`ws://` or `wss://`); several for a cluster. */
  servers: string | string[];
  /** Job name: 1-64 characters of `[A-Za-z0-9_-]`; the bucket is `splitlease_<job>`. */
  job: string;
  /** Token authentication. */
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
  /** Client ping interval in milliseconds (default 10000); a dead link is noticed after about two. */
  pingIntervalMs?: number;
  /** Try `servers` in the given order instead of shuffling them. */
  noRandomize?: boolean;
  /** WebSocket factory for runtimes without a global `WebSocket`. */
  wsFactory?: WebSocketFactory;
  /** Connection name shown in server monitoring. */
  name?: string;
}

/** Options after defaults and validation. */
export interface ResolvedOptions {
  servers: string[];
  job: string;
  bucket: string;
  replicas: number;
  opTimeoutMs: number;
  pingIntervalMs: number;
}

const JOB = /^[A-Za-z0-9_-]{1,64}$/;

function invalid(message: string): SplitleaseError {
  return new SplitleaseError("INVALID_CONFIG", `NatsStore: ${message}`);
}

/** Validates `options` and applies defaults; throws `INVALID_CONFIG`. */
export function resolveOptions(options: NatsStoreOptions): ResolvedOptions {
  if (!options || typeof options !== "object") throw invalid("options are required");
  const servers = typeof options.servers === "string" ? [options.servers] : options.servers;
  if (!Array.isArray(servers) || servers.length === 0) {
    throw invalid("`servers` needs at least one ws:// or wss:// URL");
  }
  for (const s of servers) {
    if (typeof s !== "string" || !/^wss?:\/\/[^\s]+$/.test(s)) {
      throw invalid(`server ${JSON.stringify(s)} is not a ws:// or wss:// URL`);
    }
  }
  if (typeof options.job !== "string" || !JOB.test(options.job)) {
    throw invalid(`job ${JSON.stringify(options.job)} must be 1-64 characters of letters, digits, '_' and '-'`);
  }
  const replicas = options.replicas ?? 1;
  if (!Number.isInteger(replicas) || replicas < 1 || replicas > 5) {
    throw invalid(`replicas must be an integer in 1..5, got ${replicas}`);
  }
  const opTimeoutMs = options.opTimeoutMs ?? 5000;
  if (!Number.isFinite(opTimeoutMs) || opTimeoutMs < 50) {
    throw invalid(`opTimeoutMs must be at least 50, got ${opTimeoutMs}`);
  }
  const pingIntervalMs = options.pingIntervalMs ?? 10_000;
  if (!Number.isFinite(pingIntervalMs) || pingIntervalMs < 100) {
    throw invalid(`pingIntervalMs must be at least 100, got ${pingIntervalMs}`);
  }
  if ((options.user === undefined) !== (options.pass === undefined)) {
    throw invalid("`user` and `pass` go together");
  }
  const auths = [options.token, options.user, options.nkey, options.creds].filter((a) => a !== undefined);
  if (auths.length > 1) throw invalid("give one of token, user/pass, nkey or creds");
  return {
    servers,
    job: options.job,
    bucket: `splitlease_${options.job}`,
    replicas,
    opTimeoutMs,
    pingIntervalMs,
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
