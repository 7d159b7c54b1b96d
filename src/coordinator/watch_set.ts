/**
 * A coordinator's watches: opens several store watches, hands every event to
 * one consumer, and resolves once each delivered its snapshot. A snapshot
 * that makes no progress for a while is started over with a fresh watch (a
 * 100k-key snapshot is streamed: only a stall counts, never its length).
 *
 * @module
 */
import { StoreUnavailableError } from "../errors.ts";
import type { Watch, WatchEvent } from "../store/store.ts";
import type { Core } from "./core.ts";

/** Receives every event of every watch of a set, tagged with its filter. */
export type WatchConsumer = (filter: string, ev: WatchEvent, live: boolean) => void;

/** Several watches feeding one consumer. */
export class WatchSet {
  readonly #core: Core;
  readonly #consume: WatchConsumer;
  #watches: Watch[] = [];
  #stopped = false;
  /** The current watch of each filter, and the revision of the last put or delete applied from it. */
  #current = new Map<string, { watch: Watch; applied: number }>();

  /** `consume` gets every event; `live` is true once that watch's first snapshot is in. */
  constructor(core: Core, consume: WatchConsumer) {
    this.#core = core;
    this.#consume = consume;
  }

  /**
   * Opens a watch per filter; resolves once each delivered its snapshot. A
   * store that never finishes one fails after `limitMs` (default `2 ×
   * leaseMs`, at least 30 s) instead of hanging; `Infinity` sets no limit
   * for the whole snapshot (the leader's, which grows with the job: a
   * snapshot that stops making progress is started over either way).
   */
  async open(filters: readonly string[], limitMs?: number): Promise<void> {
    const { clock } = this.#core;
    const limit = limitMs ?? this.#core.timings.watchSnapshotLimitMs;
    let timer: unknown;
    const timeout = new Promise<never>((_, reject) => {
      if (limit === Infinity) return;
      timer = clock.setTimeout(
        () => reject(new StoreUnavailableError("watch", limit, { detail: "the initial snapshot never completed" })),
        limit,
      );
    });
    try {
      await Promise.race([Promise.all(filters.map((f) => this.#open(f))), timeout]);
    } finally {
      clock.clearTimeout(timer);
    }
  }

  /**
   * Whether every change to `filter`'s keys made before this call has been
   * applied (see `Watch.position`); `undefined` when the store cannot tell.
   */
  async caughtUp(filter: string): Promise<boolean | undefined> {
    const cur = this.#current.get(filter);
    if (!cur?.watch.position) return undefined;
    const at = await cur.watch.position();
    return this.#current.get(filter) === cur && cur.applied >= at;
  }

  /** Stops every watch. */
  async stop(): Promise<void> {
    this.#stopped = true;
    const ws = this.#watches.splice(0);
    await Promise.all(ws.map((w) => w.stop()));
  }

  /**
   * Opens the watch over `filter` and resolves once its snapshot is in. A
   * snapshot with no event for `max(2 × opTimeoutMs, 2 s)` is started over
   * (what it delivered so far is pruned by the new snapshot).
   */
  async #open(filter: string): Promise<void> {
    const { clock, config, log } = this.#core;
    const stallMs = Math.max(2 * config.opTimeoutMs, 2000);
    for (let attempt = 1; !this.#stopped; attempt++) {
      const w = this.#core.store.watch(filter);
      this.#watches.push(w);
      this.#current.set(filter, { watch: w, applied: 0 });
      let lastEvent = clock.now();
      let timer: unknown;
      const stuck = new Promise<"stuck">((res) => {
        const check = () => {
          const idle = clock.now() - lastEvent;
          if (idle >= stallMs) res("stuck");
          else timer = clock.setTimeout(check, stallMs - idle);
        };
        timer = clock.setTimeout(check, stallMs);
      });
      const outcome = await Promise.race([this.#run(filter, w, () => (lastEvent = clock.now())), stuck])
        .finally(() => clock.clearTimeout(timer));
      if (outcome !== "stuck") return;
      log("warn", "Watch snapshot stalled; starting it over", { filter, attempt, afterMs: stallMs });
      const i = this.#watches.indexOf(w);
      if (i >= 0) this.#watches.splice(i, 1);
      await w.stop();
      if (this.#stopped) return;
      this.#consume(filter, { type: "reset", reason: "snapshot stalled" }, false);
    }
  }

  /** Feeds the events of `w`; resolves at its first `ready`, rejects if it fails before. */
  #run(filter: string, w: Watch, progress: () => void): Promise<void> {
    const { log } = this.#core;
    return new Promise<void>((ready, fail) => {
      let live = false;
      (async () => {
        const cur = this.#current.get(filter)!;
        for await (const ev of w) {
          if (this.#stopped) return;
          progress();
          if ((ev.type === "put" || ev.type === "delete") && ev.revision > cur.applied) cur.applied = ev.revision;
          if (ev.type === "ready" && !live) {
            live = true;
            this.#consume(filter, ev, false);
            ready();
            continue;
          }
          if (ev.type === "reset") log("warn", "Watch re-established", { filter, reason: ev.reason });
          this.#consume(filter, ev, live);
        }
      })().catch((e) => {
        if (!live) fail(e);
        else if (!this.#stopped) log("error", "Watch failed", { filter, error: String(e) });
      });
    });
  }
}
