/**
 * The revocation rules (docs/DESIGN.md, "Takeover, revocation and leader
 * loss"), as decisions: successors for every split of a draining member,
 * withdrawal of a steal no longer wanted, the fence of an owner that never
 * answers one, balancing steals from `planMoves`, and the settlement of a
 * revocation once its split moved. Each function reads the view, the
 * member states and the tracker and returns intents (`intents.ts`);
 * `Revocations` applies them. Pure.
 *
 * @module
 */
import type { BalanceSplit } from "../../balance/types.ts";
import { planMoves } from "../../balance/plan_moves.ts";
import type { Owner, SplitRecord } from "../../records.ts";
import type { Assignments } from "./directives.ts";
import { type Decision, LaneLedger, type LeaderIntent } from "./intents.ts";
import type { LeaderView } from "./leader_view.ts";
import type { MemberState } from "./member_state.ts";
import { claimers, freeLanes } from "./offers.ts";

/** What the revocation rules read. */
export interface RevocationInput {
  view: LeaderView;
  states: ReadonlyMap<string, MemberState>;
  /** Who is told and promised what (read only). */
  tracker: Assignments;
  now: number;
  /** Whether new work may be dealt (false while the job is paused: no successor is named); default true. */
  dealing?: boolean;
}

/** The live state of `owner` (this session, not a restarted one), if any. */
export function stateOf(states: ReadonlyMap<string, MemberState>, owner: Owner | undefined): MemberState | undefined {
  const t = owner && states.get(owner.instance);
  return t && t.session === owner!.session ? t : undefined;
}

/** Least-loaded member taking work with a lane to spare (counting the lanes `lanes` took), other than `not`. */
export function successorFor(input: RevocationInput, not: MemberState, lanes: LaneLedger): MemberState | undefined {
  const { view, states, tracker: t } = input;
  if (input.dealing === false) return undefined; // paused: a drain's releases go to nobody
  let best: MemberState | undefined;
  let bestLoad = Infinity;
  for (const m of claimers(states)) {
    if (m === not || freeLanes(view, t, m, lanes.of(m)) - t.of(m).plain <= 0) continue;
    const load = view.loadOfKey(m.key);
    if (load < bestLoad) (best = m), (bestLoad = load);
  }
  return best;
}

/**
 * A revocation of every split the draining member `m` holds that has none
 * yet, each naming the least-loaded member with a lane to spare as
 * successor (or nobody).
 *
 * @example
 * ```ts ignore
 * const intents = decideDrain({ view, states, tracker, now }, member, new LaneLedger());
 * ```
 */
export function decideDrain(input: RevocationInput, m: MemberState, lanes: LaneLedger): LeaderIntent[] {
  const out: LeaderIntent[] = [];
  const revokes = input.tracker.of(m).revokes;
  for (const id of input.view.byOwner.get(m.key) ?? []) {
    if (revokes.has(id)) continue;
    const to = successorFor(input, m, lanes);
    const epoch = input.view.splits.get(id)!.record.epoch;
    out.push({ kind: "revoke", member: m, id, revoke: to ? { epoch, to: to.owner, since: input.now, steal: false } : { epoch, since: input.now, steal: false } });
    if (to) lanes.take(to);
  }
  return out;
}

/**
 * The standing revocations, member by member: a drain for a draining member,
 * a successor for a drain revocation without one, the withdrawal of a steal
 * whose thief is gone or draining or whose membership signature `sig` is
 * stale, and the fence of a steal unanswered for `fenceAfterMs`.
 *
 * @example
 * ```ts ignore
 * const { intents, next } = decideRevocations({ view, states, tracker, now }, sig, timings.deafOwnerFenceMs);
 * ```
 */
export function decideRevocations(input: RevocationInput, sig: string, fenceAfterMs: number): Decision {
  const { states, tracker, now } = input;
  const lanes = new LaneLedger();
  const intents: LeaderIntent[] = [];
  let next = Infinity;
  for (const m of states.values()) {
    // Revocations decided now have a successor already, or find none now either.
    if (m.draining) intents.push(...decideDrain(input, m, lanes));
    for (const [id, r] of tracker.of(m).revokes) {
      if (!r.steal) {
        if (r.to) continue;
        const to = successorFor(input, m, lanes);
        if (to) {
          lanes.take(to);
          intents.push({ kind: "name", member: m, id, to });
        }
        continue;
      }
      const thief = r.to && states.get(r.to.instance);
      if (!thief || thief.session !== r.to!.session || thief.draining || r.sig !== sig) {
        const t = stateOf(states, r.to);
        if (t && tracker.of(t).expects(id)) lanes.take(t, -1);
        intents.push({ kind: "withdraw", member: m, id }); // the move may no longer be wanted: plan again
        continue;
      }
      const due = r.since + fenceAfterMs;
      if (now >= due) intents.push({ kind: "fence", member: m, id, revoke: r, thief });
      else next = Math.min(next, due);
    }
  }
  return { intents, next };
}

/**
 * Balancing steals: `planMoves` over the runnable splits and the members
 * taking work, each move a steal revocation naming its thief, stamped with
 * the membership signature `sig`. `revokeOf` gives a split's pending
 * revocation (it is in handoff).
 *
 * @example
 * ```ts ignore
 * const intents = decideSteals({ view, states, tracker, now }, sig, config.job, (id) => pending.get(id));
 * ```
 */
export function decideSteals(
  input: RevocationInput,
  sig: string,
  seed: string,
  revokeOf: (id: string) => { to?: Owner } | undefined,
): LeaderIntent[] {
  const { view, states, now } = input;
  const members = claimers(states);
  if (members.length < 2) return [];
  const live = new Map(members.map((m) => [m.instance, m]));
  const splits: BalanceSplit[] = [];
  for (const [id, e] of view.splits) {
    const r = e.record;
    if (r.status !== "runnable") continue;
    const o = r.owner;
    const owner = o && live.get(o.instance)?.session === o.session ? o.instance : null;
    const rv = revokeOf(id);
    splits.push({
      id,
      weight: r.weight,
      owner,
      status: "runnable",
      inHandoff: rv !== undefined,
      handoffTo: rv?.to?.instance ?? null,
      draining: o ? states.get(o.instance)?.draining === true : false,
    });
  }
  const moves = planMoves({ members: members.map((m) => ({ instance: m.instance, maxInFlight: m.maxInFlight })), splits }, { seed });
  const out: LeaderIntent[] = [];
  for (const mv of moves) {
    const owner = live.get(mv.from);
    const thief = live.get(mv.to);
    const rec = view.splits.get(mv.splitId);
    if (!owner || !thief || !rec) continue;
    out.push({ kind: "revoke", member: owner, id: mv.splitId, revoke: { epoch: rec.record.epoch, to: thief.owner, since: now, sig, steal: true } });
  }
  return out;
}

/**
 * Split `id` changed to `next`: a revocation of it is settled unless its
 * owner still holds it at the epoch revoked (with how long a steal took,
 * when the thief got it). Pure.
 *
 * @example
 * ```ts ignore
 * applyIntents(decideSettled(tracker, id, record, now), appliers);
 * ```
 */
export function decideSettled(t: Assignments, id: string, next: SplitRecord | undefined, now: number): LeaderIntent[] {
  const pending = t.revocationOf(id);
  if (!pending) return [];
  const { member: m, revoke: r } = pending;
  const o = next?.owner;
  if (next && next.status === "runnable" && next.epoch === r.epoch && o?.instance === m.instance && o.session === m.session) {
    return [];
  }
  const stolen = r.steal && r.to && o?.instance === r.to.instance;
  return [stolen ? { kind: "settle", member: m, id, handoverSeconds: (now - r.since) / 1000 } : { kind: "settle", member: m, id }];
}
