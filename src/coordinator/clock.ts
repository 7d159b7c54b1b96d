/**
 * Clocks: the time source every part is handed (`Clock`), the system clock,
 * and a manual clock for deterministic tests.
 *
 * @module
 */
import { clampTimerMs } from "../util/timers.ts";

/**
 * Time source: a monotonic `now()` plus timers. Injected so tests can drive
 * time by hand.
  *
  * @example
  * ```ts
  * import { systemClock } from "@splitlease/splitlease/testing";
  * import { type Clock } from "@splitlease/splitlease/testing";
  * const clock: Clock = systemClock;
  * const t0 = clock.now();
  * ```
 */
export interface Clock {
  /** Monotonic milliseconds (never goes back). */
  now(): number;
  /** Wall-clock milliseconds since the epoch (informational fields only). */
  wallNow(): number;
  /** Runs `fn` after `ms`; returns a handle for {@linkcode Clock.clearTimeout}. */
  setTimeout(fn: () => void, ms: number): unknown;
  /** Cancels a timer. */
  clearTimeout(handle: unknown): void;
}

/**
 * The real clock: `performance.now()` for monotonic time, `Date.now()` for
 * wall time, and the global timers. Delays are clamped to 0..2^31 − 1 ms:
 * a longer one would overflow and fire at once.
 *
 * @example
 * ```ts
 * import { systemClock } from "@splitlease/splitlease/testing";
 * const t0 = systemClock.now();
 * ```
 */
export const systemClock: Clock = {
  now: () => performance.now(),
  wallNow: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, clampTimerMs(ms)),
  clearTimeout: (h) => clearTimeout(h as number),
};

interface ManualTimer {
  at: number;
  seq: number;
  fn: () => void;
}

/**
 * A clock that only moves when told to. `advance(ms)` fires due timers in
 * time order and lets pending promise chains settle after each one, so code
 * driven by in-memory I/O runs deterministically.
 *
 * @example
 * ```ts
 * import { ManualClock } from "@splitlease/splitlease/testing";
 * const clock = new ManualClock();
 * let fired = false;
 * clock.setTimeout(() => { fired = true; }, 100);
 * await clock.advance(100);
 * console.log(fired); // true
 * ```
 */
export class ManualClock implements Clock {
  #now: number;
  #wall: number;
  #seq = 0;
  #timers = new Map<number, ManualTimer>();

  /** Starts at monotonic time `start` (default 0). */
  constructor(start = 0, wallStart = 1_800_000_000_000) {
    this.#now = start;
    this.#wall = wallStart;
  }

  /** Current monotonic time. */
  now(): number {
    return this.#now;
  }

  /** Current wall time (moves with the monotonic time). */
  wallNow(): number {
    return this.#wall + this.#now;
  }

  /** Schedules `fn` at `now() + ms`. */
  setTimeout(fn: () => void, ms: number): unknown {
    const seq = ++this.#seq;
    this.#timers.set(seq, { at: this.#now + Math.max(0, ms), seq, fn });
    return seq;
  }

  /** Cancels a timer. */
  clearTimeout(handle: unknown): void {
    this.#timers.delete(handle as number);
  }

  /** Number of pending timers. */
  get pending(): number {
    return this.#timers.size;
  }

  /** Lets pending promise chains (and real zero-delay tasks) settle. */
  async settle(rounds = 3): Promise<void> {
    for (let i = 0; i < rounds; i++) await macrotask();
  }

  /** Moves time forward by `ms`, firing due timers in order. */
  async advance(ms: number): Promise<void> {
    const target = this.#now + ms;
    await this.settle();
    for (;;) {
      let next: ManualTimer | undefined;
      for (const t of this.#timers.values()) {
        if (t.at <= target && (!next || t.at < next.at || (t.at === next.at && t.seq < next.seq))) next = t;
      }
      if (!next) break;
      this.#timers.delete(next.seq);
      this.#now = Math.max(this.#now, next.at);
      next.fn();
      await this.settle();
    }
    this.#now = target;
    await this.settle();
  }

  /** Advances in `step` increments until `cond()` holds or `maxMs` passed; returns whether it held. */
  async advanceUntil(cond: () => boolean, maxMs: number, step = 10): Promise<boolean> {
    const end = this.#now + maxMs;
    while (!cond()) {
      if (this.#now >= end) return false;
      await this.advance(Math.min(step, end - this.#now));
    }
    return true;
  }
}

/**
 * Yields one macrotask turn. A MessageChannel round trip is not clamped like
 * nested zero-delay timers (4 ms after a few levels), which keeps simulated
 * time cheap.
 */
function macrotask(): Promise<void> {
  return new Promise((resolve) => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => {
      ch.port1.close();
      resolve();
    };
    ch.port2.postMessage(null);
  });
}
