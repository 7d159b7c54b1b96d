/**
 * The `assign.<instance>` record: the leader's directives to one member.
 *
 * @module
 */
import * as z from "zod";
import { count, id, v2 } from "./layout.ts";
import { type Owner, OwnerSchema } from "./owner.ts";
import { MAX_RESIDUALS } from "./residual.ts";
import { type SplitRecord, SplitRecordSchema } from "./split.ts";

/**
 * One split in an assignment record: its id, the epoch and revision of the
 * split record the leader saw, and (space permitting) that record.
 *
 * @example
 * ```ts
 * import type { AssignEntry } from "@splitlease/splitlease/admin";
 * const e: AssignEntry = { id: "s1", epoch: 0, rev: 42 };
 * ```
 */
export interface AssignEntry {
  /** Split id. */
  id: string;
  /** Epoch of the split record at `rev`. */
  epoch: number;
  /**
   * Revision of the split record the directive is about; `0` for a planned
   * split not dealt yet (it has no record: its claim creates it from `rec`).
   */
  rev: number;
  /** The split record at `rev` (omitted when the assignment record would grow too large, or when the leader does not keep it). */
  rec?: SplitRecord;
  /** For a planned split not dealt yet (revision 0): the page of the plan that lists it (`page.<n>`), where its record is read. */
  page?: number;
  /** Why it comes: `takeover` (its owner died), `reclaim` (its owner was our previous process), `handoff` (released or fenced to us). */
  why?: "takeover" | "reclaim" | "handoff";
  /** An offer beyond the member's free lanes: claimed only when the leader has not answered a free lane for a while. */
  spare?: true;
}

/**
 * An `assign.<instance>` record: the leader's directives to one member
 * (docs/DESIGN.md, "How a split reaches a worker without races").
 *
 * @example
 * ```ts
 * import type { AssignRecord } from "@splitlease/splitlease/admin";
 * const a: AssignRecord = { v: 2, term: 3, session: "s1", seq: 7, offers: [], grants: [], revokes: [], drops: [] };
 * ```
 */
export interface AssignRecord {
  /** Record layout. */
  v: 2;
  /** Term of the leader that wrote it. */
  term: number;
  /** Session of the member it is addressed to. */
  session: string;
  /** Write counter within the term. */
  seq: number;
  /** Free splits reserved for the member: claim them (one CAS each) when a lane is free. */
  offers: AssignEntry[];
  /** Splits already opened for the member (epoch and owner written): start them without a write. */
  grants: AssignEntry[];
  /** Held splits the leader wants back; `to` is the successor to release them to. */
  revokes: { id: string; epoch: number; to?: Owner }[];
  /** Held splits whose record moved away from the member: stop them now. */
  drops: { id: string; epoch: number; reason: "fenced" | "expired" | "cancelled" }[];
  /**
   * Held splits whose remaining work the leader asks the member to cut
   * into `parts` pieces for idle lanes (absent: none). `ask` numbers the
   * leader's asks of a split, so a repeated ask is told apart.
   */
  cuts?: { id: string; epoch: number; parts: number; ask: number }[];
}

const EntrySchema: z.ZodType<AssignEntry> = z.object({
  id,
  epoch: count,
  rev: count,
  rec: SplitRecordSchema.optional(),
  why: z.enum(["takeover", "reclaim", "handoff"]).optional(),
  spare: z.literal(true).optional(),
  page: count.optional(),
}).refine((e) => e.rev > 0 || e.rec !== undefined || e.page !== undefined, {
  message: "an entry at revision 0 (a planned split not dealt yet) names its page of the plan (or carries its record)",
});

/** Schema of an `assign.<instance>` record. */
export const AssignRecordSchema: z.ZodType<AssignRecord> = z.object({
  v: v2,
  term: count,
  session: z.string().min(1),
  seq: count,
  offers: z.array(EntrySchema),
  grants: z.array(EntrySchema),
  revokes: z.array(z.object({ id, epoch: count, to: OwnerSchema.optional() })),
  drops: z.array(z.object({ id, epoch: count, reason: z.enum(["fenced", "expired", "cancelled"]) })),
  cuts: z.array(z.object({ id, epoch: count, parts: z.number().int().min(2).max(MAX_RESIDUALS + 1), ask: count })).optional(),
});
