/**
 * Timer bounds. `setTimeout` stores its delay as a signed 32-bit integer on
 * every runtime: a delay above 2^31 − 1 ms (24.8 days) overflows and the
 * timer fires at once (a drain deadline of 3e9 ms aborted every lane 9 ms
 * later). Durations from configuration and requests are bounded by
 * {@linkcode MAX_TIMER_MS}, and every timer is clamped to it.
 *
 * @module
 */

/**
 * The longest delay a timer can take: 2^31 − 1 ms (about 24.8 days).
 *
 * @example
 * ```ts
 * import { MAX_TIMER_MS } from "./timers.ts";
 * console.log(MAX_TIMER_MS); // 2147483647
 * ```
 */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * A delay every runtime's `setTimeout` honours: negative and NaN become 0,
 * anything above {@linkcode MAX_TIMER_MS} (Infinity included) becomes
 * `MAX_TIMER_MS`.
 *
 * @example
 * ```ts
 * import { clampTimerMs } from "./timers.ts";
 * clampTimerMs(3e9); // 2147483647
 * clampTimerMs(-5); // 0
 * ```
 */
export function clampTimerMs(ms: number): number {
  if (!(ms > 0)) return 0;
  return ms > MAX_TIMER_MS ? MAX_TIMER_MS : ms;
}

/**
 * Checks one duration option: a finite number of milliseconds from `min`
 * to {@linkcode MAX_TIMER_MS}. Returns the problem (naming the key and the
 * value) or `undefined`.
 *
 * @example
 * ```ts
 * import { durationIssue } from "./timers.ts";
 * durationIssue("abortGraceMs", 3e9);
 * // "abortGraceMs must be a number of milliseconds from 0 to 2147483647, got 3000000000"
 * ```
 */
export function durationIssue(key: string, value: unknown, min = 0): string | undefined {
  if (typeof value === "number" && Number.isFinite(value) && value >= min && value <= MAX_TIMER_MS) return undefined;
  const shown = typeof value === "string" ? JSON.stringify(value) : String(value);
  return `${key} must be a number of milliseconds from ${min} to ${MAX_TIMER_MS}, got ${shown}`;
}

/**
 * Resolves after `ms` milliseconds (clamped like every timer delay).
 *
 * @example
 * ```ts
 * import { sleep } from "./timers.ts";
 * await sleep(1);
 * ```
 */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, clampTimerMs(ms)));
}
