/**
 * Removing the records of members that died (docs/DESIGN.md, "Takeover,
 * revocation and leader loss"). A member that leaves deletes its own
 * record; one that crashed leaves it behind, and while the job runs that
 * record is in use: the leader charges an attempt to the splits still
 * naming its session when it takes them over (a record that is absent
 * reads as a clean leave, charged nothing — deleted early, a split that
 * kills its workers would never be quarantined), and a restart of the same
 * instance names the session it replaced in `took` for the same reason.
 * Only the leader knows when its takeovers have landed, and no view judges
 * as the leader does (a view's verdict is a wall-clock comparison), so no
 * view deletes a record while the job runs.
 *
 * Once the job has an outcome (`allComplete` or `stalled`) no split names
 * an owner (completed, cancelled and quarantined splits have none; a
 * requeue reopens a split with none), so a dead member's record is used by
 * nothing, and a member that finishes on the outcome removes the records of
 * the members past their lease, each by a delete at the revision it read:
 * a member that beat meanwhile keeps its record, and one whose verdict was
 * wrong (a clock running a lease behind) writes its record again at its
 * next beat and holds nothing that could be charged.
 *
 * @module
 */
import { MemberRecordSchema, PlanRecordSchema, safeDecodeRecord } from "../records.ts";
import { keys } from "../store/keys.ts";
import type { Store } from "../store/store.ts";
import { pastLease } from "./member_liveness.ts";

/**
 * Removes the member records of members past their lease at wall-clock time
 * `now` (their assignment records too), if the job has an `allComplete` or
 * `stalled` outcome; returns the instances removed (none without such an
 * outcome). `except` is never removed (the caller's own instance). Store
 * errors are thrown; a record that moved or went meanwhile is left alone.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { removeGoneMembers } from "./gone_members.ts";
 * console.log(await removeGoneMembers(new MemoryStore(), Date.now())); // [] (no outcome)
 * ```
 */
export async function removeGoneMembers(store: Store, now: number, except?: string): Promise<string[]> {
  const plan = await store.get(keys.plan);
  const p = plan ? safeDecodeRecord(plan.key, plan.value, PlanRecordSchema) : undefined;
  const kind = p?.ok ? p.value.outcome?.kind : undefined;
  if (kind !== "allComplete" && kind !== "stalled") return [];
  const removed: string[] = [];
  for (const e of await store.list(keys.memberPrefix)) {
    const instance = e.key.slice(keys.memberPrefix.length);
    if (instance === except) continue;
    const r = safeDecodeRecord(e.key, e.value, MemberRecordSchema);
    if (!r.ok || pastLease(r.value, undefined, now) !== true) continue;
    if (!(await store.delete(e.key, e.revision)).ok) continue; // it beat (or left) meanwhile
    removed.push(instance);
    // Its directives, addressed to a session that is over (a restart ignores them anyway).
    await store.delete(keys.assign(instance));
  }
  return removed;
}
