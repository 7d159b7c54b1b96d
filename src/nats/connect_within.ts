/**
 * Reaching a NATS server: every URL tried in each attempt, attempts repeated
 * with backoff for `connectWaitMs` and logged, each bounded by a timer of
 * our own in case the client never settles (Node 24 refused a blocked port
 * before the transport had set its handlers, issue 21 item 4).
 *
 * @module
 */
import {
  AuthorizationError,
  type ConnectionOptions,
  type NatsConnection,
  UserAuthenticationExpiredError,
} from "@nats-io/nats-core";
import { SplitleaseError, StoreUnavailableError } from "../errors.ts";
import { redactUrl, type ResolvedOptions } from "./options.ts";
import { clampTimerMs } from "../util/timers.ts";
import type { Logger } from "../util/logger.ts";
import { describe } from "./describe.ts";
import { sleep } from "../util/timers.ts";
import { wrongListenerMessage } from "./listener.ts";
import type { TransportImpl } from "./transport.ts";

/** First and longest pause between two connection attempts of `connectWithin`. */
const CONNECT_BACKOFF_MS = 250;
const CONNECT_BACKOFF_MAX_MS = 5000;
/** How long a connection attempt may outlive its own timeout before it is given up as hung. */
const ATTEMPT_GRACE_MS = 1000;
/**
 * How long an attempt may run before the servers' listeners are identified
 * (a healthy server answers in milliseconds; a nats:// URL at an HTTP port
 * would otherwise wait for the whole attempt timeout), and how long that
 * identification may take.
 */
const IDENTIFY_AFTER_MS = 400;
const IDENTIFY_BUDGET_MS = 1500;

/**
 * Connects to one of `opts.servers`, trying them all again after a failed
 * attempt until `opts.connectWaitMs` has passed (for ever with Infinity),
 * and logging each failure. Each attempt is bounded by the client's own
 * connection timeout (cut to the time left) and, in case the client itself
 * never settles, by a timer of ours. A refused login is thrown at once, and
 * so is a URL at the wrong listener of a server (`INVALID_CONFIG` naming it:
 * the transport identifies the listeners when an attempt fails or stalls).
 * Throws `STORE_UNAVAILABLE` naming the URLs, the attempts and the time waited.
 */
export async function connectWithin(co: ConnectionOptions, opts: ResolvedOptions, log: Logger): Promise<NatsConnection> {
  const started = Date.now();
  const deadline = started + opts.connectWaitMs;
  const servers = opts.servers.map(redactUrl).join(", ");
  const attemptTimeout = co.timeout ?? 2000;
  for (let attempt = 1;; attempt++) {
    const left = deadline - Date.now();
    const timeout = Math.max(50, Math.min(attemptTimeout, left));
    let error: unknown;
    const tried = boundedConnect(opts.transport, { ...co, timeout }, timeout + ATTEMPT_GRACE_MS, servers);
    let identified = false;
    try {
      // Identify the listeners once, when the attempt fails or stalls; a
      // connection that arrives meanwhile ends the identification.
      if (!(await settlesWithin(tried.connection, IDENTIFY_AFTER_MS))) {
        identified = true;
        const settled = new AbortController();
        tried.connection.then(() => settled.abort(), () => {});
        await refuseWrongListeners(opts, tried.abandon, identifyBudget(deadline), settled.signal);
      }
      return await tried.connection;
    } catch (e) {
      if (e instanceof AuthorizationError || e instanceof UserAuthenticationExpiredError) throw e;
      if (e instanceof SplitleaseError && e.code === "INVALID_CONFIG") throw e;
      error = e;
    }
    if (!identified) await refuseWrongListeners(opts, tried.abandon, identifyBudget(deadline));
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

/** How long identifying the listeners may take: at most its budget, and not much past the connect deadline. */
function identifyBudget(deadline: number): number {
  return Math.min(IDENTIFY_BUDGET_MS, Math.max(250, deadline - Date.now()));
}

/** Whether `p` settles (either way) within `ms`. */
function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    const done = () => {
      clearTimeout(timer);
      resolve(true);
    };
    p.then(done, done);
  });
}

/**
 * Throws `INVALID_CONFIG` naming every server URL whose listener is not the
 * transport's kind (the NATS client port behind a ws:// URL, a WebSocket or
 * monitoring port behind a nats:// URL), after `abandon`ing the attempt.
 */
async function refuseWrongListeners(
  opts: ResolvedOptions,
  abandon: () => void,
  budgetMs: number,
  stop?: AbortSignal,
): Promise<void> {
  const limit = AbortSignal.timeout(budgetMs);
  const signal = stop ? AbortSignal.any([limit, stop]) : limit;
  const found = await Promise.all(opts.servers.map((url) => opts.transport.identify(url, signal).catch(() => undefined)));
  const wrong = opts.servers.flatMap((url, i) => (found[i] ? [wrongListenerMessage(url, found[i]!)] : []));
  if (wrong.length === 0 || stop?.aborted) return;
  abandon();
  throw new SplitleaseError("INVALID_CONFIG", `NatsStore: ${wrong.join("; ")}`);
}

/**
 * One connection attempt through `transport`, given up after `ms` even if
 * the client never settles; `abandon` gives it up at once. A connection
 * that arrives after it was given up is closed.
 */
function boundedConnect(
  transport: TransportImpl,
  co: ConnectionOptions,
  ms: number,
  servers: string,
): { connection: Promise<NatsConnection>; abandon: () => void } {
  let settled = false;
  let abandon = () => {};
  const connection = new Promise<NatsConnection>((resolve, reject) => {
    const timer = setTimeout(() => {
      settled = true;
      reject(new Error(`the NATS client did not settle a connection to ${servers} within ${ms} ms`));
    }, clampTimerMs(ms));
    abandon = () => {
      clearTimeout(timer);
      settled = true;
      reject(new Error(`the connection attempt to ${servers} was given up`));
    };
    transport.connect(co).then(
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
  connection.catch(() => {}); // awaited by the caller, or abandoned
  return { connection, abandon };
}
