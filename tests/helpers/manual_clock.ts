/**
 * A hand-driven {@linkcode Clock} for tests: time moves only on `advance`.
 * @module
 */
import type { Clock } from "../../src/coordinator/types.ts";

interface Timer {
  id: number;
  at: number;
  fn: () => void;
}

/** Lets pending promise callbacks run (several macrotask turns). */
export async function settle(turns = 5): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((r) => setTimeout(r, 0));
}

/** A manual clock: `advance(ms)` fires due timers in time order, settling promises between them. */
export class ManualClock implements Clock {
  #now = 0;
  #wall = 1_700_000_000_000;
  #timers: Timer[] = [];
  #seq = 0;

  now(): number {
    return this.#now;
  }
  wallNow(): number {
    return this.#wall + this.#now;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const t = { id: ++this.#seq, at: this.#now + Math.max(0, ms), fn };
    this.#timers.push(t);
    return t.id;
  }
  clearTimeout(handle: unknown): void {
    this.#timers = this.#timers.filter((t) => t.id !== handle);
  }
  /** Timers not yet fired. */
  get pending(): number {
    return this.#timers.length;
  }
  /** Moves time forward by `ms`, firing every timer that falls due. */
  async advance(ms: number): Promise<void> {
    const end = this.#now + ms;
    await settle();
    for (;;) {
      this.#timers.sort((a, b) => a.at - b.at || a.id - b.id);
      const t = this.#timers[0];
      if (!t || t.at > end) break;
      this.#timers.shift();
      this.#now = t.at;
      t.fn();
      await settle();
    }
    this.#now = end;
    await settle();
  }
}
