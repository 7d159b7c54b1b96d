/**
 * What a leader's beat publishes of its job (`JobCounts`): the view's
 * counts, the members, the first quarantined ids, the weights and the
 * completion rate (what readers of a large job show instead of reading its
 * records). Apart from the role (role.ts), which decides and writes: this
 * reads the view and decides nothing.
 *
 * @module
 */
import { type JobCounts, QUARANTINED_IDS_PUBLISHED } from "../../records.ts";
import { smallest } from "../../util/smallest.ts";
import type { Clock } from "../clock.ts";
import type { LeaderView } from "./leader_view.ts";

/** Job counts for the leader's beat, from its view, its number of live members and its clock. */
export function jobCounts(view: LeaderView, members: number, clock: Clock): JobCounts {
  const c = view.counts;
  const counts: JobCounts = { members, unowned: view.free.size, ...c };
  if (view.cut > 0) counts.cut = view.cut;
  if (view.quarantined.size > 0) counts.quarantinedIds = smallest(view.quarantined, QUARANTINED_IDS_PUBLISHED);
  // What readers of a large job show instead of reading its records: weights and the rate (O(owned) splits, not O(S)).
  const w = view.weightBy, now = clock.now();
  let done = 0;
  for (const ids of view.byOwner.values()) for (const id of ids) done += (view.splits.weight(id) ?? 0) - view.workLeft(id, now);
  counts.weight = {
    total: Math.max(0, w.runnable + w.completed + w.quarantined + w.cancelled),
    completed: Math.max(0, w.completed),
    runnable: Math.max(0, w.runnable),
    left: Math.max(0, w.runnable - done),
  };
  counts.rate = view.completions.rate(clock.wallNow());
  return counts;
}
