/**
 * A watch for backends that can read by revision: the backend supplies a
 * snapshot (its live values after a revision, in revision order, a page at
 * a time) and the changes after a revision (its change log), or for an
 * exact key one point read; this class does everything else. It hands out
 * the snapshot and `ready`, then reads every change after its cursor each
 * time it is woken (a notification, or its poll interval in case one was
 * missed). When the log no longer reaches back to the cursor it reads the
 * live values after it instead (the last change of each key in revision
 * order: superseded ones are skipped, as the watch contract allows).
 *
 * An outage leaves the cursor where it was: the next read resumes from it,
 * since revisions are in commit order and "after revision r" misses
 * nothing. Only a server that restarted or changed (its incarnation, read
 * with every page, differs: a crash may have lost commits that were
 * already read), or a job whose records are gone, cannot prove that; the
 * watch then emits `reset`, a fresh snapshot and `ready`.
 *
 * @module
 */
import { SplitleaseError } from "../errors.ts";
import { StoreWatch } from "./store_watch.ts";

/** Rows a backend reads per page of a snapshot or a catch-up. */
export const PAGE_ROWS = 1000;

/**
 * One change a backend read: a key's value (`null` for a delete) at a revision.
 *
 * @example
 * ```ts
 * import type { FeedChange } from "./polled_watch.ts";
 * const c: FeedChange = { key: "split.a", value: "{}", revision: 12 };
 * ```
 */
export interface FeedChange {
  /** The key. */
  key: string;
  /** The value written, or `null` for a delete. */
  value: string | null;
  /** The revision of the change. */
  revision: number;
}

/**
 * A page of changes under a prefix, in revision order.
 *
 * @example
 * ```ts
 * import type { FeedPage } from "./polled_watch.ts";
 * const page: FeedPage = { changes: [], head: 40, boot: "run-1", floor: 1 };
 * ```
 */
export interface FeedPage {
  /** At most {@linkcode PAGE_ROWS} changes after the revision asked for. */
  changes: FeedChange[];
  /** The job's last revision when the page was read (every change up to it is committed). */
  head: number;
  /** The server's incarnation (its start time, its run id): a different one means commits read before may be gone. */
  boot: string;
  /** Of a log page: the oldest revision the log still holds (`null` when it is empty). */
  floor?: number | null;
  /**
   * A backend that filters what it scans (Redis scans the job's changes and
   * keeps those under the prefix) and stopped before the end without
   * filling the page: every change up to this revision was looked at, so
   * the next page starts after it.
   */
  through?: number;
}

/**
 * An exact key's state as one point read sees it.
 *
 * @example
 * ```ts
 * import type { FeedPoint } from "./polled_watch.ts";
 * const p: FeedPoint = { revision: 0, value: null, head: 12, boot: "run-1" };
 * ```
 */
export interface FeedPoint {
  /** Revision of the key's last change, 0 when it has none. */
  revision: number;
  /** Its value, `null` when deleted or absent. */
  value: string | null;
  /** The job's last revision. */
  head: number;
  /** The server's incarnation. */
  boot: string;
}

/**
 * Thrown by a backend's read when the watch cannot go on from its cursor
 * (the job's records are gone): the watch starts over with `reset`.
 *
 * @example
 * ```ts
 * import { WatchDiscontinuity } from "./polled_watch.ts";
 * throw new WatchDiscontinuity("the job's row is gone");
 * ```
 */
export class WatchDiscontinuity extends Error {
  override name = "WatchDiscontinuity";
}

/**
 * Timings of a {@linkcode PolledWatch}.
 *
 * @example
 * ```ts
 * import type { PolledWatchTimings } from "./polled_watch.ts";
 * const t: PolledWatchTimings = { opTimeoutMs: 5000, pollIntervalMs: 1000 };
 * ```
 */
export interface PolledWatchTimings {
  /** How long to wait for the wake-up source before the first snapshot. */
  opTimeoutMs: number;
  /** The fallback poll: how long a watch sleeps without a wake-up. */
  pollIntervalMs: number;
}

/**
 * The loop of a watch that reads by revision (see the module doc). A
 * backend implements `point` (exact keys), `page` (prefixes), `positionAfter`,
 * `restarted` (the message of a changed incarnation) and `onStop`, and
 * calls {@linkcode PolledWatch.start} at the end of its constructor.
 *
 * @example
 * ```ts ignore
 * class RedisWatch extends PolledWatch {
 *   protected point() { ... }              // HGET + ZSCORE of the key
 *   protected page(from, after) { ... }     // ZRANGEBYSCORE or XRANGE after `after`
 * }
 * ```
 */
export abstract class PolledWatch extends StoreWatch {
  /** The key filter watched. */
  readonly filter: string;
  readonly #timings: PolledWatchTimings;
  readonly #exact: boolean;
  /** Changes up to this revision have been read (for an exact key: the revision of its last change read). */
  #cursor = 0;
  /** Incarnation of the server the cursor was read from. */
  #boot: string | undefined;
  #live = false;
  /** A snapshot under way: the keys it handed out and the revision it read up to. */
  #snap: { seen: Set<string>; after: number } | undefined;
  /** A wake-up arrived while reading: read again before sleeping. */
  #woken = false;
  #wakeUp: (() => void) | undefined;

  /** A watch of `filter`; `exact` when it names one key. */
  constructor(filter: string, exact: boolean, timings: PolledWatchTimings) {
    super();
    this.filter = filter;
    this.#exact = exact;
    this.#timings = timings;
  }

  /** The exact key's state (one read; `WatchDiscontinuity` when the job is gone). */
  protected abstract point(): Promise<FeedPoint>;
  /**
   * Changes under the prefix after `after`, in revision order, at most
   * {@linkcode PAGE_ROWS}: `"live"` reads each key's last change (its value
   * or delete marker), `"log"` every change the log holds (with its floor).
   */
  protected abstract page(from: "live" | "log", after: number): Promise<FeedPage>;
  /** Revision of the last change under the filter after `after`, `undefined` when there is none. */
  protected abstract positionAfter(after: number): Promise<number | undefined>;
  /** The message of a `reset` for a server whose incarnation changed. */
  protected abstract restarted(): string;
  /** A revision the watch read (the job's head): the store's `seen`. */
  protected abstract saw(revision: number): void;

  protected override onRevision(revision: number): void {
    this.saw(revision);
  }

  /** The revision this watch has read changes up to (an exact key's: its last change read). */
  get readUpTo(): number {
    return this.#cursor;
  }

  /** Something under the filter may have changed: read now. */
  wake(): void {
    this.#woken = true;
    this.#wakeUp?.();
  }

  /** Starts the loop once `listening` (the wake-up source) took effect, or after the op timeout. */
  protected start(listening: Promise<void>): void {
    void this.#run(listening);
  }

  protected override onStop(): void {
    this.#wakeUp?.();
  }

  /**
   * See `Watch.position`: the last change under the filter after what this
   * watch has read (one read), else the last it handed out.
   */
  async position(): Promise<number> {
    if (!this.#live || this.stopped) return Infinity;
    const delivered = this.delivered;
    const at = await this.positionAfter(this.#cursor);
    return at ?? delivered;
  }

  async #run(listening: Promise<void>): Promise<void> {
    // Listen before the snapshot, so no write after it goes unnoticed (bounded: a listener that
    // cannot connect leaves the watch to its poll).
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([listening, new Promise<void>((r) => (timer = setTimeout(r, this.#timings.opTimeoutMs)))]);
    clearTimeout(timer);
    let backoff = 100;
    while (!this.stopped) {
      this.#woken = false;
      try {
        if (!this.#live) await this.#snapshot();
        await this.#catchUp();
        backoff = 100;
      } catch (e) {
        if (this.stopped) return;
        if (e instanceof SplitleaseError && e.code === "CLOSED") return void this.stop();
        if (e instanceof WatchDiscontinuity) {
          this.#restart(e.message);
          continue;
        }
        // An outage: the cursor stands, the next read resumes from it.
        await this.#sleep(backoff);
        backoff = Math.min(backoff * 2, 2000);
        continue;
      }
      if (!this.#woken) await this.#sleep(this.#timings.pollIntervalMs);
    }
  }

  /** Sleeps for `ms` or until woken or stopped. */
  #sleep(ms: number): Promise<void> {
    if (this.#woken || this.stopped) return Promise.resolve();
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
    this.owedReset(reason);
  }

  #checkBoot(boot: string): void {
    if (this.#boot === undefined) this.#boot = boot;
    else if (boot !== this.#boot) throw new WatchDiscontinuity(this.restarted());
  }

  async #point(): Promise<FeedPoint> {
    const p = await this.point();
    this.#checkBoot(p.boot);
    this.saw(p.head);
    return p;
  }

  async #page(from: "live" | "log", after: number): Promise<FeedPage> {
    const p = await this.page(from, after);
    this.#checkBoot(p.boot);
    return p;
  }

  /**
   * The live values under the filter in revision order, then `ready`.
   * Resumable: a page that fails (an outage) is read again from where the
   * snapshot stood, so the keys it handed out are still tracked and a key
   * deleted meanwhile is still told.
   */
  async #snapshot(): Promise<void> {
    if (this.#exact) {
      const p = await this.#point();
      if (p.revision > 0 && p.value !== null) this.emit({ type: "put", key: this.filter, value: p.value, revision: p.revision });
      this.#cursor = p.revision;
    } else {
      // Pages in revision order: a key changed while paging reappears in a later page at its new
      // revision (a delete as a marker), so the last page's head is a revision the snapshot is
      // complete at.
      const snap = (this.#snap ??= { seen: new Set(), after: 0 });
      while (true) {
        const page = await this.#page("live", snap.after);
        for (const c of page.changes) {
          snap.after = c.revision;
          this.replayed(snap.seen, c.key, c.value, c.revision);
        }
        if (page.through !== undefined) {
          snap.after = Math.max(snap.after, page.through);
          continue;
        }
        if (page.changes.length < PAGE_ROWS) {
          this.#cursor = page.head;
          break;
        }
      }
      this.#snap = undefined;
      this.saw(this.#cursor);
    }
    this.#live = true;
    this.emit({ type: "ready" });
  }

  /** Reads every change after the cursor. */
  async #catchUp(): Promise<void> {
    if (this.#exact) {
      const p = await this.#point();
      if (p.revision > this.#cursor) {
        this.changed(this.filter, p.value, p.revision);
        this.#cursor = p.revision;
      }
      return;
    }
    let from: "log" | "live" = "log";
    while (!this.stopped) {
      const page = await this.#page(from, this.#cursor);
      if (from === "log" && page.head > this.#cursor) {
        const floor = page.floor ?? null;
        // Revisions are dense and trimming removes the oldest: the log holds every change after
        // the cursor iff its oldest is at most cursor + 1. Otherwise read the live values.
        if (floor === null || floor > this.#cursor + 1) {
          from = "live";
          continue;
        }
      }
      for (const c of page.changes) {
        this.#cursor = c.revision;
        this.changed(c.key, c.value, c.revision);
      }
      if (page.through !== undefined) {
        this.#cursor = Math.max(this.#cursor, page.through);
        continue;
      }
      if (page.changes.length < PAGE_ROWS) {
        this.#cursor = Math.max(this.#cursor, page.head);
        this.saw(page.head);
        return;
      }
    }
  }
}
