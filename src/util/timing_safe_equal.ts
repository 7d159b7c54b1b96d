/**
 * A comparison of secrets that does not leak where they differ.
 *
 * @module
 */

const encoder = new TextEncoder();

/**
 * Compares two strings in time that depends only on the expected value's
 * length, not on where they differ.
 *
 * @example
 * ```ts
 * import { timingSafeEqual } from "./timing_safe_equal.ts";
 * timingSafeEqual("s3cret", "s3cret"); // true
 * ```
 */
export function timingSafeEqual(given: string, expected: string): boolean {
  const a = encoder.encode(given);
  const b = encoder.encode(expected);
  let diff = a.length ^ b.length;
  for (let i = 0; i < b.length; i++) diff |= (i < a.length ? a[i] : 0) ^ b[i];
  return diff === 0;
}

