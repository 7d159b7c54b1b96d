/**
 * The coordinator's pass loop: a burst of events (watch deliveries, landed
 * writes, timers) asks for a pass many times and gets one, run on a
 * microtask after the burst; a pass that asks again (its own writes made
 * more work) runs again at once; one timer wakes the loop for the earliest
 * deadline any pass returned.
 *
 * @module
 */
import type { Clock } from "./types.ts";

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
    this.#running = true;
    queueMicrotask(() => {
      try {
        do {
          this.#dirty = false;
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

  /** Clears the wake timer (the coordinator stopped). */
  stop(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
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
