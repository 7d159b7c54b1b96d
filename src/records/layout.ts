/**
 * What every record shares: the layout tag, ids, counts and JSON
 * values, as types and as the zod parts the record schemas are built from.
 *
 * @module
 */
import * as z from "zod";

/**
 * The record layout this version reads and writes, as the `job` record
 * states it (`v: 3`). Layout 3 moved committed progress from the split
 * records to progress records of their own (`prog.<split>`): a job of
 * layout 2 is refused at join, since members of the two layouts would read
 * a split's position from different keys. Every other record keeps the tag
 * `v: 2` of the shapes layout 3 extends (new optional fields only).
 *
 * @example
 * ```ts
 * import { RECORD_LAYOUT } from "../records.ts";
 * console.log(RECORD_LAYOUT); // 3
 * ```
 */
export const RECORD_LAYOUT = 3;

/** An instance or split id: 1-128 characters of `[A-Za-z0-9_-]`. */
export const ID_RE: RegExp = /^[A-Za-z0-9_-]{1,128}$/;
/** Schema of an instance or split id. */
export const id: z.ZodString = z.string().regex(ID_RE, "must be 1-128 characters of [A-Za-z0-9_-]");
/** Schema of a count: an integer >= 0. */
export const count: z.ZodNumber = z.number().int().nonnegative();
/** Schema of the shape tag every record but `job` carries (`v: 2`). */
export const v2: z.ZodLiteral<2> = z.literal(2);
/** Schema of the `job` record's layout tag (`v: 3`, {@linkcode RECORD_LAYOUT}). */
export const v3: z.ZodLiteral<3> = z.literal(3);

/**
 * A JSON value (descriptor, progress state, planner cursor).
 *
 * @example
 * ```ts
 * import type { Json } from "@splitlease/splitlease";
 * const descriptor: Json = { objects: [{ key: "a.ndjson", size: 1024 }] };
 * ```
 */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** Schema of a JSON value. */
export const json: z.ZodType<Json> = z.json() as z.ZodType<Json>;
