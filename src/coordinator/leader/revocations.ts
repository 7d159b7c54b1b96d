/**
 * The leader's revocations (docs/DESIGN.md, "Takeover, revocation and leader
 * loss"): balancing steals decided by `planMoves` when nothing is free,
 * successors named for every split of a draining member, withdrawal of a
 * steal that is no longer wanted, and the fence of an owner that never
 * answers one. Each revocation is a directive in the owner's assignment
 * record; the owner releases to the named successor (epoch + 1), and the
 * leader grants the split to it.
 *
 * @module
 */
import type { BalanceSplit } from "../../balance/types.ts";
import { planMoves } from "../../balance/plan_moves.ts";
import type { Owner, SplitRecord } from "../../records.ts";
import type { Core } from "../core.ts";
import { bump, observe } from "../stats.ts";
import { openRecord } from "../transitions.ts";
import type { LeaderView } from "./leader_view.ts";
import type { Revoke } from "./directives.ts";
import type { MemberState } from "./member_state.ts";
import { claimers, freeLanes } from "./offers.ts";

/** What revocations read and write. */
export interface RevocationCtx {
  core: Core;
  view: LeaderView;
  states: ReadonlyMap<string, MemberState>;
  leading(): boolean;
}

/** The leader's revocations. */
export class Revocations {
  readonly #ctx: RevocationCtx;
  /** Split id → instance asked to give it up. */
  readonly #from = new Map<string, string>();
  #lastRun = -Infinity;
  #lastSig = "";
  #urgent = true;
  #fencing = new Set<string>();

  constructor(ctx: RevocationCtx) {
    this.#ctx = ctx;
  }

  /** Time between balancing runs while nothing settles. */
  get intervalMs(): number {
    return this.#ctx.core.timings.balanceIntervalMs;
  }

  /** Time between runs right after a steal settled or membership changed. */
  get minIntervalMs(): number {
    return this.#ctx.core.timings.balanceMinIntervalMs;
  }

  /** A split record changed: a revocation of it is settled unless its owner still holds it at that epoch. */
  onSplit(id: string, next: SplitRecord | undefined, now: number): void {
    const inst = this.#from.get(id);
    if (inst === undefined) return;
    const m = this.#ctx.states.get(inst);
    const r = m?.revokes.get(id);
    if (!m || !r) {
      this.#from.delete(id);
      return;
    }
    const o = next?.owner;
    if (next && next.status === "runnable" && next.epoch === r.epoch && o?.instance === m.instance && o.session === m.session) {
      return;
    }
    if (r.steal && r.to && o?.instance === r.to.instance) {
      observe(this.#ctx.core.stats.handoverSeconds, (now - r.since) / 1000);
    }
    this.#delete(m, id);
    this.#urgent = true; // a steal settled: the next one may be due
  }

  /** Forgets the revocations of a member that is gone (and those naming it). */
  forget(m: MemberState): void {
    for (const id of [...m.revokes.keys()]) this.#delete(m, id);
    for (const o of this.#ctx.states.values()) {
      for (const [id, r] of o.revokes) if (r.to?.instance === m.instance && r.to.session === m.session) this.#withdraw(o, id);
    }
    this.#urgent = true;
  }

  #delete(m: MemberState, id: string): void {
    const r = m.unrevoke(id);
    if (!r) return;
    this.#from.delete(id);
    this.#stateOf(r.to)?.unexpect(id);
  }

  /** The live state of `owner` (this session, not a restarted one), if any. */
  #stateOf(owner: Owner | undefined): MemberState | undefined {
    const t = owner && this.#ctx.states.get(owner.instance);
    return t && t.session === owner!.session ? t : undefined;
  }

  #withdraw(m: MemberState, id: string): void {
    const r = m.revokes.get(id);
    if (!r) return;
    if (r.steal) {
      this.#delete(m, id);
      bump(this.#ctx.core.stats.revocations, "withdrawn");
    } else if (r.to) {
      // A drain goes on; only its successor is gone.
      this.#stateOf(r.to)?.unexpect(id);
      delete r.to;
      m.touch();
    }
  }

  #add(m: MemberState, id: string, r: Revoke): void {
    m.revoke(id, r);
    this.#from.set(id, m.instance);
    this.#stateOf(r.to)?.expect(id);
  }

  /**
   * Revokes every split the draining member `m` holds that has none yet,
   * each naming the least-loaded member with a lane to spare as successor
   * (or nobody); returns the successors named, by split id. A draining
   * leader calls it for itself before its lanes stop, so its releases go
   * straight to their successors (grants, no claim) instead of to nobody.
   */
  drainRevokes(m: MemberState, now: number): Map<string, Owner> {
    const { view } = this.#ctx;
    const named = new Map<string, Owner>();
    for (const id of view.byOwner.get(m.key) ?? []) {
      if (m.revokes.has(id)) continue;
      const to = this.#successor(m);
      const epoch = view.splits.get(id)!.record.epoch;
      this.#add(m, id, to ? { epoch, to: to.owner, since: now, steal: false } : { epoch, since: now, steal: false });
      if (to) named.set(id, to.owner);
    }
    return named;
  }

  /** Least-loaded member with a lane to spare, other than `not`. */
  #successor(not: MemberState): MemberState | undefined {
    const { view, states } = this.#ctx;
    let best: MemberState | undefined;
    let bestLoad = Infinity;
    for (const m of claimers(states)) {
      if (m === not || freeLanes(view, m) - m.plain <= 0) continue;
      const load = view.loadOfKey(m.key);
      if (load < bestLoad) (best = m), (bestLoad = load);
    }
    return best;
  }

  /**
   * One pass: successors for draining members, withdrawals, fences of deaf
   * owners and (rate-limited, only when nothing is free) new steals. Returns
   * when the next pass is due.
   */
  cycle(now: number, term: number, sig: string, nothingFree: boolean): number {
    const { core } = this.#ctx;
        if (sig !== this.#lastSig) this.#urgent = true;
    let next = Infinity;
    for (const m of this.#ctx.states.values()) {
      if (m.draining) this.drainRevokes(m, now);
      if (m.revokes.size === 0) continue;
      for (const [id, r] of [...m.revokes]) {
        if (!r.steal) {
          if (!r.to) {
            const to = this.#successor(m);
            if (to) {
              r.to = to.owner;
              to.expect(id);
              m.touch();
            }
          }
          continue;
        }
        const thief = r.to && this.#ctx.states.get(r.to.instance);
        if (!thief || thief.session !== r.to!.session || thief.draining || r.sig !== sig) {
          this.#withdraw(m, id); // the move may no longer be wanted: plan again
          continue;
        }
        const due = r.since + core.timings.deafOwnerFenceMs;
        if (now >= due) this.#fence(m, id, r, thief);
        else next = Math.min(next, due);
      }
    }
    if (!nothingFree || this.#ctx.states.size < 2) return next;
    const wait = this.#urgent ? this.minIntervalMs : this.intervalMs;
    if (now - this.#lastRun < wait) return Math.min(next, this.#lastRun + wait);
    this.#lastRun = now;
    this.#lastSig = sig;
    this.#urgent = false;
    this.#plan(now, term, sig);
    return Math.min(next, now + this.intervalMs);
  }

  #plan(now: number, _term: number, sig: string): void {
    const { view, states, core } = this.#ctx;
    const members = claimers(states);
    if (members.length < 2) return;
    const live = new Map(members.map((m) => [m.instance, m]));
    const splits: BalanceSplit[] = [];
    for (const [id, e] of view.splits) {
      const r = e.record;
      if (r.status !== "runnable") continue;
      const o = r.owner;
      const owner = o && live.get(o.instance)?.session === o.session ? o.instance : null;
      const from = this.#from.get(id);
      const rv = from ? states.get(from)?.revokes.get(id) : undefined;
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
    const moves = planMoves({ members: members.map((m) => ({ instance: m.instance, maxInFlight: m.maxInFlight })), splits }, {
      seed: core.config.job,
    });
    for (const mv of moves) {
      const owner = live.get(mv.from);
      const thief = live.get(mv.to);
      const rec = view.splits.get(mv.splitId);
      if (!owner || !thief || !rec) continue;
      this.#add(owner, mv.splitId, { epoch: rec.record.epoch, to: thief.owner, since: now, sig, steal: true });
      core.log("debug", "Steal requested", { split: mv.splitId, from: mv.from, to: mv.to });
    }
  }

  /** The owner never answered: open the next epoch for the thief and tell the owner to stop. */
  #fence(m: MemberState, id: string, r: Revoke, thief: MemberState): void {
    const { view, core } = this.#ctx;
    if (this.#fencing.has(id)) return;
    const cur = view.splits.get(id);
    if (!cur || cur.record.epoch !== r.epoch) return;
    const next = openRecord(cur.record, thief.owner, false, core.config.maxAttempts, core.clock.wallNow());
    this.#fencing.add(id);
    // Landed, it reaches the view ahead of the echo (the role hears every landed split write).
    core.splits.write(id, next, cur.revision, "fence").then(async (w) => {
      if (!w.ok) {
        // Our view is behind (a lagging watch): catch up from the record, or the next pass retries this losing write at once.
        const e = await core.splits.entry(id);
        if (e) view.put(e.key, e.value, e.revision);
        return;
      }
      if (!this.#ctx.leading()) return;
      bump(core.stats.revocations, "fenced");
      core.log("warn", "Fenced an owner that did not answer a revocation", { split: id, owner: m.instance });
      m.drop(id, { epoch: r.epoch, reason: "fenced" }); // the thief's grant follows from the view (this write, applied above)
    }).catch((e) => core.log("warn", "Fence write failed; retrying", { split: id, error: String(e) }))
      .finally(() => {
        this.#fencing.delete(id);
        core.schedule();
      });
  }
}
