/**
 * The store's one `LISTEN` connection: listens on the channels its watches
 * need (counted, so two watches of one filter share a channel), hands every
 * notification to the watches of that channel, and reconnects with backoff
 * when its connection is lost, then wakes every watch: notifications sent
 * while it was away are lost, and each watch reads what it missed from its
 * last revision. Nothing depends on a notification arriving (watches also
 * poll); they only make changes arrive sooner.
 *
 * @module
 */
import type { Logger } from "../util/logger.ts";
import { sleep } from "../util/timers.ts";
import type { SqlClient, SqlListener } from "./sql_client.ts";

const BACKOFF_MS = 250;
const BACKOFF_MAX_MS = 5000;

/** Routes notifications to watches and keeps the listener connected. */
export class Notifications {
  readonly #client: SqlClient;
  readonly #log: Logger;
  readonly #wakeAll: () => void;
  readonly #wake: (channel: string) => void;
  /** Channels and how many watches need each. */
  readonly #channels = new Map<string, number>();
  #listener: SqlListener | undefined;
  #connecting: Promise<void> | undefined;
  #closed = false;
  /** Bumped whenever the connection is replaced: work for an older one is dropped. */
  #generation = 0;

  constructor(client: SqlClient, log: Logger, wake: (channel: string) => void, wakeAll: () => void) {
    this.#client = client;
    this.#log = log;
    this.#wake = wake;
    this.#wakeAll = wakeAll;
  }

  /** Whether the listener is connected now. */
  get connected(): boolean {
    return this.#listener !== undefined;
  }

  /**
   * Listens on `channel` for one more watch; resolves once the `LISTEN`
   * took effect (or could not: the watch polls meanwhile).
   */
  async add(channel: string): Promise<void> {
    const n = this.#channels.get(channel) ?? 0;
    this.#channels.set(channel, n + 1);
    if (!this.#listener) return await this.#connect();
    const l = this.#listener;
    if (n === 0) await l.listen(channel).catch((e) => this.#listener === l && this.#lost(e));
  }

  /** One watch fewer on `channel`; `UNLISTEN` once none is left. */
  remove(channel: string): void {
    const n = (this.#channels.get(channel) ?? 0) - 1;
    if (n > 0) {
      this.#channels.set(channel, n);
      return;
    }
    this.#channels.delete(channel);
    this.#listener?.unlisten(channel).catch(() => {});
  }

  /** Closes the listener; no reconnect follows. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#generation++;
    const l = this.#listener;
    this.#listener = undefined;
    await l?.close().catch(() => {});
  }

  /** Connects (once at a time) and listens on every channel, retrying until it works or the store closes. */
  #connect(): Promise<void> {
    this.#connecting ??= this.#connectLoop().finally(() => (this.#connecting = undefined));
    return this.#connecting;
  }

  async #connectLoop(): Promise<void> {
    for (let attempt = 0; !this.#closed; attempt++) {
      const gen = ++this.#generation;
      let listener: SqlListener | undefined;
      let dead: unknown;
      try {
        listener = await this.#client.listener({
          notify: (channel) => {
            if (gen === this.#generation) this.#wake(channel);
          },
          closed: (error) => {
            dead ??= error ?? new Error("closed");
            if (listener !== undefined && this.#listener === listener) this.#lost(error);
          },
        });
        for (const channel of this.#channels.keys()) await listener.listen(channel);
        if (dead !== undefined) throw dead;
      } catch (e) {
        await listener?.close().catch(() => {});
        if (attempt === 0 || attempt % 10 === 0) {
          this.#log("warn", "PostgreSQL listener unreachable, retrying (watches poll meanwhile)", {
            event: "storeListenRetry",
            attempt: attempt + 1,
            error: e instanceof Error ? e.message : String(e),
          });
        }
        await sleep(Math.min(BACKOFF_MS * 2 ** Math.min(attempt, 10), BACKOFF_MAX_MS));
        continue;
      }
      if (this.#closed || gen !== this.#generation) {
        await listener.close().catch(() => {});
        return;
      }
      this.#listener = listener;
      // Notifications sent while no one listened are lost: every watch reads from its last revision.
      this.#wakeAll();
      return;
    }
  }

  #lost(error: unknown): void {
    if (this.#closed) return;
    const l = this.#listener;
    this.#listener = undefined;
    this.#generation++;
    l?.close().catch(() => {});
    this.#log("warn", "PostgreSQL listener lost; reconnecting (watches poll meanwhile)", {
      event: "storeListenLost",
      error: error instanceof Error ? error.message : String(error),
    });
    void this.#connect();
  }
}
