/**
 * A page of the published plan, `page.<n>`: up to {@linkcode PAGE_SPLITS}
 * planned splits in dealing order (heaviest first, equal weights in the
 * planner's order). A planned split has no record of its own until it is
 * dealt: the member that claims it creates its split record (epoch 1), so
 * planning costs one write per page, not one per split, and a split costs
 * its claim and its completion (docs/DESIGN.md, "Plans").
 *
 * Pages `0 .. plan.pages - 1` are the plan; one at or past it is a run's
 * that has not published (yet, or ever: it is written over).
 *
 * @module
 */
import * as z from "zod";
import { count, id, json, type Json, v2 } from "./layout.ts";
import type { SplitRecord } from "./split.ts";
import { seedRecord } from "./transitions.ts";

/**
 * One planned split on a page.
 *
 * @example
 * ```ts
 * import type { PageEntry } from "@splitlease/splitlease/admin";
 * const e: PageEntry = { id: "part-0001", weight: 4096, descriptor: { key: "a.ndjson" } };
 * ```
 */
export interface PageEntry {
  /** Split id. */
  id: string;
  /** Relative cost (default 1). */
  weight?: number;
  /** The descriptor, when it fits inline (at most 2 KiB of JSON). */
  descriptor?: Json;
  /** Set when the descriptor lives in `spec.<id>` instead. */
  spec?: true;
}

/**
 * A `page.<n>` record.
 *
 * @example
 * ```ts
 * import type { PageRecord } from "@splitlease/splitlease/admin";
 * const p: PageRecord = { v: 2, term: 3, splits: [{ id: "a", descriptor: { n: 1 } }] };
 * ```
 */
export interface PageRecord {
  /** Record layout. */
  v: 2;
  /** The leader term that wrote it (a page is written over only by a run of a newer term, or of its own before it publishes). */
  term: number;
  /** Its splits, in dealing order. */
  splits: PageEntry[];
  /** The job's run its splits belong to (see `PlanRecord.run`); absent in the first run. */
  run?: number;
  /** In a rerun, the epoch its splits' records start at: above every tenancy of the runs before (`PlanRecord.epochBase`). */
  epochBase?: number;
}

/**
 * Most splits on one page.
 *
 * @example
 * ```ts
 * import { PAGE_SPLITS } from "../records.ts";
 * console.log(PAGE_SPLITS); // 1000
 * ```
 */
export const PAGE_SPLITS = 1000;

/**
 * Most bytes of one page's JSON (half the store's value limit: a page of
 * inline descriptors fits on every backend).
 *
 * @example
 * ```ts
 * import { PAGE_BYTES } from "../records.ts";
 * console.log(PAGE_BYTES); // 131072
 * ```
 */
export const PAGE_BYTES = 128 * 1024;

const EntrySchema: z.ZodType<PageEntry> = z.object({
  id,
  weight: z.number().positive().finite().optional(),
  descriptor: json.optional(),
  spec: z.literal(true).optional(),
});

/** Checks a decoded `page.<n>` record. */
export const PageRecordSchema: z.ZodType<PageRecord> = z.object({
  v: v2,
  term: count,
  splits: z.array(EntrySchema).max(PAGE_SPLITS),
  run: z.number().int().min(1).optional(),
  epochBase: count.optional(),
});

/**
 * A planned split's record before it is dealt: what its claim creates (at
 * epoch 1, or past `page.epochBase` in a rerun), and how readers show a
 * split that has no record of its own yet. Nobody held it in this run: no
 * progress record of an epoch below its first tenancy's holds anything of
 * this run, so that tenancy starts without a fence (`closed`).
 *
 * @example
 * ```ts
 * import { pagedRecord } from "../records.ts";
 * pagedRecord({ id: "a", weight: 2, descriptor: { n: 1 } }); // runnable, epoch 0, no owner
 * ```
 */
export function pagedRecord(e: PageEntry, page?: Pick<PageRecord, "run" | "epochBase">): SplitRecord {
  const r = seedRecord(e.weight ?? 1, e.spec ? undefined : (e.descriptor ?? null));
  if (page?.run !== undefined && page.run > 1) r.run = page.run;
  if (page?.epochBase) (r.epoch = page.epochBase), (r.closed = page.epochBase + 1);
  return r;
}
