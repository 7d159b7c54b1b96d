/**
 * What every backend's writes share: the check of a write's key and value
 * before anything is sent, and the frozen outcomes a compare-and-swap ends
 * in. One copy, so the three stores refuse the same writes with the same
 * messages.
 *
 * @module
 */
import { SplitleaseError, ValueTooLargeError } from "../errors.ts";
import { assertValidKey } from "./keys.ts";
import { type DeleteResult, MAX_VALUE_BYTES, type WriteResult } from "./store.ts";

const encoder = new TextEncoder();

/**
 * A write that lost its compare-and-swap (or found the key already there).
 *
 * @example
 * ```ts
 * import { CONFLICT } from "./write_checks.ts";
 * console.assert(!CONFLICT.ok);
 * ```
 */
export const CONFLICT: WriteResult = Object.freeze({ ok: false, conflict: true }) as WriteResult;

/**
 * A guarded delete whose revision no longer matched.
 *
 * @example
 * ```ts
 * import { DELETE_CONFLICT } from "./write_checks.ts";
 * console.assert(!DELETE_CONFLICT.ok);
 * ```
 */
export const DELETE_CONFLICT: DeleteResult = Object.freeze({ ok: false, conflict: true }) as DeleteResult;

/**
 * A delete that landed.
 *
 * @example
 * ```ts
 * import { DELETED } from "./write_checks.ts";
 * console.assert(DELETED.ok);
 * ```
 */
export const DELETED: DeleteResult = Object.freeze({ ok: true }) as DeleteResult;

/**
 * Throws unless `key` is a valid key and `value` a string of at most
 * `maxBytes` UTF-8 bytes (`InvalidKeyError`, `INVALID_ARGUMENT`,
 * `ValueTooLargeError`).
 *
 * @example
 * ```ts
 * import { assertValidWrite } from "./write_checks.ts";
 * assertValidWrite("split.a", "{}"); // ok
 * ```
 */
export function assertValidWrite(key: string, value: string, maxBytes: number = MAX_VALUE_BYTES): void {
  assertValidKey(key);
  if (typeof value !== "string") throw new SplitleaseError("INVALID_ARGUMENT", `Value for key "${key}" must be a string`);
  // Cheap bound first: a UTF-8 byte is at most 3 per UTF-16 unit here.
  if (value.length * 3 > maxBytes) {
    const size = encoder.encode(value).byteLength;
    if (size > maxBytes) throw new ValueTooLargeError(key, size, maxBytes);
  }
}
