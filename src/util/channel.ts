/**
 * An unbounded single-consumer async queue: producers `push` without
 * waiting, one consumer iterates with `for await` or `next()`.
 *
 * @module
 */

/**
 * Unbounded async queue. `close()` ends iteration after the queued items are
 * consumed; `fail(e)` ends it with an error.
 *
 * @example
 * ```ts
 * import { Channel } from "./channel.ts";
 * const ch = new Channel<number>();
 * ch.push(1);
 * ch.close();
 * for await (const n of ch) console.log(n); // 1
 * ```
 */
export class Channel<T> implements AsyncIterable<T> {
  #items: T[] = [];
  #head = 0;
  #waiters: ((r: IteratorResult<T>) => void)[] = [];
  #rejecters: ((e: unknown) => void)[] = [];
  #closed = false;
  #error: unknown = undefined;

  /** Whether the channel was closed. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Number of queued items not yet consumed. */
  get size(): number {
    return this.#items.length - this.#head;
  }

  /** Enqueues `item`; ignored after close. */
  push(item: T): void {
    if (this.#closed) return;
    const w = this.#waiters.shift();
    if (w) {
      this.#rejecters.shift();
      w({ value: item, done: false });
      return;
    }
    this.#items.push(item);
  }

  /** Takes the next item without waiting, or `undefined` when empty. */
  tryTake(): T | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head++] = undefined as T;
    if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }

  /** Waits for the next item; `done` once closed and drained. */
  next(): Promise<IteratorResult<T>> {
    if (this.#head < this.#items.length) {
      return Promise.resolve({ value: this.tryTake() as T, done: false });
    }
    if (this.#closed) {
      if (this.#error !== undefined) return Promise.reject(this.#error);
      return Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((resolve, reject) => {
      this.#waiters.push(resolve);
      this.#rejecters.push(reject);
    });
  }

  /** Ends the channel: waiting consumers get `done`, queued items remain. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const w of this.#waiters.splice(0)) w({ value: undefined, done: true });
    this.#rejecters.length = 0;
  }

  /** Ends the channel with an error delivered to the consumer. */
  fail(error: unknown): void {
    if (this.#closed) return;
    this.#error = error;
    this.#closed = true;
    this.#waiters.length = 0;
    for (const r of this.#rejecters.splice(0)) r(error);
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => this.next(),
      return: () => {
        this.close();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
