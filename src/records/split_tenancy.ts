/**
 * One tenancy of a split (who held it, at which epoch, how it ended), as a
 * split record's bounded tenancy history keeps it.
 *
 * @module
 */
import * as z from "zod";
import { count, id } from "./layout.ts";

/**
 * How a tenancy of a split ended: `completed`, `released` (graceful, to
 * nobody or to a successor), `failed` (a `fail()` or a throwing `run`),
 * `handedBack` (claimed but not runnable now, no attempt), `moved` (the
 * leader gave it to another owner without a release), `lost` (taken over
 * from a dead owner, an attempt charged), `cancelled` or `requeued` (by an
 * operator).
 *
 * @example
 * ```ts
 * import type { TenancyEnd } from "@splitlease/splitlease/admin";
 * const charged = (end: TenancyEnd) => end === "failed" || end === "lost";
 * ```
 */
export type TenancyEnd = "completed" | "released" | "failed" | "handedBack" | "moved" | "lost" | "cancelled" | "requeued";

/** Every {@linkcode TenancyEnd}. */
export const TENANCY_ENDS: readonly TenancyEnd[] = ["completed", "released", "failed", "handedBack", "moved", "lost", "cancelled", "requeued"];

/**
 * One tenancy of a split: who held it at which epoch, from when (wall clock
 * of the writer, ms since the epoch; informational only) until when and how
 * it ended (absent while it lasts).
 *
 * @example
 * ```ts
 * import type { SplitTenancy } from "@splitlease/splitlease/admin";
 * const t: SplitTenancy = { epoch: 3, owner: "pod-1", from: 1764668000000, to: 1764668042000, end: "completed" };
 * ```
 */
export interface SplitTenancy {
  /** The epoch it ran at. */
  epoch: number;
  /** The owner's instance id. */
  owner: string;
  /** When it began. */
  from: number;
  /** When it ended. */
  to?: number;
  /** How it ended. */
  end?: TenancyEnd;
}

/**
 * Tenancies kept per split record (the oldest is dropped first).
 *
 * @example
 * ```ts
 * import { TENANCY_HISTORY } from "../records.ts";
 * console.log(TENANCY_HISTORY); // 8
 * ```
 */
export const TENANCY_HISTORY = 8;

/** Schema of one tenancy of a split record's history. */
export const TenancySchema: z.ZodType<SplitTenancy> = z.object({
  epoch: count,
  owner: id,
  from: z.number().finite(),
  to: z.number().finite().optional(),
  end: z.enum(TENANCY_ENDS as [TenancyEnd, ...TenancyEnd[]]).optional(),
});
