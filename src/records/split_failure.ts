/**
 * One reported failure of a split, as its record's bounded failure history
 * keeps it, and the bounds of that history.
 *
 * @module
 */
import * as z from "zod";

/**
 * One reported failure of a split (a `fail()`, a throwing `run`, a bad
 * descriptor), as kept in {@linkcode SplitRecord.failures}.
 *
 * @example
 * ```ts
 * import type { SplitFailure } from "@splitlease/splitlease/admin";
 * const f: SplitFailure = { at: Date.now(), worker: "pod-1", message: "run threw: ECONNRESET" };
 * ```
 */
export interface SplitFailure {
  /** Wall-clock time of the report (ms since the epoch; informational only). */
  at: number;
  /** Instance id of the worker that reported it. */
  worker: string;
  /** What failed, cut to {@linkcode FAILURE_MESSAGE_CHARS} characters. */
  message: string;
  /**
   * The first frames of the error's stack, when the failure was an error
   * (a throwing `run`, `lane.fail(error)`): at most {@linkcode FAILURE_STACK_LINES}
   * lines and {@linkcode FAILURE_STACK_CHARS} characters. Absent in records
   * written before it existed, which read the same.
   */
  stack?: string;
  /**
   * The source said this failure will not go away (a `PermanentFailure`,
   * `lane.fail(reason, { permanent: true })`): the split was quarantined by
   * it at once, without retries. Absent otherwise (and in records written
   * before it existed).
   */
  permanent?: true;
}

/**
 * Failures kept per split record (the oldest is dropped first).
 *
 * @example
 * ```ts
 * import { FAILURE_HISTORY } from "../records.ts";
 * console.log(FAILURE_HISTORY); // 5
 * ```
 */
export const FAILURE_HISTORY = 5;

/**
 * Longest failure message kept in the history (characters).
 *
 * @example
 * ```ts
 * import { FAILURE_MESSAGE_CHARS } from "../records.ts";
 * console.log(FAILURE_MESSAGE_CHARS); // 300
 * ```
 */
export const FAILURE_MESSAGE_CHARS = 300;

/**
 * Most stack lines kept per failure in the history.
 *
 * @example
 * ```ts
 * import { FAILURE_STACK_LINES } from "../records.ts";
 * console.log(FAILURE_STACK_LINES); // 8
 * ```
 */
export const FAILURE_STACK_LINES = 8;

/**
 * Most stack characters kept per failure in the history: with
 * {@linkcode FAILURE_HISTORY} failures a record carries at most 4 KB of
 * stacks (every commit rewrites it, and the leader decodes it).
 *
 * @example
 * ```ts
 * import { FAILURE_STACK_CHARS } from "../records.ts";
 * console.log(FAILURE_STACK_CHARS); // 800
 * ```
 */
export const FAILURE_STACK_CHARS = 800;

/** Schema of one failure of a split record's history. */
export const FailureSchema: z.ZodType<SplitFailure> = z.object({
  at: z.number(),
  worker: z.string(),
  message: z.string(),
  stack: z.string().optional(),
  permanent: z.literal(true).optional(),
});
