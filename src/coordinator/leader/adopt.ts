/**
 * What a new leader takes over from the one before (docs/DESIGN.md,
 * "Leader loss"): the offers its predecessor's assignment records still
 * list for splits that are free and unchanged, and a grant of every split
 * a live member owns.
 *
 * @module
 */
import { AssignRecordSchema, safeDecodeRecord } from "../../records.ts";
import { keys } from "../../store/keys.ts";
import type { Store } from "../../store/store.ts";
import type { AssignmentTracker } from "./assignment_tracker.ts";
import type { LeaderView } from "./leader_view.ts";
import type { MemberState } from "./member_state.ts";

/**
 * Reads every assignment record: keeps its revision for the next write,
 * and adopts its offers of splits still free at the offered revision (not
 * offered to anyone else). Then grants every live member the splits it
 * owns: one may be a split it never heard of (the predecessor died between
 * opening it and telling the owner); a member ignores grants of tenancies
 * it has or had, so listing them all is safe.
 *
 * @example
 * ```ts ignore
 * await adoptDirectives(core.store, view, states, tracker);
 * ```
 */
export async function adoptDirectives(
  store: Store,
  view: LeaderView,
  states: ReadonlyMap<string, MemberState>,
  tracker: AssignmentTracker,
): Promise<void> {
  const records = await store.list(keys.assignPrefix);
  tracker.edit((d) => {
    for (const e of records) {
      const r = safeDecodeRecord(e.key, e.value, AssignRecordSchema);
      const st = states.get(e.key.slice(keys.assignPrefix.length));
      if (!st) continue;
      tracker.writer(st).rev = e.revision;
      if (!r.ok || r.value.session !== st.session) continue;
      for (const o of r.value.offers) {
        const cur = view.splits.get(o.id);
        if (cur && cur.revision === o.rev && view.free.has(o.id) && d.offeredTo(o.id) === undefined) {
          d.offer(st, o.id, o.rev, cur.record.weight, o.spare === true);
        }
      }
    }
    for (const st of states.values()) {
      for (const id of view.byOwner.get(st.key) ?? []) {
        d.grant(st, id, { epoch: view.splits.get(id)!.record.epoch });
      }
      d.touch(st);
    }
  });
}
