/**
 * The coordinator's pass loop: a burst of events (watch deliveries, landed
 * writes, timers) asks for a pass many times and gets one, run on a
 * microtask after the burst; a pass that asks again (its own writes made
 * more work) runs again at once; one timer wakes the loop for the earliest
 * deadline any pass returned.
 *
 * Under a stream of events a microtask does not end the burst: a watch
 * hands its events over one per iteration, and a pass queued after the
 * first runs before the second is read, so a leader of tiny splits made a
 * pass per delivery (1.5 passes per split in the peers bench). A request
 * that comes within {@linkcode GATHER_MS} of the last pass's start is
 * therefore run after that much time instead: the events in between are
 * applied first and share one pass. A quiet loop still runs at once.
 *
 * @module
 */
import type { Clock } from "./types.ts";

/** How long a busy loop gathers requests before its next pass (ms). */
export const GATHER_MS = 1;

/**
 * Coalesces pass requests and keeps the single wake timer.
 *
 * @example
 * ```ts
 * import { systemClock } from "./clock.ts";
 * import { ReconcileLoop } from "./reconcile_loop.ts";
 * let passes = 0;
 * const loop = new ReconcileLoop(systemClock, () => (passes++, Infinity), () => 50, () => true);
 * loop.schedule();
 * loop.schedule(); // coalesced with the first: one pass
 * await Promise.resolve();
 * console.log(passes); // 1
 * loop.stop();
 * ```
 */
export class ReconcileLoop {
  readonly #clock: Clock;
  readonly #pass: () => number;
  readonly #onError: (e: unknown) => number;
  readonly #live: () => boolean;
  #running = false;
  #dirty = false;
  #timer: unknown;
  #at = Infinity;
  /** When the last pass started (`-Infinity`: none yet). */
  #lastPass = -Infinity;
  /** The timer of a gathered pass, while one is due. */
  #gathering: unknown;

  /**
   * `pass` runs one pass and returns when the next is due (`Infinity`: on
   * the next request); `onError` reports a pass that threw and returns the
   * delay before the next; `live` says whether a repeated pass may run.
   */
  constructor(clock: Clock, pass: () => number, onError: (e: unknown) => number, live: () => boolean) {
    this.#clock = clock;
    this.#pass = pass;
    this.#onError = onError;
    this.#live = live;
  }

  /** Asks for a pass soon (once per burst). */
  schedule(): void {
    if (this.#running) {
      this.#dirty = true;
      return;
    }
    if (this.#gathering !== undefined) return;
    if (this.#clock.now() - this.#lastPass < GATHER_MS) {
      // Busy: gather what arrives in the next moment into one pass.
      this.#gathering = this.#clock.setTimeout(() => {
        this.#gathering = undefined;
        this.schedule();
      }, GATHER_MS);
      return;
    }
    this.#running = true;
    queueMicrotask(() => {
      try {
        do {
          this.#dirty = false;
          this.#lastPass = this.#clock.now();
          const next = this.#pass();
          if (next !== Infinity) this.#wake(next);
        } while (this.#dirty && this.#live());
      } catch (e) {
        this.#wake(this.#clock.now() + this.#onError(e));
      } finally {
        this.#running = false;
      }
    });
  }

  /** Clears the wake and gather timers (the coordinator stopped). */
  stop(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    if (this.#gathering !== undefined) this.#clock.clearTimeout(this.#gathering);
    this.#timer = this.#gathering = undefined;
    this.#at = Infinity;
  }

  #wake(at: number): void {
    const clock = this.#clock;
    if (at >= this.#at && this.#timer !== undefined) return;
    if (this.#timer !== undefined) clock.clearTimeout(this.#timer);
    this.#at = at;
    this.#timer = clock.setTimeout(() => {
      this.#timer = undefined;
      this.#at = Infinity;
      this.schedule();
    }, Math.max(1, at - clock.now() + 1));
  }
}
