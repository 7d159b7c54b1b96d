/**
 * Who is dead, and whose splits the leader takes over (docs/DESIGN.md,
 * "Liveness: judged by the leader" and "Takeover, revocation and leader
 * loss"): a member whose record has not moved for a lease is re-read before
 * it is judged dead; splits whose owner session is gone are taken over
 * (after `rebalanceDelayMs`), at once for a restarted instance; a split a
 * member judged dead wrote since (it woke, and our member watch lags) makes
 * the leader re-read that member first.
 *
 * @module
 */
import { type MemberRecord, MemberRecordSchema, type Owner, safeDecodeRecord } from "../../records.ts";
import { keys } from "../../store/keys.ts";
import type { Core, Versioned } from "../core.ts";
import type { LivenessTracker } from "../liveness.ts";
import { type LeaderView, ownerKey, parseOwnerKey } from "./leader_view.ts";
import type { MemberState } from "./member_state.ts";

/** What the judge needs from the leader's role. */
export interface JudgeHost {
  readonly core: Core;
  readonly view: LeaderView;
  readonly states: Map<string, MemberState>;
  readonly liveness: LivenessTracker;
  /** Whether the role stopped (replies that arrive later change nothing). */
  stopped(): boolean;
  /** Forgets a member judged dead (its offers go back to the pool). */
  drop(st: MemberState): void;
  /**
   * Takes `ids` over from `owner`: granted to `heir` (a restarted instance)
   * or freed; `charge` says whether it costs an attempt (not when `owner`
   * left cleanly).
   */
  take(owner: Owner, ids: string[], heir: MemberState | undefined, why: "restarted" | "gone" | "left", charge: boolean): void;
  /** Brings a member judged dead back from its record (the view already holds it). */
  revive(instance: string, record: Versioned<MemberRecord>): void;
}

interface Gone {
  /** Leader time it was judged dead or left (for `rebalanceDelayMs`). */
  since: number;
  /** For one judged dead by silence: the member revision confirmed dead. */
  revision?: number;
  /** ... and the newest split revision of its splits when that was last confirmed. */
  checked?: number;
}

/** The leader's judgement of members' deaths. */
export class DeathJudge {
  readonly #h: JudgeHost;
  readonly #gone = new Map<string, Gone>();
  /** Instance → the session of it that deleted its own member record (left cleanly) last. */
  readonly #leftClean = new Map<string, string>();
  /** Member keys whose record is being re-read before a takeover. */
  readonly #rereading = new Set<string>();

  constructor(host: JudgeHost) {
    this.#h = host;
  }

  /** A member record was deleted (a clean leave) by `session`, its writer. */
  left(instance: string, now: number, session?: string): void {
    this.#gone.set(instance, { since: now });
    if (session !== undefined) this.#leftClean.set(instance, session);
  }

  /** A member record named a new session (a restart): the old session is gone. */
  replaced(instance: string, now: number): void {
    this.#gone.set(instance, { since: now });
  }

  /**
   * A member record at `revision` appeared for an instance with no live
   * state: false while it is still the record judged dead, else it counts
   * as live again.
   */
  returning(instance: string, revision: number): boolean {
    if (this.#gone.get(instance)?.revision === revision) return false;
    this.#gone.delete(instance);
    return true;
  }

  /** Members whose record stopped moving: re-read, then treat as gone. Returns the next expiry. */
  judge(now: number): number {
    const { store, clock } = this.#h.core;
    let next = Infinity;
    for (const [instance, st] of [...this.#h.states]) {
      const key = st.memberKey;
      const exp = this.#h.liveness.expiresAt(key, this.#h.core.timings.deadAfterMs);
      if (exp === undefined) continue;
      if (exp > now) {
        next = Math.min(next, exp);
        continue;
      }
      if (this.#rereading.has(key)) continue;
      this.#rereading.add(key);
      const seen = this.#h.liveness.get(key)?.revision;
      const checked = this.#newestSplitOf(ownerKey(instance, st.session));
      store.get(key).then((cur) => {
        if (this.#h.stopped() || this.#h.states.get(instance) !== st) return;
        // The watch moved it while the read was out (a beat can be delivered
        // before the read answers): alive, and already dated by the watch.
        if (this.#h.liveness.get(key)?.revision !== seen) return;
        if (cur && cur.revision !== seen) {
          this.#h.view.put(cur.key, cur.value, cur.revision); // we were behind: it is alive
          this.#h.liveness.observe(key, cur.revision, clock.now());
          return;
        }
        this.#h.core.log("warn", "Member judged dead: its record did not move for a lease", { member: instance });
        this.#gone.set(instance, { since: exp, revision: seen, checked });
        this.#h.drop(st);
      }).catch((e) => this.#h.core.log("warn", "Re-read before a takeover failed", { member: instance, error: String(e) }))
        .finally(() => {
          this.#rereading.delete(key);
          this.#h.core.schedule();
        });
    }
    return next;
  }

  #owners = new Map<string, { instance: string; session: string }>();

  /** {@linkcode parseOwnerKey}, remembered: every pass walks every owner. */
  #owner(k: string): { instance: string; session: string } {
    let o = this.#owners.get(k);
    if (!o) {
      if (this.#owners.size > 4 * this.#h.view.byOwner.size + 64) this.#owners.clear();
      this.#owners.set(k, (o = parseOwnerKey(k)));
    }
    return o;
  }

  /** Splits whose owner session is not a live member: take them over (after `rebalanceDelayMs`). */
  orphans(now: number): number {
    const delay = this.#h.core.config.rebalanceDelayMs;
    let next = Infinity;
    for (const [k, ids] of this.#h.view.byOwner) {
      const owner = this.#owner(k);
      const st = this.#h.states.get(owner.instance);
      if (st && st.session === owner.session) continue; // alive (draining ones too)
      if (this.#rereading.has(keys.member(owner.instance))) continue;
      // A restarted instance reclaims its predecessor's splits at once.
      const heir = st && !st.draining && st.maxInFlight > 0 ? st : undefined;
      if (!heir && this.#h.view.members.has(owner.instance) && this.#h.view.members.get(owner.instance)!.record.session === owner.session &&
        !this.#gone.has(owner.instance)) continue; // not judged yet
      const gone = this.#gone.get(owner.instance);
      if (!heir && gone?.checked !== undefined && this.#newestSplitOf(k) > gone.checked) {
        // A split of a member judged dead moved since it was judged: it may
        // have woken (a claim from its offers after a pause) while our
        // member watch lags behind our split watch. Re-read its record first.
        this.#recheck(owner.instance, owner.session, k, gone);
        continue;
      }
      if (!heir && delay > 0) {
        const since = this.#gone.get(owner.instance)?.since ?? now;
        if (!this.#gone.has(owner.instance)) this.#gone.set(owner.instance, { since });
        if (now < since + delay) {
          next = Math.min(next, since + delay);
          continue;
        }
      }
      // A split still naming a session that left cleanly (a release of its
      // that failed, or a release to it as successor that landed after it
      // left) did not end by a crash: it moves with no attempt charged. We
      // saw that session delete its own member record; or its instance has
      // no record at all (a crashed member's record stays: only a leave
      // deletes one); or a later session created a fresh one (no `took`: it
      // took no record over, so the last one was deleted by a leave). A
      // leader elected after the successor left (a rolling restart takes
      // the leader too) sees only the record as it is now.
      const cur = this.#h.view.members.get(owner.instance)?.record;
      const clean = this.#leftClean.get(owner.instance) === owner.session ||
        (cur === undefined ? gone?.revision === undefined : cur.session !== owner.session && cur.took === undefined);
      this.#h.take(owner, [...ids], heir, clean ? "left" : heir ? "restarted" : "gone", !clean);
    }
    return next;
  }

  /** The newest revision of the splits the view names `owner` ("instance|session") for, 0 if none. */
  #newestSplitOf(owner: string): number {
    let newest = 0;
    for (const id of this.#h.view.byOwner.get(owner) ?? []) newest = Math.max(newest, this.#h.view.splits.get(id)?.revision ?? 0);
    return newest;
  }

  /**
   * Re-reads the record of a member judged dead: a moved record brings it
   * back (the view applies it and the member is live again); an unmoved one
   * confirms the judgment up to the split revisions seen now.
   */
  #recheck(instance: string, session: string, owner: string, gone: { revision?: number; checked?: number }): void {
    const key = keys.member(instance);
    if (this.#rereading.has(key)) return;
    this.#rereading.add(key);
    const newest = this.#newestSplitOf(owner);
    this.#h.core.store.get(key).then((cur) => {
      if (this.#h.stopped() || this.#gone.get(instance) !== gone) return;
      const rec = cur ? safeDecodeRecord(key, cur.value, MemberRecordSchema) : undefined;
      if (cur && rec?.ok && rec.value.session === session && cur.revision !== gone.revision) {
        // The same session wrote its record again: alive after all.
        this.#gone.delete(instance);
        const held = this.#h.view.members.get(instance);
        if (held && held.revision >= cur.revision) this.#h.revive(instance, held);
        else this.#h.view.put(cur.key, cur.value, cur.revision);
        this.#h.liveness.observe(key, cur.revision, this.#h.core.clock.now());
        return;
      }
      // Unmoved, gone or another session's: the judgment stands for what we saw.
      gone.checked = Math.max(gone.checked ?? 0, newest);
    }).catch((e) => this.#h.core.log("warn", "Re-read before a takeover failed", { member: instance, error: String(e) }))
      .finally(() => {
        this.#rereading.delete(key);
        this.#h.core.schedule();
      });
  }
}
