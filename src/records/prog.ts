/**
 * The progress record of one split, `prog.<split>`: the position its
 * current tenancy committed, apart from the split record so that a
 * progress commit is a write no leader watch delivers (docs/DESIGN.md,
 * "Progress apart from ownership").
 *
 * It is fenced by its own compare-and-swap: every write carries the epoch
 * of the tenancy that makes it, a tenancy writes only over a record at an
 * epoch no newer than its own, and a tenancy whose predecessors might still
 * write it fences it (writes its own epoch over it) before it starts.
 *
 * @module
 */
import * as z from "zod";
import { count, v2 } from "./layout.ts";
import { type Owner, OwnerSchema } from "./owner.ts";
import type { SplitRecord } from "./split.ts";
import { ProgressSchema, type SplitProgress } from "./split_progress.ts";

/**
 * A `prog.<split>` record: the epoch and owner of the tenancy that wrote it
 * and the progress it committed (or carried over, for a fence).
 *
 * @example
 * ```ts
 * import type { ProgRecord } from "@splitlease/splitlease/admin";
 * const p: ProgRecord = { v: 2, epoch: 3, owner: { instance: "pod-1", session: "k3j2" }, progress: { watermark: 1200 }, records: 1200 };
 * ```
 */
export interface ProgRecord {
  /** Record layout. */
  v: 2;
  /** Epoch of the tenancy that wrote it: a write at an older epoch is refused by its writer's check. */
  epoch: number;
  /** The tenancy's owner, or `null` for a fence written by no tenancy (an operator's cancel). */
  owner: Owner | null;
  /** The committed progress (`null` while nothing was committed). */
  progress: SplitProgress | null;
  /** Records the commits that landed reported, summed over every tenancy (absent: none). */
  records?: number;
  /** The split's cut count when this progress was committed: an estimate from before a later cut no longer applies. */
  cuts?: number;
}

/** Checks a decoded `prog.<split>` record. */
export const ProgRecordSchema: z.ZodType<ProgRecord> = z.object({
  v: v2,
  epoch: count,
  owner: OwnerSchema.nullable(),
  progress: ProgressSchema.nullable(),
  records: count.optional(),
  cuts: count.optional(),
});

/**
 * A split record as a reader should see it: for a runnable split, the
 * position its progress record holds (the live one) in place of the
 * position the split record was last written with — its last ownership
 * change; a completed split's record holds its final position. An
 * estimate from before a later cut of the split no longer applies (the
 * owner's next commit estimates what it kept). Pure.
 *
 * @example
 * ```ts
 * import { liveSplitRecord } from "../records.ts";
 * const split = { v: 2 as const, epoch: 2, status: "runnable" as const, owner: { instance: "a", session: "s" }, attempts: 0, weight: 1, progress: null };
 * const prog = { v: 2 as const, epoch: 2, owner: { instance: "a", session: "s" }, progress: { watermark: 40 }, records: 40 };
 * liveSplitRecord(split, prog).progress; // { watermark: 40 }
 * ```
 */
export function liveSplitRecord(split: SplitRecord, prog: ProgRecord | undefined): SplitRecord {
  // Below `closed`: an older tenancy's, whose progress the split record holds (or a run before a rerun's).
  if (!prog || split.status !== "runnable" || prog.progress === null || prog.epoch < (split.closed ?? 0)) return split;
  let progress: SplitProgress = prog.progress;
  if (progress.estimate && (prog.cuts ?? 0) < (split.cuts ?? 0)) {
    const { estimate: _, ...rest } = progress;
    progress = rest;
  }
  const next: SplitRecord = { ...split, progress };
  if (prog.records !== undefined) next.records = prog.records;
  return next;
}
