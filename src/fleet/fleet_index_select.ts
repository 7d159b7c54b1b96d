/**
 * Which splits a live fleet index (`fleet_index.ts`) lists for a query:
 * the page of slots that match its state, owner and search text, walked in
 * id order from its cursor, and how a search matches a split's descriptor.
 *
 * @module
 */
import type { SplitRecord } from "../records.ts";
import type { FleetState } from "./fleet_query.ts";
import { jsonPreview, type NormalizedFleetQuery } from "./fleet_view.ts";
import type { SplitColumns } from "./split_columns.ts";

/** The page of slots a query lists (the first `limit` matches after its cursor, by id), how many match, and the next cursor. */
export function selectSlots(
  cols: SplitColumns,
  ownPreview: ReadonlyMap<number, string | null>,
  q: NormalizedFleetQuery,
  search: Set<number> | undefined,
): { matched: number; slots: number[]; next: string | null } {
  const order = cols.order();
  const want = wanted(q.state);
  const start = q.after === null ? 0 : cols.after(order, q.after);
  const slots: number[] = [];
  let matched = 0, more = false;
  const text = q.match;
  for (let i = 0; i < order.length; i++) {
    const s = order[i];
    if (!want[cols.state(s)]) continue;
    if (q.owner !== null && instanceOf(cols.owner(s)) !== q.owner) continue;
    if (text !== null) {
      const ownerHit = instanceOf(cols.owner(s))?.toLowerCase().includes(text) ?? false;
      const own = cols.ownDescriptor(s);
      const descHit = own ? ownPreview.get(s)?.includes(text) ?? false : search!.has(s);
      if (!ownerHit && !descHit && !cols.id(s).toLowerCase().includes(text)) continue;
    }
    matched++;
    if (i < start) continue;
    if (slots.length < q.limit) slots.push(s);
    else more = true;
  }
  return { matched, slots, next: more ? cols.id(slots[slots.length - 1]) : null };
}

/** Which slot states a query's states select (indexed by {@linkcode Slot}). */
function wanted(states: FleetState[] | null): boolean[] {
  const has = (s: FleetState) => states === null || states.includes(s);
  return [false, has("runnable") || has("unclaimed"), has("runnable") || has("owned"), has("completed"), has("quarantined"), has("cancelled")];
}

/** The instance of an `instance/session` owner. */
function instanceOf(owner: string | null): string | null {
  return owner === null ? null : owner.slice(0, owner.indexOf("/"));
}

/** A record's descriptor preview in lower case, as a search matches it (`null`: in a spec record, or none). */
export function previewOf(r: SplitRecord): string | null {
  return r.spec || r.descriptor === undefined ? null : jsonPreview(r.descriptor).toLowerCase();
}
