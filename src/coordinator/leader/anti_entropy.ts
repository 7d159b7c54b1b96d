/**
 * Anti-entropy on the leader (docs/DESIGN.md, "Anti-entropy"): each
 * heartbeat says how many splits its member holds; a member the leader's
 * view names for more, two beats in a row, is sent every split it owns as a
 * grant again.
 *
 * @module
 */
import type { MemberRecord } from "../../records.ts";
import { type Core, decided } from "../core.ts";
import type { LeaderView } from "./leader_view.ts";
import type { MemberState } from "./member_state.ts";

/**
 * Anti-entropy: a member that reports holding fewer splits than the store
 * names it for, two beats in a row, may own a split it never heard of (a
 * claim whose reply was lost and whose write landed late). Re-send every
 * split it owns as a grant: it ignores those it has or had.
 *
 * @example
 * ```ts
 * import { auditHeld } from "./anti_entropy.ts";
 * const onBeat: typeof auditHeld = (core, view, st, r) => auditHeld(core, view, st, r);
 * ```
 */
export function auditHeld(core: Core, view: LeaderView, st: MemberState, r: MemberRecord): void {
  if (r.held === undefined) return;
  const owned = view.byOwner.get(st.key);
  if (!owned || owned.size <= r.held) {
    st.suspect = 0;
    return;
  }
  if (++st.suspect < 2) return;
  st.suspect = 0;
  let added = 0;
  for (const id of owned) {
    if (st.grants.has(id)) continue;
    st.grant(id, { epoch: view.splits.get(id)!.record.epoch });
    added++;
  }
  if (added > 0) {
    decided(core, "debug", "Re-sent grants to a member that may not know all its splits", "grants.resent", { member: st.instance, owned: owned.size, held: r.held });
  }
}
