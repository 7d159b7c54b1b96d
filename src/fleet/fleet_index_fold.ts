/**
 * The job-wide part of a live fleet index's view (`fleet_index.ts`): its
 * counts, the owners' load and the rate, from the sums the columns keep up
 * to date (`split_columns.ts`) and the owners' published estimates, with no
 * pass over the splits.
 *
 * @module
 */
import type { MemberRecord } from "../records.ts";
import { RateFold, RECENT_LISTED } from "./fleet_rate.ts";
import type { FleetView } from "./types.ts";
import { Slot } from "./slot.ts";
import { LATELY_MS, type SplitColumns } from "./split_columns.ts";
import { emptyCounts } from "./view_parts.ts";

/** The job-wide part of a view: counts, the owners' load, the rate. */
export interface IndexFold {
  counts: FleetView["counts"];
  owned: Map<string, number>;
  rate: RateFold;
}

/**
 * The counts, owners' load and rate of every split, from the sums the
 * columns keep up to date (no pass over the splits): the running splits'
 * fractions corrected by their owners' published estimates, the window
 * and sparkline counted from the completions of the last minutes.
 */
export function foldColumns(cols: SplitColumns, at: number, members: ReadonlyMap<string, MemberRecord>): IndexFold {
  const x = cols.sums;
  // Running splits' fraction done: their owners' last published estimates (the last one of a split counts).
  const est = new Map<string, { owner: string; fraction: number }>();
  for (const [instance, m] of members) {
    for (const [id, left, total] of m.est ?? []) {
      est.set(id, { owner: instance + "/" + m.session, fraction: Math.min(1, Math.max(0, 1 - left / total)) });
    }
  }
  let remaining = x.remaining, partial = x.partial;
  for (const [id, e] of est) {
    const s = cols.slotOf(id);
    if (s === undefined || cols.state(s) !== Slot.Owned || cols.owner(s) !== e.owner) continue;
    const w = cols.weight(s), f = cols.fraction(s) ?? 0;
    remaining += w * (f - e.fraction);
    partial += w * (e.fraction - f);
  }
  const counts = emptyCounts();
  counts.unclaimed = counts.unowned = x.count[Slot.Unclaimed];
  counts.owned = x.count[Slot.Owned];
  counts.runnable = counts.unclaimed + counts.owned;
  counts.completed = x.count[Slot.Completed];
  counts.quarantined = x.count[Slot.Quarantined];
  counts.cancelled = x.count[Slot.Cancelled];
  counts.total = counts.runnable + counts.completed + counts.quarantined + counts.cancelled;
  counts.permanent = x.permanent;
  for (let st = 1; st <= 5; st++) counts.weight += x.weight[st];
  counts.completedWeight = x.weight[Slot.Completed];
  const owned = new Map<string, number>();
  for (const [o, n] of cols.ownedBy) owned.set(cols.names.name(o)!, n);
  // The completions of the last minutes (those gone stale since they were counted in are dropped here).
  const lately: { at: number; weight: number; by: string }[] = [];
  for (const [s, t] of cols.lately) {
    if (cols.state(s) !== Slot.Completed || cols.completedAt(s) !== t || t < at - LATELY_MS) cols.lately.delete(s);
    else lately.push({ at: t, weight: cols.weight(s), by: cols.completedBy(s)! });
  }
  const latest = cols.lately.size >= RECENT_LISTED ? cols.latestOf(cols.lately.keys(), RECENT_LISTED) : cols.latest(RECENT_LISTED);
  const rate = RateFold.of(at, {
    started: cols.started(),
    last: cols.lastCompleted(),
    timed: x.timed,
    untimed: x.untimed,
    remaining,
    partial,
    totals: { records: x.records, splitsWithRecords: x.splitsWithRecords, retries: x.retries, failures: x.failures, lost: x.lost, cuts: x.cuts },
    lately,
    recent: latest.map((s) => ({ id: cols.id(s), at: cols.completedAt(s)! })),
  });
  return { counts, owned, rate };
}
