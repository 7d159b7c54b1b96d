/**
 * Time limits for tests that wait on the system: every such wait fails
 * naming what it waited for instead of hanging the suite.
 *
 * @module
 */

/** `p`, or a rejection naming `what` after `ms`. */
export async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<T>((_, rej) => (t = setTimeout(() => rej(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms))),
    ]);
  } finally {
    clearTimeout(t);
  }
}

/**
 * One deadline for a whole test: `wait(what, p)` bounds each wait by the
 * time left, and names it when the deadline passes.
 */
export class Deadline {
  readonly #end: number;
  constructor(readonly ms: number) {
    this.#end = Date.now() + ms;
  }
  /** Milliseconds left (at least 1). */
  get left(): number {
    return Math.max(1, this.#end - Date.now());
  }
  /** `p`, or a rejection naming `what` once the test's deadline passes. */
  wait<T>(what: string, p: Promise<T>): Promise<T> {
    return withTimeout(p, this.left, `${what} (the test's ${this.ms} ms deadline)`);
  }
}
