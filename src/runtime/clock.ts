/**
 * The system clock: `performance.now()` for monotonic time, `Date.now()` for
 * wall time and the global timers.
 *
 * @module
 */
import type { Clock } from "../coordinator/types.ts";

/**
 * A {@linkcode Clock} backed by the platform: monotonic `performance.now()`,
 * wall-clock `Date.now()` and the global `setTimeout` / `clearTimeout`.
 *
 * @example
 * ```ts
 * import { systemClock } from "@splitlease/splitlease";
 * const t0 = systemClock.now();
 * const h = systemClock.setTimeout(() => console.log(systemClock.now() - t0), 10);
 * systemClock.clearTimeout(h);
 * ```
 */
export const systemClock: Clock = {
  now: (): number => performance.now(),
  wallNow: (): number => Date.now(),
  setTimeout: (fn: () => void, ms: number): unknown => setTimeout(fn, ms),
  clearTimeout: (handle: unknown): void => clearTimeout(handle as ReturnType<typeof setTimeout>),
};
