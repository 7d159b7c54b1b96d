/**
 * The watches of one {@linkcode PgStore}: which watches wait on which
 * notification channel, the listener that wakes them (`notifications.ts`),
 * the watches of exact keys (listening, or polled together:
 * `key_watches.ts`), and the {@linkcode WatchHost} each `PgWatch` is given
 * to register itself, read and report the revisions it saw.
 *
 * @module
 */
import type { Logger } from "../util/logger.ts";
import { KeyWatches } from "./key_watches.ts";
import { Notifications } from "./notifications.ts";
import type { ResolvedPgOptions } from "./options.ts";
import type { PgWatch, WatchHost } from "./pg_watch.ts";
import { filterSql, type Queries } from "./queries.ts";
import type { SqlClient, SqlParam, SqlRow } from "./sql_client.ts";

/** What {@linkcode PgWatches} is built from: the store's driver, queries and job, and its bounded read. */
export interface PgWatchesInit {
  client: SqlClient;
  logger: Logger;
  q: Queries;
  jobId: number;
  opts: ResolvedPgOptions;
  /** The store's read for watches and listings (one operation timeout, outages as `StoreUnavailableError`). */
  read: (op: string, text: string, params: SqlParam[]) => Promise<SqlRow[]>;
  /** A revision seen (the store's lower bound for its next write's). */
  saw: (revision: number) => void;
}

/** The watches of a store (see the module doc). */
export class PgWatches {
  readonly #watches = new Map<string, Set<PgWatch>>();
  /** The watches of exact keys: listening, or polled together. */
  readonly #keyWatches: KeyWatches;
  readonly #notifications: Notifications;
  /** What each of the store's watches is given. */
  readonly host: WatchHost;

  constructor(init: PgWatchesInit) {
    this.#notifications = new Notifications(
      init.client,
      init.logger,
      (channel) => {
        for (const w of this.#watches.get(channel) ?? []) w.wake();
      },
      () => {
        for (const set of this.#watches.values()) for (const w of set) w.wake();
      },
    );
    this.#keyWatches = new KeyWatches({ client: init.client, q: init.q, jobId: init.jobId, opts: init.opts, notifications: this.#notifications });
    this.host = {
      q: init.q,
      jobId: init.jobId,
      opts: init.opts,
      read: init.read,
      listen: (channel, w, filter) => {
        let set = this.#watches.get(channel);
        if (!set) this.#watches.set(channel, (set = new Set()));
        set.add(w);
        return filterSql(filter).kind === "exact" ? this.#keyWatches.add(w, filter, channel) : this.#notifications.add(channel);
      },
      stopped: (channel, w) => {
        const set = this.#watches.get(channel);
        if (!set?.delete(w)) return;
        if (set.size === 0) this.#watches.delete(channel);
        if (filterSql(w.filter).kind === "exact") this.#keyWatches.remove(w);
        else this.#notifications.remove(channel);
      },
      saw: init.saw,
    };
  }

  /**
   * Stops every watch and the listener, then closes the client
   * (`closeClient`), then waits for the key polling's statement in flight,
   * if any (it failed with the client).
   */
  async close(closeClient: () => Promise<void>): Promise<void> {
    const polling = this.#keyWatches.close();
    for (const set of [...this.#watches.values()]) for (const w of [...set]) await w.stop();
    await this.#notifications.close();
    await closeClient();
    await polling; // its statement in flight, if any, failed with the client
  }
}
