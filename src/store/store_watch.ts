/**
 * The lifecycle every backend's watch shares: the event channel, `stop`
 * (idempotent, ending the iteration), the `reset` owed once anything was
 * handed out, and the replay rule of a snapshot (a delete is told only for
 * a key the snapshot handed out). A backend's watch extends
 * {@linkcode StoreWatch} and supplies how it reads; a backend that reads by
 * revision extends {@linkcode PolledWatch} (`./polled_watch.ts`) instead,
 * which also owns the loop.
 *
 * @module
 */
import type { Watch, WatchEvent } from "./store.ts";
import { Channel } from "../util/channel.ts";

/**
 * A watch of one filter (see the `Watch` contract in store.ts): what a
 * backend's watch must not get wrong in its own way.
 *
 * @example
 * ```ts
 * import { StoreWatch } from "./store_watch.ts";
 * class OneShot extends StoreWatch {
 *   constructor() {
 *     super();
 *     this.emit({ type: "ready" });
 *   }
 *   protected onStop(): void {}
 * }
 * const w = new OneShot();
 * for await (const e of w) if (e.type === "ready") break;
 * await w.stop();
 * ```
 */
export abstract class StoreWatch implements Watch {
  readonly #events = new Channel<WatchEvent>();
  #stopped = false;
  /** Whether anything was handed out since the last reset (a reset is owed before a new snapshot). */
  #owed = false;
  #delivered = 0;

  /** Whether the watch was stopped (by its consumer or its store's close). */
  protected get stopped(): boolean {
    return this.#stopped;
  }

  /** Revision of the last put or delete handed out (0 before the first). */
  protected get delivered(): number {
    return this.#delivered;
  }

  /** Called once when the watch stops, before the iteration ends: release what the backend holds for it. */
  protected abstract onStop(): void;

  /** Called for the revision of every put and delete handed out (a backend's `seen`); nothing by default. */
  protected onRevision(_revision: number): void {}

  /** Hands `e` to the consumer (nothing once stopped). */
  protected emit(e: WatchEvent): void {
    if (this.#stopped) return;
    if (e.type === "put" || e.type === "delete") {
      if (e.revision > this.#delivered) this.#delivered = e.revision;
      this.onRevision(e.revision);
    }
    this.#owed = true;
    this.#events.push(e);
  }

  /**
   * The watch starts over (a reconnect it cannot bridge, a restarted
   * server): `reset` is handed out when anything was since the last one,
   * so that the consumer drops what it derived before the new snapshot.
   */
  protected owedReset(reason: string): void {
    if (!this.#owed) return;
    this.#owed = false;
    this.#events.push({ type: "reset", reason });
  }

  /**
   * One change of a snapshot's replay: a value is a `put` (and its key is
   * remembered in `seen`), a delete marker is told only for a key the
   * replay handed out (a key deleted before the watch started is absent,
   * not deleted).
   */
  protected replayed(seen: Set<string>, key: string, value: string | null, revision: number): void {
    if (value !== null) {
      seen.add(key);
      this.emit({ type: "put", key, value, revision });
    } else if (seen.delete(key)) this.emit({ type: "delete", key, revision });
  }

  /** One live change after the snapshot. */
  protected changed(key: string, value: string | null, revision: number): void {
    this.emit(value === null ? { type: "delete", key, revision } : { type: "put", key, value, revision });
  }

  [Symbol.asyncIterator](): AsyncIterator<WatchEvent> {
    return this.#events[Symbol.asyncIterator]();
  }

  /** Stops the watch; iteration ends. Idempotent. */
  stop(): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    this.#stopped = true;
    this.onStop();
    this.#events.close();
    return Promise.resolve();
  }

  /** Stops the watch (for `await using`). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }
}
