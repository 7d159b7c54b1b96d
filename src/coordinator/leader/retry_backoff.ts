/**
 * Retry backoff of failed splits (docs/DESIGN.md, "Retry backoff"): a split
 * its owner failed (an attempt charged), or handed back with a problem that
 * is not its fault (a failure report, no attempt: its spec missing), is
 * offered again only after `retryBackoffMs × 2^(n−1)` with ±25% jitter, at
 * most `retryBackoffMaxMs`. It lives in the leader's memory: a new leader
 * offers waiting splits at once. A permanent failure never waits here: its
 * write quarantines the split (`failRecord`), and a quarantined split is
 * neither backed off nor offered (the `else` branch of `onSplit` forgets it).
 *
 * @module
 */
import type { SplitRecord } from "../../records.ts";
import type { Core } from "../core.ts";

/** A split waiting out its backoff. */
export interface Waiting {
  /** Leader time it may be offered again. */
  at: number;
  /** Its attempts when it started waiting. */
  attempts: number;
}

/**
 * The leader's waiting splits.
 *
 * @example
 * ```ts
 * import type { RetryBackoff } from "./retry_backoff.ts";
 * const offerable = (b: RetryBackoff, id: string) => !b.has(id);
 * ```
 */
export class RetryBackoff {
  readonly #core: Core;
  /** Failed splits waiting out their backoff, by id. */
  readonly waiting: Map<string, Waiting> = new Map();
  /** Consecutive hand-backs with a problem, per split. */
  readonly #handBacks = new Map<string, number>();

  constructor(core: Core) {
    this.#core = core;
  }

  /** Whether `id` is waiting (not to be offered). */
  has(id: string): boolean {
    return this.waiting.has(id);
  }

  /** A split record changed from `prev` to `rec`: starts, keeps or ends its wait. */
  onSplit(id: string, prev: SplitRecord | undefined, rec: SplitRecord | undefined): void {
    const o = rec?.owner;
    const released = rec && !o && rec.status === "runnable" && prev?.owner && rec.epoch === prev.epoch;
    const failed = released && rec.attempts > prev.attempts;
    const handedBack = released && !failed && newFailure(prev, rec);
    if (failed || handedBack) {
      const n = failed ? rec.attempts : (this.#handBacks.get(id) ?? 0) + 1;
      if (handedBack) this.#handBacks.set(id, n);
      const { retryBackoffMs, retryBackoffMaxMs } = this.#core.config;
      const base = retryBackoffMs * 2 ** Math.min(n - 1, 30);
      // Jitter within the cap: never more than retryBackoffMaxMs.
      const delay = Math.min(retryBackoffMaxMs, Math.round(base * (0.75 + 0.5 * this.#core.random())));
      if (delay > 0) this.waiting.set(id, { at: this.#core.clock.now() + delay, attempts: rec.attempts });
    } else if (rec?.status !== "runnable" || o) {
      this.waiting.delete(id);
      if (!o) this.#handBacks.delete(id);
    }
  }

  /** Ends the waits that ran out by `now`, calling `ready` for each; returns when the next runs out. */
  expire(now: number, ready: (id: string) => void): number {
    let next = Infinity;
    for (const [id, b] of this.waiting) {
      if (b.at <= now) {
        this.waiting.delete(id);
        ready(id);
      } else next = Math.min(next, b.at);
    }
    return next;
  }
}

/** Whether `next` carries a failure report that `prev` did not (the history grew or its last entry changed). */
function newFailure(prev: SplitRecord, next: SplitRecord): boolean {
  const a = prev.failures?.at(-1), b = next.failures?.at(-1);
  if (!b) return false;
  return !a || a.at !== b.at || a.worker !== b.worker || a.message !== b.message || next.failures!.length !== prev.failures!.length;
}
