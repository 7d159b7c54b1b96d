/**
 * The leader's revocations applied (docs/DESIGN.md, "Takeover, revocation
 * and leader loss"; the rules are in `revocation_rules.ts`): each revocation
 * is a directive in the owner's assignment record; the owner releases to
 * the named successor (epoch + 1), and the leader grants the split to it.
 * This file applies the revocation intents to the tracker (which keeps them:
 * who was asked, the successor expecting the split), keeps when balancing
 * runs next, and writes the fences.
 *
 * @module
 */
import { type Core, decided } from "../core.ts";
import { bump, observe } from "../stats.ts";
import { openRecord } from "../../records/transitions.ts";
import type { LeaderView } from "./leader_view.ts";
import type { FenceIntent, LeaderIntent, NameIntent, RevokeIntent, SettleIntent, WithdrawIntent } from "./intents.ts";
import type { MemberState } from "./member_state.ts";
import { decideRevocations, decideSteals } from "./revocation_rules.ts";
import type { AssignmentTracker } from "./assignment_tracker.ts";

/** What revocations read and write. */
export interface RevocationCtx {
  core: Core;
  view: LeaderView;
  states: ReadonlyMap<string, MemberState>;
  /** Keeps every revocation (owner, successor expecting it); written in the draft the intents are applied in. */
  tracker: AssignmentTracker;
  leading(): boolean;
  /** Whether new work may be dealt (false while the job is paused: drains name no successor); default true. */
  dealing?(): boolean;
}

/** The leader's revocations. */
export class Revocations {
  readonly #ctx: RevocationCtx;
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

  /** Applies the settlement of a revocation (see `decideSettled` in revocation_rules.ts). */
  settle({ member: m, id, handoverSeconds }: SettleIntent): void {
    if (handoverSeconds !== undefined) observe(this.#ctx.core.stats.handoverSeconds, handoverSeconds);
    this.#delete(m, id);
    this.#urgent = true; // a steal settled: the next one may be due
  }

  /** Forgets the revocations of a member that is gone (and those naming it), in the draft its departure is applied in. */
  forget(m: MemberState): void {
    const { tracker } = this.#ctx;
    for (const id of [...tracker.of(m).revokes.keys()]) tracker.unrevoke(m, id);
    for (const o of this.#ctx.states.values()) {
      for (const [id, r] of tracker.of(o).revokes) {
        if (r.to?.instance !== m.instance || r.to.session !== m.session) continue;
        if (r.steal) this.withdraw({ kind: "withdraw", member: o, id });
        else tracker.unnameSuccessor(o, id); // a drain goes on; only its successor is gone
      }
    }
    this.#urgent = true;
  }

  #delete(m: MemberState, id: string): void {
    this.#ctx.tracker.unrevoke(m, id);
  }

  /** Applies a withdrawal of a steal. */
  withdraw(i: WithdrawIntent): void {
    if (!this.#ctx.tracker.of(i.member).revokes.get(i.id)?.steal) return;
    this.#delete(i.member, i.id);
    bump(this.#ctx.core.stats.revocations, "withdrawn");
  }

  /** Applies a revocation: listed for its owner, expected by its successor. */
  revoke(i: RevokeIntent): void {
    this.#ctx.tracker.revoke(i.member, i.id, i.revoke);
    if (i.revoke.steal) decided(this.#ctx.core, "debug", "Steal requested", "revocation.requested", { split: i.id, from: i.member.instance, to: i.revoke.to?.instance });
  }

  /** Applies a successor named for a drain revocation. */
  name(i: NameIntent): void {
    this.#ctx.tracker.nameSuccessor(i.member, i.id, i.to);
  }

  /**
   * One pass's decisions: the standing revocations (see
   * {@linkcode decideRevocations}), then — rate-limited, only when nothing
   * is free — new steals. `apply` applies each batch before the next is
   * decided. Returns when the next pass is due.
   */
  cycle(now: number, sig: string, nothingFree: boolean, apply: (intents: LeaderIntent[]) => void): number {
    const { view, states, tracker, core } = this.#ctx;
    if (sig !== this.#lastSig) this.#urgent = true;
    const standing = decideRevocations({ view, states, tracker, now, dealing: this.#ctx.dealing?.() ?? true }, sig, core.timings.deafOwnerFenceMs);
    apply(standing.intents);
    const next = standing.next;
    if (!nothingFree || states.size < 2) return next;
    const wait = this.#urgent ? this.minIntervalMs : this.intervalMs;
    if (now - this.#lastRun < wait) return Math.min(next, this.#lastRun + wait);
    this.#lastRun = now;
    this.#lastSig = sig;
    this.#urgent = false;
    apply(decideSteals({ view, states, tracker, now }, sig, core.config.job, (id) => tracker.revocationOf(id)?.revoke));
    return Math.min(next, now + this.intervalMs);
  }

  /** Applies a fence: the owner never answered, so open the next epoch for the thief and tell the owner to stop. */
  fence({ member: m, id, revoke: r, thief }: FenceIntent): void {
    const { view, core } = this.#ctx;
    if (this.#fencing.has(id)) return;
    const held = view.splits.get(id);
    if (!held || held.record.epoch !== r.epoch) return;
    this.#fencing.add(id);
    // The view keeps what decisions read, not the record: the write goes over the record as it is,
    // read now, and only while it is still what the view decided on (else the view catches up).
    core.splits.look(id).then(async (read) => {
      const cur = read?.current;
      if (!cur || cur.revision !== held.revision) return view.learn(read?.entry);
      const next = openRecord(cur.record, thief.owner, false, core.config.maxAttempts, core.clock.wallNow());
      // Landed, it reaches the view ahead of the echo (the role hears every landed split write).
      const w = await core.splits.write(id, next, cur.revision, "fence");
      if (!w.ok) {
        // Our view is behind (a lagging watch): catch up from the record, or the next pass retries this losing write at once.
        view.learn(await core.splits.entry(id));
        return;
      }
      if (!this.#ctx.leading()) return;
      bump(core.stats.revocations, "fenced");
      decided(core, "warn", "Fenced an owner that did not answer a revocation", "revocation.fenced", { split: id, owner: m.instance });
      // The thief's grant follows from the view (this write, applied above); the landing commits its own draft.
      this.#ctx.tracker.edit((d) => d.drop(m, id, { epoch: r.epoch, reason: "fenced" }));
    }).catch((e) => core.log("warn", "Fence write failed; retrying", { split: id, error: String(e) }))
      .finally(() => {
        this.#fencing.delete(id);
        core.schedule();
      });
  }
}
