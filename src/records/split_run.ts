/**
 * What a split did in an earlier run of its job, as its record's bounded
 * run history keeps it.
 *
 * @module
 */
import * as z from "zod";
import { count } from "./layout.ts";
import type { SplitStatus } from "./split_status.ts";

/**
 * Earlier runs a split record keeps in its history (the oldest is dropped first).
 *
 * @example
 * ```ts
 * import { SPLIT_RUN_HISTORY } from "../records.ts";
 * console.log(SPLIT_RUN_HISTORY); // 4
 * ```
 */
export const SPLIT_RUN_HISTORY = 4;

/**
 * What one split did in an earlier run of its job: how it ended, at which
 * epoch and after how many attempts, the records it counted, when it
 * completed and its last failure.
 *
 * @example
 * ```ts
 * import type { SplitRun } from "@splitlease/splitlease/admin";
 * const r: SplitRun = { run: 1, status: "completed", epoch: 3, attempts: 1, records: 40_000, completedAt: Date.now() };
 * ```
 */
export interface SplitRun {
  /** The run. */
  run: number;
  /** How the split ended in it. */
  status: SplitStatus;
  /** Its last epoch in that run. */
  epoch: number;
  /** Attempts charged in that run. */
  attempts: number;
  /** Records its owners reported in that run. */
  records?: number;
  /** When it completed in that run (wall clock). */
  completedAt?: number;
  /** Its last failure in that run (cut to {@linkcode FAILURE_MESSAGE_CHARS} characters). */
  lastFailure?: string;
  /** That failure was permanent. */
  permanent?: true;
}

/** Schema of one entry of a split record's run history. */
export const SplitRunSchema: z.ZodType<SplitRun> = z.object({
  run: z.number().int().min(1),
  status: z.enum(["runnable", "completed", "quarantined", "cancelled"]),
  epoch: count,
  attempts: count,
  records: count.optional(),
  completedAt: z.number().optional(),
  lastFailure: z.string().optional(),
  permanent: z.literal(true).optional(),
});
