/**
 * The small client interface the Redis store is written against, so that
 * its logic stays Web-standards: the package's `redis` entry wires
 * node-redis (`@redis/client`) to it; a test wraps it to inject faults.
 *
 * @module
 */

/**
 * A reply as the store reads it: a bulk or simple string, an integer, a nil,
 * or an array of replies.
 *
 * @example
 * ```ts
 * import type { RedisReply } from "./redis_client.ts";
 * const reply: RedisReply = ["12", "run-id", null];
 * ```
 */
export type RedisReply = string | number | null | RedisReply[];

/**
 * How a command failed, which decides what the store may conclude:
 * - `unsent`: it never left the client (its time ran out while the
 *   connection was down, or the client was closed): it cannot have run;
 * - `unanswered`: it was sent and no reply came (a timeout, a lost
 *   connection): it may have run;
 * - `refused`: the server answered with an error (`LOADING`, `READONLY`,
 *   `BUSY`, `OOM`, …): it did not run;
 * - `auth`: the server refused the credentials or the command
 *   (`NOAUTH`, `WRONGPASS`, `NOPERM`): no retry fixes it.
 *
 * @example
 * ```ts
 * import type { RedisFailure } from "./redis_client.ts";
 * const kind: RedisFailure = "unanswered";
 * ```
 */
export type RedisFailure = "unsent" | "unanswered" | "refused" | "auth";

/**
 * A command that failed, with what the store may conclude from it.
 *
 * @example
 * ```ts
 * import { RedisCallError } from "./redis_client.ts";
 * const e = new RedisCallError("unsent", "the connection is down");
 * console.log(e.kind); // "unsent"
 * ```
 */
export class RedisCallError extends Error {
  /** What the failure allows the store to conclude. */
  readonly kind: RedisFailure;
  /** A failure of `kind`, with the driver's message. */
  constructor(kind: RedisFailure, message: string, options?: ErrorOptions) {
    super(message, options);
    this.kind = kind;
    this.name = "RedisCallError";
  }
}

/**
 * A connection to one Redis server as the store uses it.
 *
 * @example
 * ```ts ignore
 * const client: RedisClient = nodeRedisClient(url);
 * const pong = await client.send(["PING"], 1000);
 * ```
 */
export interface RedisClient {
  /**
   * Sends one command and resolves with its reply, or rejects with a
   * {@linkcode RedisCallError}. A command issued while the connection is
   * down waits for it (it is not sent meanwhile); past `timeoutMs` it fails
   * (`unsent` if it was never sent, `unanswered` if it was). A command is
   * never sent twice.
   */
  send(args: readonly string[], timeoutMs: number): Promise<RedisReply>;
  /** Whether the command connection is up now. */
  readonly connected: boolean;
  /**
   * Calls `onMessage` for every message published on `channel`, on a
   * connection of its own (resolves once subscribed, or when it could not
   * be: wake-ups are never the record, so a lost one only waits for the
   * store's fallback poll).
   */
  subscribe(channel: string, onMessage: () => void): Promise<void>;
  /** Stops the subscription of `channel`. */
  unsubscribe(channel: string): Promise<void>;
  /**
   * Calls `fn` whenever a connection came back after a loss (messages
   * published meanwhile are lost: the store then wakes every watch).
   */
  onReconnect(fn: () => void): void;
  /** Closes every connection; commands in flight fail. */
  close(): Promise<void>;
}
