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
  wsconnect,
} from "@nats-io/nats-core";
import { StoreUnavailableError } from "../errors.ts";
import { redactUrl, type ResolvedOptions } from "./options.ts";
import { clampTimerMs } from "../util/timers.ts";
import type { Logger } from "../coordinator/types.ts";
import { describe } from "./describe.ts";
import { sleep } from "../util/timers.ts";

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
export async function connectWithin(co: ConnectionOptions, opts: ResolvedOptions, log: Logger): Promise<NatsConnection> {
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
