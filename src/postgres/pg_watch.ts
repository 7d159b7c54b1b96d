/**
 * A watch on the PostgreSQL store: a snapshot of the live values, `ready`,
 * then the changes after the snapshot's revision, read from the change log
 * (every change, in revision order) or, once the log no longer reaches back
 * that far, from the live values (the last change of each key, in revision
 * order: superseded ones are skipped, as the watch contract allows). Woken
 * by `NOTIFY` (or, for an exact key, by its store's key poll), and by a
 * poll in case a notification was missed.
 *
 * A reconnect resumes from the last revision read: revisions are in commit
 * order, so "after revision r" misses nothing. Only a server that restarted
 * or changed (its start time differs: a crash may have lost commits that
 * were already read) cannot prove that; the watch then emits `reset`, a
 * fresh snapshot and `ready`.
 *
 * @module
 */
import type { Watch, WatchEvent } from "../store/store.ts";
import { Channel } from "../util/channel.ts";
import { SplitleaseError } from "../errors.ts";
import type { ResolvedPgOptions } from "./options.ts";
import { type FilterSql, filterSql, pageRows, type PageRow, type Queries, rev } from "./queries.ts";
import type { SqlParam, SqlRow } from "./sql_client.ts";

/** Rows read per page of a snapshot or a catch-up. */
export const PAGE_ROWS = 1000;

/** What a watch needs from its store. */
export interface WatchHost {
  readonly q: Queries;
  readonly jobId: number;
  readonly opts: ResolvedPgOptions;
  /** A read bounded by the operation timeout (throws `StoreUnavailableError`). */
  read(op: string, text: string, params: SqlParam[]): Promise<SqlRow[]>;
  /**
   * Registers the watch, and listens on `channel` for it or polls its key
   * (resolves when the `LISTEN` took effect, or could not).
   */
  listen(channel: string, w: PgWatch, filter: string): Promise<void>;
  /** The watch stopped. */
  stopped(channel: string, w: PgWatch): void;
  /** A revision seen (a lower bound for the next write's). */
  saw(revision: number): void;
}

/** The server restarted or changed: what was read may be gone. */
class Discontinuity extends Error {}

/** A watch of one filter (see the `Watch` contract in store.ts). */
export class PgWatch implements Watch {
  readonly #host: WatchHost;
  /** The key filter watched. */
  readonly filter: string;
  readonly #filter: FilterSql;
  readonly #channelName: string;
  readonly #events = new Channel<WatchEvent>();
  #stopped = false;
  /** Changes up to this revision have been read (for an exact key: the revision of its last change read). */
  #cursor = 0;
  /** Revision of the last put or delete handed out. */
  #delivered = 0;
  /** Start time of the server the cursor was read from. */
  #boot: string | undefined;
  #live = false;
  /** A snapshot under way: the keys it handed out and the revision it read up to. */
  #snap: { seen: Set<string>; after: number } | undefined;
  /** Whether anything was handed out since the last reset (a reset is owed before a new snapshot). */
  #dirty = false;
  /** A wake-up arrived while reading: read again before sleeping. */
  #woken = false;
  #wakeUp: (() => void) | undefined;

  constructor(host: WatchHost, filter: string, channel: string) {
    this.#host = host;
    this.filter = filter;
    this.#filter = filterSql(filter);
    this.#channelName = channel;
    // Registered at once, so a store closed right after `watch()` stops it.
    void this.#run(host.listen(channel, this, filter));
  }

  /** The revision this watch has read changes up to (an exact key's: its last change read). */
  get readUpTo(): number {
    return this.#cursor;
  }

  [Symbol.asyncIterator](): AsyncIterator<WatchEvent> {
    return this.#events[Symbol.asyncIterator]();
  }

  /** Something under the filter may have changed: read now. */
  wake(): void {
    this.#woken = true;
    this.#wakeUp?.();
  }

  stop(): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    this.#stopped = true;
    this.#events.close();
    this.#wakeUp?.();
    this.#host.stopped(this.#channelName, this);
    return Promise.resolve();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  /**
   * See `Watch.position`: the last change under the filter after what this
   * watch has read (one indexed read), else the last it handed out.
   */
  async position(): Promise<number> {
    if (!this.#live || this.#stopped) return Infinity;
    const cursor = this.#cursor;
    const delivered = this.#delivered;
    const h = this.#host;
    const rows = await h.read("watch", h.q.position(this.#filter), [h.jobId, cursor, ...this.#filter.params]);
    const at = rows[0]?.at;
    return at === null || at === undefined ? delivered : rev(at);
  }

  #emit(e: WatchEvent): void {
    if (this.#stopped) return;
    if (e.type === "put" || e.type === "delete") {
      this.#delivered = Math.max(this.#delivered, e.revision);
      this.#host.saw(e.revision);
    }
    this.#dirty = true;
    this.#events.push(e);
  }

  async #run(listening: Promise<void>): Promise<void> {
    const h = this.#host;
    // Listen before the snapshot, so no write after it goes unnoticed (bounded: a listener that
    // cannot connect leaves the watch to its poll).
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([listening, new Promise<void>((r) => (timer = setTimeout(r, h.opts.opTimeoutMs)))]);
    clearTimeout(timer);
    let backoff = 100;
    while (!this.#stopped) {
      this.#woken = false;
      try {
        if (!this.#live) await this.#snapshot();
        await this.#catchUp();
        backoff = 100;
      } catch (e) {
        if (this.#stopped) return;
        if (e instanceof SplitleaseError && e.code === "CLOSED") return void this.stop();
        if (e instanceof Discontinuity) {
          this.#restart(e.message);
          continue;
        }
        // An outage: the cursor stands, the next read resumes from it.
        await this.#sleep(backoff);
        backoff = Math.min(backoff * 2, 2000);
        continue;
      }
      if (!this.#woken) await this.#sleep(h.opts.pollIntervalMs);
    }
  }

  /** Sleeps for `ms` or until woken or stopped. */
  #sleep(ms: number): Promise<void> {
    if (this.#woken || this.#stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.#wakeUp = () => {
        this.#wakeUp = undefined;
        done();
      };
    });
  }

  #restart(reason: string): void {
    this.#live = false;
    this.#snap = undefined;
    this.#boot = undefined;
    if (this.#dirty) {
      this.#dirty = false;
      this.#emit({ type: "reset", reason });
      this.#dirty = false;
    }
  }

  #checkBoot(boot: string): void {
    if (this.#boot === undefined) this.#boot = boot;
    else if (boot !== this.#boot) {
      throw new Discontinuity("the PostgreSQL server restarted or changed (its start time differs)");
    }
  }

  /**
   * The live values under the filter in revision order, then `ready`.
   * Resumable: a page that fails (an outage) is read again from where the
   * snapshot stood, so the keys it handed out are still tracked and a key
   * deleted meanwhile is still told.
   */
  async #snapshot(): Promise<void> {
    const h = this.#host;
    if (this.#filter.kind === "exact") {
      const p = await this.#point();
      if (p.revision > 0 && p.value !== null) this.#emit({ type: "put", key: this.#filter.params[0] as string, value: p.value, revision: p.revision });
      this.#cursor = p.revision;
    } else {
      // Pages in revision order: a key changed while paging reappears in a later page at its new
      // revision (a delete as a marker), so the last page's head is a revision the snapshot is
      // complete at.
      const snap = (this.#snap ??= { seen: new Set(), after: 0 });
      while (true) {
        const rows = await this.#page("kv", snap.after);
        let n = 0;
        for (const r of rows) {
          const c = r.change;
          if (!c) continue;
          n++;
          snap.after = c.revision;
          if (c.value !== null) {
            snap.seen.add(c.key);
            this.#emit({ type: "put", key: c.key, value: c.value, revision: c.revision });
          } else if (snap.seen.delete(c.key)) this.#emit({ type: "delete", key: c.key, revision: c.revision });
        }
        if (n < PAGE_ROWS) {
          this.#cursor = rows[0].head;
          break;
        }
      }
      this.#snap = undefined;
      h.saw(this.#cursor);
    }
    this.#live = true;
    this.#emit({ type: "ready" });
  }

  /** Reads every change after the cursor. */
  async #catchUp(): Promise<void> {
    if (this.#filter.kind === "exact") {
      const p = await this.#point();
      if (p.revision > this.#cursor) {
        const key = this.#filter.params[0] as string;
        this.#emit(p.value === null ? { type: "delete", key, revision: p.revision } : { type: "put", key, value: p.value, revision: p.revision });
        this.#cursor = p.revision;
      }
      return;
    }
    let table: "log" | "kv" = "log";
    while (!this.#stopped) {
      const rows = await this.#page(table, this.#cursor);
      const head = rows[0].head;
      if (table === "log" && head > this.#cursor) {
        const floor = rows[0].floor;
        // Revisions are dense and pruning removes the oldest: the log holds every change after
        // the cursor iff its oldest is at most cursor + 1. Otherwise read the live values.
        if (floor === null || floor > this.#cursor + 1) {
          table = "kv";
          continue;
        }
      }
      let n = 0;
      for (const r of rows) {
        const c = r.change;
        if (!c) continue;
        n++;
        this.#cursor = c.revision;
        this.#emit(c.value === null ? { type: "delete", key: c.key, revision: c.revision } : { type: "put", key: c.key, value: c.value, revision: c.revision });
      }
      if (n < PAGE_ROWS) {
        this.#cursor = Math.max(this.#cursor, head);
        this.#host.saw(head);
        return;
      }
    }
  }

  async #page(table: "kv" | "log", after: number): Promise<PageRow[]> {
    const h = this.#host;
    const rows = pageRows(await h.read("watch", h.q.page(table, this.#filter), [h.jobId, after, PAGE_ROWS, ...this.#filter.params]));
    if (rows.length === 0) throw new Discontinuity(`the job's row is gone from ${h.q.schema}.jobs`);
    this.#checkBoot(rows[0].boot);
    return rows;
  }

  async #point(): Promise<{ revision: number; value: string | null }> {
    const h = this.#host;
    const rows = await h.read("watch", h.q.point(), [h.jobId, this.#filter.params[0]]);
    if (rows.length === 0) throw new Discontinuity(`the job's row is gone from ${h.q.schema}.jobs`);
    this.#checkBoot(String(rows[0].boot));
    h.saw(rev(rows[0].head));
    const r = rows[0].revision;
    if (r === null || r === undefined) return { revision: 0, value: null };
    return { revision: rev(r), value: rows[0].value === null ? null : String(rows[0].value) };
  }
}
