/**
 * The `spec.<split>` record: a descriptor too large to live inline in its
 * split record, and the size that decides where a descriptor lives.
 *
 * @module
 */
import * as z from "zod";
import { count, json, type Json, v2 } from "./layout.ts";

/**
 * Largest descriptor (JSON text, UTF-8 bytes) kept inside the split record;
 * larger ones go to `spec.<split>`.
 *
 * @example
 * ```ts
 * import { INLINE_DESCRIPTOR_BYTES } from "../records.ts";
 * console.log(INLINE_DESCRIPTOR_BYTES); // 2048
 * ```
 */
export const INLINE_DESCRIPTOR_BYTES = 2048;

/**
 * A `spec.<split>` record: the immutable descriptor of a split whose
 * descriptor is too large to live in its split record.
 *
 * @example
 * ```ts
 * import type { SpecRecord } from "@splitlease/splitlease/admin";
 * const spec: SpecRecord = { v: 2, descriptor: { from: 0, to: 1000 }, weight: 1000, term: 1 };
 * ```
 */
export interface SpecRecord {
  /** Record layout. */
  v: 2;
  /** Everything a worker needs to process the split. */
  descriptor: Json;
  /** Relative cost (bytes, rows); default 1. */
  weight: number;
  /** Plan term that created it. */
  term: number;
}

/** Schema of a `spec.<split>` record. */
export const SpecRecordSchema: z.ZodType<SpecRecord> = z.object({
  v: v2,
  descriptor: json,
  weight: z.number().positive().finite(),
  term: count,
});
