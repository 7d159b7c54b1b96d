/**
 * The lifecycle state of a split (a type of its own: the split record and
 * the history of its earlier runs both name it).
 *
 * @module
 */
/**
 * Lifecycle state of a split: `runnable` (owned or free), `completed`,
 * `quarantined` (poison, parked until requeued) or `cancelled` (by an
 * operator; never run again).
 *
 * @example
 * ```ts
 * import type { SplitStatus } from "@splitlease/splitlease/admin";
 * const s: SplitStatus = "runnable";
 * ```
 */
export type SplitStatus = "runnable" | "completed" | "quarantined" | "cancelled";
