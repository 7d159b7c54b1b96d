/**
 * Splits whose owner is gone (docs/DESIGN.md, "Takeover, revocation and
 * leader loss"): a dead member (judged by the leader, after a re-read of its
 * record), a member that left, or a previous session of a restarted
 * instance. Each split moves by one CAS — epoch + 1, attempts + 1
 * (quarantined at the cap), owner the restarted instance or the least-loaded
 * member with a free lane (a grant), or nobody (then it is offered).
 *
 * @module
 */
import type { Owner } from "../../records.ts";
import { type Core, decided } from "../core.ts";
import { openRecord } from "../../records/transitions.ts";
import type { AssignmentTracker } from "./assignment_tracker.ts";
import type { LeaderView } from "./leader_view.ts";
import type { MemberState } from "./member_state.ts";
import type { LaneReservation } from "./directives.ts";
import { claimers, freeLanes } from "./offers.ts";

/**
 * Who gets each split of a gone owner: the heir (the same instance,
 * restarted) while it has free lanes, else the least-loaded claimer with a
 * lane free beyond its offers (never the gone session), else nobody (the
 * split is freed and offered). Successors are picked once per split, the
 * load of those already picked counted. Pure.
 *
 * @example
 * ```ts ignore
 * const moves = planTakeover(["s1", "s2"], gone, undefined, claimers(states), (m) => freeLanes(view, tracker, m), (m) => view.loadOfKey(m.key), (m) => tracker.of(m).plain);
 * ```
 */
export function planTakeover(
  ids: readonly string[],
  owner: Owner,
  heir: MemberState | undefined,
  members: readonly MemberState[],
  free: (m: MemberState) => number,
  load: (m: MemberState) => number,
  /** A member's offers for its free lanes (an heir's are not counted: its own splits come first). */
  plain: (m: MemberState) => number,
): { id: string; to: MemberState | undefined }[] {
  const planned = new Map<MemberState, number>();
  const pick = (): MemberState | undefined => {
    if (heir && free(heir) - (planned.get(heir) ?? 0) > 0) return heir;
    let best: MemberState | undefined;
    let bestLoad = Infinity;
    for (const m of members) {
      if (m.instance === owner.instance && m.session === owner.session) continue;
      if (free(m) - (planned.get(m) ?? 0) - plain(m) <= 0) continue;
      const l = load(m) + (planned.get(m) ?? 0);
      if (l < bestLoad) (best = m), (bestLoad = l);
    }
    return best;
  };
  return ids.map((id) => {
    const to = pick();
    if (to) planned.set(to, (planned.get(to) ?? 0) + 1);
    return { id, to };
  });
}

/** Most takeover writes in flight at once. */
const TAKEOVER_WAVE = 64;

/** What the takeover path reads and writes. */
export interface TakeoverCtx {
  core: Core;
  view: LeaderView;
  states: ReadonlyMap<string, MemberState>;
  /** Holds each successor's lane while its takeover is written; tells the former owner to stop. */
  tracker: AssignmentTracker;
  /** Whether this instance still leads. */
  leading(): boolean;
  /** Whether new work may be dealt (false while the job is paused: `dealing_gate.ts`); default true. */
  dealing?(): boolean;
}

/** Runs the takeover writes of one owner's splits, a wave at a time. */
export class Takeovers {
  readonly #ctx: TakeoverCtx;
  /** Splits with a takeover write in flight. */
  readonly inflight: Set<string> = new Set();

  constructor(ctx: TakeoverCtx) {
    this.#ctx = ctx;
  }

  /**
   * Moves every split of `owner` (whose session is gone), preferring
   * `heir` (the same instance, restarted) when given. `charge` says whether
   * the move costs an attempt (every non-graceful end does; a member that
   * left cleanly did not end its splits non-gracefully).
   */
  take(owner: Owner, ids: readonly string[], heir: MemberState | undefined, reason: string, charge = true): void {
    const { view, core, tracker } = this.#ctx;
    const todo = ids.filter((id) => !this.inflight.has(id));
    if (todo.length === 0) return;
    decided(core, "warn", "Taking over the splits of a member that is gone", "takeover", {
      owner: owner.instance,
      session: owner.session,
      splits: todo.length,
      reason,
      to: heir?.instance,
    });
    // Paused: nobody is granted the splits (they are freed, and dealt on resume).
    const dealing = this.#ctx.dealing?.() ?? true;
    const moves = dealing
      ? planTakeover(todo, owner, heir, claimers(this.#ctx.states), (m) => freeLanes(view, tracker, m), (m) => view.loadOfKey(m.key), (m) => tracker.of(m).plain)
      : todo.map((id) => ({ id, to: undefined }));
    void this.#run(moves, charge);
  }

  async #run(moves: { id: string; to: MemberState | undefined }[], charge: boolean): Promise<void> {
    // A successor's lane stays reserved until its write lands (the view then
    // counts the split as held) or fails: the pass that decided the move
    // also deals offers, and would deal the same lane again.
    const { tracker } = this.#ctx;
    const reserved = new Map<{ id: string; to: MemberState | undefined }, LaneReservation>();
    tracker.edit((d) => {
      for (const m of moves) {
        this.inflight.add(m.id);
        if (m.to) reserved.set(m, d.reserve(m.to, "takeover"));
      }
    });
    const done = (m: { id: string; to: MemberState | undefined }) => {
      const r = reserved.get(m);
      if (r) (reserved.delete(m), tracker.edit((d) => d.release(r)));
    };
    try {
      for (let i = 0; i < moves.length && this.#ctx.leading(); i += TAKEOVER_WAVE) {
        await Promise.all(moves.slice(i, i + TAKEOVER_WAVE).map((m) => this.#one(m.id, m.to, charge).finally(() => done(m))));
      }
    } finally {
      for (const m of moves) (this.inflight.delete(m.id), done(m));
      this.#ctx.core.schedule();
    }
  }

  async #one(id: string, to: MemberState | undefined, charge: boolean): Promise<void> {
    const { view, core } = this.#ctx;
    const held = view.splits.get(id);
    if (!held || held.record.status !== "runnable" || !held.record.owner) return;
    const old = held.record.owner;
    try {
      // The view keeps what decisions read, not the record: the takeover goes over the record as it is,
      // read now, and only while it is what the view judged (else the view catches up, the next pass decides).
      const read = await core.splits.look(id);
      const cur = read?.current;
      if (!cur || cur.revision !== held.revision) return view.learn(read?.entry);
      // The successor may have gone meanwhile.
      const heir = to && this.#ctx.states.get(to.instance) === to && !to.draining ? to : undefined;
      const next = openRecord(cur.record, heir?.owner ?? null, charge, core.config.maxAttempts, core.clock.wallNow());
      core.stats.claimAttempts++;
      // Landed, it reaches the view ahead of the echo (the role hears every landed split write).
      const r = await core.splits.write(id, next, cur.revision, "takeover");
      if (!r.ok) return view.learn(await core.splits.entry(id)); // moved: the next pass decides again, on the record as it is now
      const former = this.#ctx.states.get(old.instance);
      if (former && former.session === old.session) {
        this.#ctx.tracker.edit((d) => d.drop(former, id, { epoch: cur.record.epoch, reason: "expired" })); // the landing's own draft
      }
      // A grant to the heir follows from the view (this write, applied above).
      if (next.status === "quarantined") {
        core.events.push({ type: "quarantined", splitId: id, attempts: next.attempts });
        decided(core, "warn", "Split quarantined", "split.quarantined", { split: id, attempts: next.attempts });
      }
    } catch (e) {
      core.log("warn", "Takeover write failed; retrying on the next pass", { split: id, error: String(e) });
    }
  }
}
