/**
 * A split cut from a running split's remaining work, as its parent's record
 * lists it until its own record exists, and the most one cut may make.
 *
 * @module
 */
import * as z from "zod";
import { count, id, json, type Json } from "./layout.ts";

/**
 * A split cut from a running split's remaining work, as recorded in the
 * record of the split it was cut from until its own record exists.
 *
 * @example
 * ```ts
 * import type { Residual } from "@splitlease/splitlease/admin";
 * const r: Residual = { id: "range-0007-5f3a9c01d2e4b6a8", descriptor: { from: 5000, to: 8000 }, weight: 3000 };
 * ```
 */
export interface Residual {
  /** Its split id (derived from the parent's id and its descriptor). */
  id: string;
  /** Its descriptor (inline: at most {@linkcode INLINE_DESCRIPTOR_BYTES}). */
  descriptor: Json;
  /** Its share of the parent's weight, counted by balancing from its creation. */
  weight: number;
  /**
   * The epoch its record starts at: past the parent's epoch at the cut, so
   * its tenancies fence (by the lineage's root id) every tenancy of the
   * parent from before the cut. Absent in a cut not listed yet.
   */
  epoch?: number;
}

/**
 * Most residuals one cut may make.
 *
 * @example
 * ```ts
 * import { MAX_RESIDUALS } from "../records.ts";
 * console.log(MAX_RESIDUALS); // 16
 * ```
 */
export const MAX_RESIDUALS = 16;

/** Schema of one residual listed in a split record. */
export const ResidualSchema: z.ZodType<Residual> = z.object({
  id,
  descriptor: json,
  weight: z.number().positive().finite(),
  epoch: count.optional(),
});
