/**
 * The state of a slot of the fleet index's columns (`split_columns.ts`): a
 * view's states, one byte each.
 *
 * @module
 */

/** A slot's state: absent (no record, on no page read), or one of a view's states. */
export const Slot = { Absent: 0, Unclaimed: 1, Owned: 2, Completed: 3, Quarantined: 4, Cancelled: 5 } as const;
/** One of the {@linkcode Slot} states. */
export type Slot = (typeof Slot)[keyof typeof Slot];
