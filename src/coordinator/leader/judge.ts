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
import { type MemberRecord, MemberRecordSchema, safeDecodeRecord } from "../../records.ts";
import { keys } from "../../store/keys.ts";
import { type Core, decided } from "../core.ts";
import type { Versioned } from "../versioned.ts";
import type { StoreEntry } from "../../store/store.ts";
import type { LivenessTracker } from "../liveness.ts";
import type { Decision, GoneIntent, LeaderIntent, RecheckIntent, RereadIntent } from "./intents.ts";
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
  /** Brings a member judged dead back from its record (the view already holds it). */
  revive(instance: string, record: Versioned<MemberRecord>): void;
  /**
   * Whether the view has applied every member change made before the call
   * (the member watch's position; `undefined`: the store cannot tell).
   */
  membersCaughtUp(): Promise<boolean | undefined>;
}

/**
 * A new leader dates the member records its snapshot brought in. Every
 * member was dated from its first sighting (now); each record is dated
 * earlier when we know it landed earlier: before the reply of our first
 * heartbeat above its revision (revisions are bucket-wide, in landing
 * order), and the predecessor's (`prev`: the member that led before, its
 * last leader beat's revision, and when we first saw that beat), if older
 * than its last leader beat, from when we first saw that beat. A dead
 * leader's last member beat may postdate its last leader beat (it died
 * between the two): dated from its first sighting, its splits waited an
 * extra lease.
 *
 * @example
 * ```ts ignore
 * dateMembers(core, view, liveness, { instance: "pod-1", session: "s1", revision: 40, since: 1200 });
 * ```
 */
export function dateMembers(
  core: Pick<Core, "clock" | "landed">,
  view: LeaderView,
  liveness: LivenessTracker,
  prev: { instance: string; session: string; revision: number; since: number } | undefined,
): void {
  const { clock, landed } = core;
  for (const [instance, m] of view.members) {
    const key = keys.member(instance);
    const seen = liveness.get(key);
    if (!seen || seen.revision !== m.revision) continue; // moved since the snapshot: dated by the watch
    let since = Math.min(seen.since, landed.before(m.revision) ?? Infinity);
    if (prev && instance === prev.instance && m.record.session === prev.session && m.revision < prev.revision) {
      since = Math.min(since, prev.since);
    }
    if (since < seen.since) liveness.set(key, m.revision, Math.min(since, clock.now()));
  }
}

/** A member judged dead or gone, as the judge remembers it. */
export interface Gone {
  /** Leader time it was judged dead or left (for `rebalanceDelayMs`). */
  since: number;
  /** For one judged dead by silence: the member revision confirmed dead. */
  revision?: number;
  /** ... and the newest split revision of its splits when that was last confirmed. */
  checked?: number;
}

/**
 * Members whose record stopped moving for `deadAfterMs` (by the leader's
 * own clock): each is re-read before it is judged dead. Pure.
 *
 * @example
 * ```ts ignore
 * const { intents, next } = decideDeaths(states, liveness, timings.deadAfterMs, clock.now());
 * ```
 */
export function decideDeaths(
  states: ReadonlyMap<string, MemberState>,
  liveness: LivenessTracker,
  deadAfterMs: number,
  now: number,
): Decision {
  const intents: LeaderIntent[] = [];
  let next = Infinity;
  for (const st of states.values()) {
    const exp = liveness.expiresAt(st.memberKey, deadAfterMs);
    if (exp === undefined) continue;
    if (exp > now) next = Math.min(next, exp);
    else intents.push({ kind: "reread", member: st, expiredAt: exp });
  }
  return { intents, next };
}

/** What {@linkcode decideOrphans} reads. */
export interface OrphanInput {
  view: LeaderView;
  states: ReadonlyMap<string, MemberState>;
  now: number;
  /** `rebalanceDelayMs`: how long the splits of a member that is gone wait for it. */
  delayMs: number;
  /** Members judged dead or gone, by instance. */
  gone: ReadonlyMap<string, Gone>;
  /** Instance → the session of it that left cleanly last. */
  leftClean: ReadonlyMap<string, string>;
  /** Member keys whose record is being re-read. */
  rereading: ReadonlySet<string>;
  /** The owner an owner key names. */
  owner(key: string): { instance: string; session: string };
}

/** The newest revision of the splits the view names `owner` ("instance|session") for, 0 if none. */
export function newestSplitOf(view: LeaderView, owner: string): number {
  let newest = 0;
  for (const id of view.byOwner.get(owner) ?? []) newest = Math.max(newest, view.splits.get(id)?.revision ?? 0);
  return newest;
}

/**
 * Splits whose owner session is not a live member: taken over after
 * `rebalanceDelayMs` (dated by a `gone` intent when first seen), at once by
 * a restarted instance (the heir); charged an attempt unless the owner left
 * cleanly; re-checked first when a split of a member judged dead moved
 * since its judgment. Pure.
 *
 * @example
 * ```ts ignore
 * const { intents, next } = decideOrphans({ view, states, now, delayMs, gone, leftClean, rereading, owner: parseOwnerKey });
 * ```
 */
export function decideOrphans(input: OrphanInput): Decision {
  const { view, states, now, delayMs } = input;
  const dated = new Map<string, Gone>();
  const goneOf = (instance: string) => input.gone.get(instance) ?? dated.get(instance);
  const intents: LeaderIntent[] = [];
  let next = Infinity;
  for (const [k, ids] of view.byOwner) {
    const owner = input.owner(k);
    const st = states.get(owner.instance);
    if (st && st.session === owner.session) continue; // alive (draining ones too)
    if (input.rereading.has(keys.member(owner.instance))) continue;
    // A restarted instance reclaims its predecessor's splits at once.
    const heir = st && !st.draining && st.maxInFlight > 0 ? st : undefined;
    const gone = goneOf(owner.instance);
    if (!heir && !gone && view.members.get(owner.instance)?.record.session === owner.session) continue; // not judged yet
    if (!heir && !gone && !view.members.has(owner.instance)) {
      // No record of its instance in our view: it may exist all the same —
      // a member that joined between our member and split snapshots, or a
      // member watch that lags the split watch. Read it before judging.
      intents.push({ kind: "recheck", instance: owner.instance, session: owner.session, ownerKey: k });
      continue;
    }
    if (!heir && gone?.checked !== undefined && newestSplitOf(view, k) > gone.checked) {
      // A split of a member judged dead moved since it was judged: it may
      // have woken (a claim from its offers after a pause) while our
      // member watch lags behind our split watch. Re-read its record first.
      intents.push({ kind: "recheck", instance: owner.instance, session: owner.session, ownerKey: k });
      continue;
    }
    if (!heir && delayMs > 0) {
      const since = gone?.since ?? now;
      if (!gone) {
        dated.set(owner.instance, { since });
        intents.push({ kind: "gone", instance: owner.instance, since });
      }
      if (now < since + delayMs) {
        next = Math.min(next, since + delayMs);
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
    const cur = view.members.get(owner.instance)?.record;
    const clean = input.leftClean.get(owner.instance) === owner.session ||
      (cur === undefined ? gone?.revision === undefined : cur.session !== owner.session && cur.took === undefined);
    intents.push({ kind: "take", owner: { instance: owner.instance, session: owner.session }, ids: [...ids], heir, why: clean ? "left" : heir ? "restarted" : "gone", charge: !clean });
  }
  return { intents, next };
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

  /** The deaths to judge now (see {@linkcode decideDeaths}). */
  deaths(now: number): Decision {
    return decideDeaths(this.#h.states, this.#h.liveness, this.#h.core.timings.deadAfterMs, now);
  }

  /**
   * Applies a re-read: a member whose record did not move since is judged
   * dead and dropped. A read is true of some revision, not necessarily of
   * now (a store serving reads from a replica): one newer than the silent
   * revision proves the member wrote since (alive), but one that shows it
   * (or an older one, or none) proves nothing by itself — taken as the
   * truth while our member watch lagged, it had the leader judge a live
   * member dead, itself included (issue 40). The verdict "dead" then waits
   * for the member watch to be caught up with the store (its position): the
   * view has every member change made before that check, and the record
   * still at the silent revision is dead. Behind, the read is tried again
   * shortly; a store that cannot tell decides on the read, as before.
   */
  reread({ member: st, expiredAt: exp }: RereadIntent): void {
    const { instance, memberKey: key } = st;
    if (this.#rereading.has(key)) return;
    this.#rereading.add(key);
    const seen = this.#h.liveness.get(key)?.revision;
    const checked = newestSplitOf(this.#h.view, ownerKey(instance, st.session));
    const moved = () => this.#h.stopped() || this.#h.states.get(instance) !== st || this.#h.liveness.get(key)?.revision !== seen;
    this.#settle(key, async () => {
      const cur = await this.#h.core.store.get(key);
      // The watch moved it while the read was out (a beat can be delivered
      // before the read answers): alive, and already dated by the watch.
      if (moved()) return;
      if (cur && cur.revision > (seen ?? 0)) {
        this.#h.view.learn(cur); // we were behind: it is alive
        this.#h.liveness.observe(key, cur.revision, this.#h.core.clock.now());
        return;
      }
      const caught = await this.#h.membersCaughtUp().catch(() => undefined);
      if (moved()) return;
      if (caught === false || (caught === undefined && cur && cur.revision < (seen ?? 0))) return "later";
      decided(this.#h.core, "warn", "Member judged dead: its record did not move for a lease", "member.judged_dead", { member: instance });
      this.#gone.set(instance, { since: exp, revision: seen, checked });
      this.#h.drop(st);
    });
  }

  /**
   * Runs a re-read of `key` (held in `#rereading` meanwhile: its owner's
   * splits wait); `"later"` keeps it held a little longer before the next
   * pass reads again, so a watch that lags is not asked about in a loop.
   */
  #settle(key: string, read: () => Promise<"later" | void>): void {
    const { core } = this.#h;
    const done = () => {
      this.#rereading.delete(key);
      core.schedule();
    };
    read().then((r) => {
      if (r === "later") core.clock.setTimeout(done, core.timings.heartbeatRetryMs);
      else done();
    }, (e) => {
      core.log("warn", "Re-read before a takeover failed", { member: key.slice(keys.memberPrefix.length), error: String(e) });
      done();
    });
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

  /** The splits to take over now (see {@linkcode decideOrphans}). */
  orphans(now: number): Decision {
    return decideOrphans({
      view: this.#h.view,
      states: this.#h.states,
      now,
      delayMs: this.#h.core.config.rebalanceDelayMs,
      gone: this.#gone,
      leftClean: this.#leftClean,
      rereading: this.#rereading,
      owner: (k) => this.#owner(k),
    });
  }

  /** Applies the dating of a departure (kept if one is dated already). */
  date(i: GoneIntent): void {
    if (!this.#gone.has(i.instance)) this.#gone.set(i.instance, { since: i.since });
  }

  /**
   * Re-reads the record of a member judged dead, or of an owner our view
   * holds no record of: a record of that session (moved, for one judged
   * dead) brings it back (the view applies it and the member is live
   * again); otherwise the judgment stands, or is made, up to the split
   * revisions seen now. Only a record of that session is taken from the
   * read itself, when it is newer than the one judged dead or the view
   * never held one; any other verdict is the view's, once the member watch
   * is caught up with the store (a stale read — absent, or an old record of
   * a session that left since — judged as the truth, took a live member's
   * splits over or brought a departed one back; see
   * {@linkcode DeathJudge.reread}).
   */
  recheck({ instance, session, ownerKey: owner }: RecheckIntent): void {
    const key = keys.member(instance);
    const gone = this.#gone.get(instance);
    if (this.#rereading.has(key)) return;
    this.#rereading.add(key);
    const newest = newestSplitOf(this.#h.view, owner);
    const moved = () => this.#h.stopped() || this.#gone.get(instance) !== gone;
    this.#settle(key, async () => {
      const cur = await this.#h.core.store.get(key);
      if (moved()) return;
      const rec = cur ? safeDecodeRecord(key, cur.value, MemberRecordSchema) : undefined;
      const ours = cur && rec?.ok && rec.value.session === session ? cur : undefined;
      // The proof the read gives by itself: a record of that session newer than the one judged dead (a
      // stale read never shows one). A record of an owner our view never held one of proves nothing
      // alone — the member watch may not have delivered it yet (scenario H18), or the read is a replica's
      // from before the member left (seed 34: a departed member came back and was charged for its
      // hand-overs when its lease ran out) — so the member watch's position decides, as below.
      if (ours && gone?.revision !== undefined && ours.revision > gone.revision) return this.#back(instance, key, ours);
      const caught = await this.#h.membersCaughtUp().catch(() => undefined);
      if (moved()) return;
      if (caught === false) return "later";
      if (caught === true) {
        // The view has every member change made before the check: it decides.
        const held = this.#h.view.members.get(instance);
        if (held && held.record.session === session && held.revision !== gone?.revision) return this.#back(instance, key, undefined);
        if (gone) gone.checked = Math.max(gone.checked ?? 0, newest);
        else this.#gone.set(instance, { since: this.#h.core.clock.now(), checked: newest });
        return;
      }
      // The store cannot tell its position: the read decides.
      if (!gone && (!cur || !rec?.ok)) {
        // Absent from the store too (it left cleanly, or never was), or unreadable: gone, from now.
        this.#gone.set(instance, { since: this.#h.core.clock.now(), checked: newest });
        return;
      }
      if (ours && gone?.revision === undefined) return this.#back(instance, key, ours);
      // Unmoved, gone or another session's: the judgment stands for what we saw.
      if (gone) gone.checked = Math.max(gone.checked ?? 0, newest);
      else if (cur) this.#h.view.learn(cur); // another session's: the view decides with it
    });
  }

  /** The same session wrote its record again (`read`, or what the view holds): alive after all. */
  #back(instance: string, key: string, read: StoreEntry | undefined): void {
    this.#gone.delete(instance);
    const held = this.#h.view.members.get(instance);
    if (held && (!read || held.revision >= read.revision)) this.#h.revive(instance, held);
    else this.#h.view.learn(read);
    this.#h.liveness.observe(key, read?.revision ?? held!.revision, this.#h.core.clock.now());
  }
}
