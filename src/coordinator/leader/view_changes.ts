/**
 * What a change in the leader's view asks of its promises and directives
 * (docs/DESIGN.md, "How a split reaches a worker without races"), as pure
 * decisions the role applies through its intent table, like every other
 * rule: a split record that changed takes back a stale offer, settles or
 * forgets a grant, grants a split opened for a member by someone else and
 * drops a cancelled one; a member record that changed takes a draining
 * member's offers back, acknowledges the grants it applied and re-sends the
 * splits it may not know of (anti-entropy).
 *
 * @module
 */
import type { MemberRecord, SplitRecord } from "../../records.ts";
import type { Versioned } from "../versioned.ts";
import type { Assignments } from "./directives.ts";
import type { LeaderIntent } from "./intents.ts";
import type { LeaderView } from "./leader_view.ts";
import type { MemberState } from "./member_state.ts";

/** What the view-change decisions read. */
export interface ViewChangeInput {
  view: LeaderView;
  states: ReadonlyMap<string, MemberState>;
  /** Who is told and promised what (read only). */
  tracker: Assignments;
  /** Whether the initial snapshots are in (a split seen in them was not seeded now). */
  ready: boolean;
}

/**
 * A split record changed from `prev` to `next`: an offer of it at another
 * revision (or of a split gone) is taken back; a grant of it is forgotten
 * once obsolete (the split moved on) or acknowledged (its owner wrote at
 * that epoch); a split seeded already owned, or opened for a member by
 * someone else (a release to a successor, a fence, a takeover), is granted
 * to that member; a cancelled split is dropped by the member that held it.
 * Pure.
 *
 * @example
 * ```ts ignore
 * applyIntents(decideSplitChange({ view, states, tracker, ready }, id, prev, next), appliers);
 * ```
 */
export function decideSplitChange(
  input: ViewChangeInput,
  id: string,
  prev: SplitRecord | undefined,
  next: Versioned<SplitRecord> | undefined,
): LeaderIntent[] {
  const { states, tracker } = input;
  const out: LeaderIntent[] = [];
  const rec = next?.record;
  const offered = tracker.offeredTo(id);
  if (offered !== undefined) {
    const cur = states.get(offered.instance);
    const rev = cur && tracker.of(cur).offers.get(id);
    if (!next || rev !== next.revision) out.push({ kind: "unoffer", member: offered, id, weight: prev?.weight ?? rec?.weight ?? 1, requeue: false, tell: false });
  }
  const live = (o: { instance: string; session: string }) => {
    const st = states.get(o.instance);
    return st && st.session === o.session ? st : undefined;
  };
  if (prev?.owner) {
    const st = live(prev.owner);
    const g = st && tracker.of(st).grants.get(id)?.epoch;
    if (st && g !== undefined) {
      const same = rec?.status === "runnable" && rec.owner?.instance === st.instance &&
        rec.owner.session === st.session && rec.epoch === g;
      // Obsolete (moved on), or acknowledged: the owner itself wrote at that epoch.
      if (!same || prev.epoch === g) out.push({ kind: "forgetGrant", member: st, id });
    }
  }
  const o = rec?.owner;
  if (rec && o && rec.status === "runnable" && !prev && input.ready) {
    // Seeded for `o` (a split created already owned): tell it.
    const st = live(o);
    if (st) out.push({ kind: "grant", member: st, id, grant: { epoch: rec.epoch } });
  } else if (rec && o && rec.status === "runnable" && prev?.owner && rec.epoch > prev.epoch) {
    // Opened for `o` by someone else (a release to a successor, a fence, a takeover): tell it.
    const st = live(o);
    if (st && !(prev.owner.instance === o.instance && prev.owner.session === o.session)) {
      const why = rec.attempts > prev.attempts ? (prev.owner.instance === o.instance ? "reclaim" : "takeover") : "handoff";
      out.push({ kind: "grant", member: st, id, grant: { epoch: rec.epoch, why } });
    }
  }
  if (rec?.status === "cancelled" && prev?.owner) {
    const st = live(prev.owner);
    if (st) out.push({ kind: "drop", member: st, id, drop: { epoch: prev.epoch, reason: "cancelled" } });
  }
  return out;
}

/**
 * The record of a live member `m` changed: a member that starts draining
 * has its offers taken back; the grants of the assignment records it
 * reports applied (`seen`) are acknowledged; and when the view names it for
 * more splits than its heartbeat says it holds, two beats in a row (a claim
 * that landed after its reply was lost, a grant a failed leader never wrote
 * down), every split it owns is granted again — it ignores those it has or
 * had. `m` is the state before the change is applied. Pure.
 *
 * @example
 * ```ts ignore
 * applyIntents(decideMemberChange(view, tracker, member, record), appliers);
 * ```
 */
export function decideMemberChange(view: LeaderView, t: Assignments, m: MemberState, r: MemberRecord): LeaderIntent[] {
  const out: LeaderIntent[] = [];
  if (r.draining && !m.draining) out.push({ kind: "unofferAll", member: m, drains: true });
  if (r.seen !== undefined && m.session === r.session) out.push({ kind: "acknowledge", member: m, seen: r.seen });
  if (r.held === undefined) return out;
  const owned = view.byOwner.get(m.key);
  if (!owned || owned.size <= r.held) {
    out.push({ kind: "suspect", member: m, beats: 0 });
    return out;
  }
  if (m.suspect + 1 < 2) {
    out.push({ kind: "suspect", member: m, beats: m.suspect + 1 });
    return out;
  }
  out.push({ kind: "suspect", member: m, beats: 0 });
  const grants: { id: string; epoch: number }[] = [];
  const granted = t.of(m).grants;
  for (const id of owned) if (!granted.has(id)) grants.push({ id, epoch: view.splits.get(id)!.record.epoch });
  if (grants.length > 0) out.push({ kind: "resend", member: m, grants, owned: owned.size, held: r.held });
  return out;
}
