/**
 * What a change of one split record changed, decided once (by the
 * {@linkcode splitChange} the leader's view applies it with) and handed to
 * every reader of the change, so that no reader decides it again.
 *
 * @module
 */
import type { SplitRecord } from "../../records.ts";

/**
 * What a change of a split record changed, decided once by the view:
 * `added` (a record it did not hold), `removed` (gone, or unreadable),
 * `ownership` (owner or epoch: a claim, grant, release, takeover, fence),
 * `status` (a completion, a failure, a quarantine, a cancel, a requeue),
 * `shape` (a cut: weight, descriptor, residuals) or `detail` (nothing a
 * decision reads: its tenancy or failure history, a hand edit, a
 * layout-2 progress commit). Progress commits write `prog.<id>`, which the
 * leader does not watch.
 */
export type SplitChange = "added" | "removed" | "ownership" | "status" | "shape" | "detail";

/**
 * What changed from `prev` to `next` (see {@linkcode SplitChange}). Pure.
 *
 * @example
 * ```ts ignore
 * if (splitChange(prev, next) === "detail") view.splits.set(id, { record: next, revision });
 * ```
 */
export function splitChange(prev: SplitRecord | undefined, next: SplitRecord | undefined): SplitChange {
  if (!prev) return next ? "added" : "removed";
  if (!next) return "removed";
  if (prev.epoch !== next.epoch || prev.owner?.instance !== next.owner?.instance || prev.owner?.session !== next.owner?.session) {
    return "ownership";
  }
  if (prev.status !== next.status || prev.attempts !== next.attempts) return "status";
  if (
    prev.weight !== next.weight || (prev.cuts ?? 0) !== (next.cuts ?? 0) || (prev.residuals?.length ?? 0) !== (next.residuals?.length ?? 0) ||
    prev.parent !== next.parent
  ) return "shape";
  return "detail";
}
