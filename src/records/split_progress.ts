/**
 * The committed progress of a split (watermark, state, the source's estimate
 * of the work left) and its schema, as both `split.<split>` and
 * `prog.<split>` carry it.
 *
 * @module
 */
import * as z from "zod";
import { json, type Json } from "./layout.ts";

/**
 * A source's estimate of the work left in a split, committed with its
 * progress: `left` of `total` units remain (`0 <= left <= total`, `total >
 * 0`); with `unit: "fraction"` the total is 1. The fleet page shows the
 * fraction done (`1 - left / total`) and counts it in the job's ETA; it is
 * the same estimate a straggler split would be judged by. Optional.
 *
 * @example
 * ```ts
 * import type { SplitEstimate } from "@splitlease/splitlease";
 * const e: SplitEstimate = { left: 3_000_000, total: 8_000_000, unit: "bytes" };
 * ```
 */
export interface SplitEstimate {
  /** Units of work left. */
  left: number;
  /** Units of work in the whole split. */
  total: number;
  /** What a unit is: bytes, ids (rows, keys) or a fraction (total 1). */
  unit: "bytes" | "ids" | "fraction";
}

/** Units a {@linkcode SplitEstimate} counts in. */
export const ESTIMATE_UNITS: readonly SplitEstimate["unit"][] = ["bytes", "ids", "fraction"];

/** Why an estimate is malformed (a sentence), or `null` when it is valid. */
export function estimateProblem(e: unknown): string | null {
  if (typeof e !== "object" || e === null || Array.isArray(e)) return "must be an object { left, total, unit }";
  const { left, total, unit } = e as Record<string, unknown>;
  if (!ESTIMATE_UNITS.includes(unit as SplitEstimate["unit"])) return `unit must be one of ${ESTIMATE_UNITS.join(", ")}`;
  if (typeof total !== "number" || !Number.isFinite(total) || !(total > 0)) return "total must be a finite number above 0";
  if (unit === "fraction" && total !== 1) return "total must be 1 when unit is fraction";
  if (typeof left !== "number" || !Number.isFinite(left) || left < 0 || left > total) return "left must be a number from 0 to total";
  return null;
}

/**
 * Committed progress of a split: an ordered watermark, opaque state and,
 * optionally, an estimate of the work left.
 *
 * @example
 * ```ts
 * import type { SplitProgress } from "@splitlease/splitlease";
 * const p: SplitProgress = { watermark: 1200, state: { object: 3, offset: 4096 }, estimate: { left: 0.4, total: 1, unit: "fraction" } };
 * ```
 */
export interface SplitProgress {
  /** Ordered position (number or string); never regresses. */
  watermark?: number | string;
  /** Opaque source state to resume from. */
  state?: Json;
  /** The source's estimate of the work left (kept until a later commit replaces it). */
  estimate?: SplitEstimate;
}

const EstimateSchema: z.ZodType<SplitEstimate> = z.object({
  left: z.number(),
  total: z.number(),
  unit: z.enum(["bytes", "ids", "fraction"]),
}).refine((e) => estimateProblem(e) === null, { message: "malformed estimate (0 <= left <= total, total > 0, total 1 for a fraction)" });

/** Schema of split progress. */
export const ProgressSchema: z.ZodType<SplitProgress> = z.object({
  watermark: z.union([z.number().finite(), z.string()]).optional(),
  state: json.optional(),
  estimate: EstimateSchema.optional(),
});
