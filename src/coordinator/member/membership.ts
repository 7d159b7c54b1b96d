/**
 * This worker's membership (docs/DESIGN.md, "Liveness"): registration
 * (registration.ts: a crashed predecessor's record taken over, a live twin
 * refused), one heartbeat CAS per `leaseMs/3` (jittered earlier, never
 * later), and the self-fence that stops everything before any peer can
 * judge us dead.
 *
 * @module
 */
import type { SplitleaseError } from "../../errors.ts";
import { encodeRecord, MemberRecordSchema, type MemberRecord, safeDecodeRecord } from "../../records.ts";
import { keys } from "../../store/keys.ts";
import type { Core } from "../core.ts";
import { type CausedStore, causedStore } from "../../tracing/cause.ts";
import { duplicateInstance, readMemberPast, registerMember } from "./registration.ts";

/** What membership reports back to its coordinator. */
export interface MembershipHooks {
  /** Also beat these (the leader record) alongside the member record. */
  extraBeat(): Promise<void> | undefined;
  /** No successful heartbeat for `leaseMs - margin`. */
  onStarved(): void;
  /** A heartbeat succeeded after a self-fence; `revision` is the member record revision it wrote. */
  onRestored(revision: number): void;
  /** A heartbeat succeeded. */
  onBeat(): void;
  /** Splits held or being claimed now (advertised on each beat). */
  held(): number;
  /** The last committed estimate of each running split that has one (advertised on each beat; see `MemberRecord.est`). */
  estimates(): [string, number, number][];
  /** Revision of the newest assignment record applied (advertised on each beat), if any. */
  seen(): number | undefined;
  /** Another live process uses our instance id. */
  onDuplicate(error: SplitleaseError): void;
  /** An operator wrote `draining: true` into our member record (same session): drain the whole worker. */
  onDrainRequested(): void;
}

/** Least time between two early beats of a shard's member (ms). */
export const EARLY_BEAT_MS = 100;

/** Heartbeats and self-fencing of one worker. */
export class Membership {
  readonly #core: Core;
  readonly #hooks: MembershipHooks;
  readonly #key: string;
  /** The store for heartbeats: traced as events of the membership span, not a span each. */
  readonly #beats: CausedStore;
  #record: MemberRecord;
  #revision = 0;
  #lastOk = 0;
  #starved = false;
  #running = false;
  #draining = false;
  #beatTimer: unknown;
  #inflight: Promise<void> = Promise.resolve();
  #fenceTimer: unknown;

  /** Creates the membership of a coordinator. */
  constructor(core: Core, hooks: MembershipHooks, runtime: string, version: string, planner: boolean) {
    this.#core = core;
    this.#hooks = hooks;
    this.#key = keys.member(core.me.instance);
    this.#beats = causedStore(core.store, core.trace.membership.events);
    this.#record = {
      v: 2,
      session: core.me.session,
      maxInFlight: core.config.maxInFlight,
      runtime,
      version,
      beat: 0,
      lease: core.timings.deadAfterMs, // how long views that cannot watch the revision wait before they judge us gone
    };
    if (planner) this.#record.planner = true;
    if (core.config.splittable) this.#record.splittable = true;
  }

  /** Whether heartbeats are currently failing past the self-fence point. */
  get starved(): boolean {
    return this.#starved;
  }

  /**
   * Whether this worker is self-fenced, fencing it now if the self-fence is
   * overdue but its timer has not run yet: a process that was paused must
   * act on nothing it learned meanwhile (a watch event, a grant) before it
   * has fenced itself.
   */
  checkFence(): boolean {
    const { clock, timings } = this.#core;
    if (this.#running && !this.#starved && clock.now() >= this.#lastOk + timings.selfFenceAfterMs) this.#fence();
    return this.#starved;
  }

  /** Monotonic start time of the last successful heartbeat write. */
  get lastOk(): number {
    return this.#lastOk;
  }

  /**
   * Registers `member.<instance>`: taken over from a crashed predecessor, or
   * refused (`DUPLICATE_INSTANCE`) to a live twin (see {@linkcode registerMember}).
   */
  async register(): Promise<void> {
    const { revision, lastOk } = await registerMember(this.#core, this.#key, this.#record);
    this.#revision = revision;
    this.#lastOk = lastOk;
  }

  /** Starts heartbeating. */
  start(): void {
    this.#running = true;
    this.#armSelfFence();
    this.#scheduleBeat();
  }

  /**
   * Advertises draining on the member record now (one heartbeat ahead of
   * schedule), so peers stop counting this worker as a claimer before its
   * releases land: the next owner then claims without a herd delay.
   */
  async announceDraining(): Promise<void> {
    if (this.#draining || !this.#running) {
      this.#draining = true;
      return;
    }
    this.#draining = true;
    await this.#inflight;
    if (this.#beatTimer !== undefined) this.#core.clock.clearTimeout(this.#beatTimer);
    this.#beatTimer = undefined;
    await this.#beat();
  }

  /** Stops heartbeating (no write). */
  stop(): void {
    this.#running = false;
    const { clock } = this.#core;
    if (this.#beatTimer !== undefined) clock.clearTimeout(this.#beatTimer);
    if (this.#fenceTimer !== undefined) clock.clearTimeout(this.#fenceTimer);
    this.#beatTimer = this.#fenceTimer = undefined;
  }

  /**
   * Leaves: deletes the member record at our revision so peers act at once
   * (and know we left cleanly: nothing we held is charged an attempt). A
   * record that moved since our last answered write but still names our
   * session (a beat that landed with its reply lost, an operator's drain)
   * is deleted at its revision: left in place, it would read as a crash.
   */
  async leave(): Promise<void> {
    this.stop();
    const { store, me } = this.#core;
    let revision = this.#revision;
    for (let i = 0; i < 3; i++) {
      if ((await store.delete(this.#key, revision)).ok) return this.#core.trace.left();
      const cur = await store.get(this.#key);
      const rec = cur ? safeDecodeRecord(this.#key, cur.value, MemberRecordSchema) : undefined;
      if (!cur || !rec?.ok || rec.value.session !== me.session) return; // gone, or a twin's now
      revision = cur.revision;
    }
  }

  /**
   * The lanes this shard has changed (a sharded job: the other shards took
   * or freed some): beats early when the leader's idea of them is far off
   * — it deals none where there are some now, or a quarter of
   * `maxInFlight` or more either way — so a lane freed in one shard is not
   * idle for a heartbeat interval before another shard's leader fills it.
   * At most one early beat per {@linkcode EARLY_BEAT_MS}.
   */
  lanesChanged(): void {
    if (!this.#running) return;
    if (this.#beatTimer === undefined) {
      // A beat is in flight: it may have read the lanes before they changed; look again once it is done.
      this.#lanesMoved = true;
      return;
    }
    const { config, clock } = this.#core;
    const told = this.#record.maxInFlight - (this.#record.away ?? 0);
    const now = this.#core.lanes();
    const far = (told === 0 && now > 0) || Math.abs(told - now) >= Math.max(1, Math.ceil(config.maxInFlight / 4));
    if (!far || this.#earlyAt >= clock.now()) return; // an early beat is due already: it writes the lanes of its moment
    const wait = Math.max(0, this.#earlyAt + EARLY_BEAT_MS - clock.now());
    this.#core.clock.clearTimeout(this.#beatTimer);
    this.#earlyAt = clock.now() + wait;
    this.#scheduleBeat(wait);
  }

  /** When the last early beat was due (see {@linkcode Membership.lanesChanged}). */
  #earlyAt = -Infinity;
  /** The lanes changed while a beat was in flight. */
  #lanesMoved = false;

  #scheduleBeat(delay?: number): void {
    if (!this.#running) return;
    const base = this.#core.timings.heartbeatMs;
    const ms = delay ?? base * (1 - 0.1 * this.#core.random());
    this.#beatTimer = this.#core.clock.setTimeout(() => {
      this.#beatTimer = undefined;
      void this.#beat();
    }, ms);
  }

  #beat(): Promise<void> {
    const p = this.#beatOnce();
    this.#inflight = p;
    return p;
  }

  async #beatOnce(): Promise<void> {
    if (!this.#running) return;
    const { clock, log } = this.#core;
    const store = this.#beats;
    // A beat that starts past the self-fence's due time (the process was paused, and the beat's timer ran before
    // the fence's) fences first: landing, it re-arms the fence and would otherwise skip it — nothing would mark
    // grants written while we were presumed dead as older than our restored membership, and one delivered
    // late (a lagging watch) started without a write after its split was taken over (sharded simulation, seed 3588).
    this.checkFence();
    const start = clock.now();
    let ok = false;
    try {
      // Two tries: a conflict that only adopts a record we (or an operator's
      // drain) already wrote proves nothing about now — the leader dates our
      // liveness from when that revision appeared, possibly long ago (a
      // maybe-landed beat, then a pause) — so the beat writes again at the
      // adopted revision, and only a write of this beat that lands counts.
      for (let tries = 0; tries < 2 && !ok; tries++) {
        const next: MemberRecord = { ...this.#record, beat: this.#record.beat + 1, held: this.#hooks.held(), at: clock.wallNow() };
        const seen = this.#hooks.seen();
        if (seen !== undefined) next.seen = seen;
        const est = this.#hooks.estimates();
        if (est.length > 0) next.est = est;
        else delete next.est;
        if (this.#draining) next.draining = true;
        // A sharded job's member: what its other shards hold is not this shard's to deal.
        const away = this.#core.config.maxInFlight - this.#core.lanes();
        if (away > 0) next.away = away;
        else delete next.away;
        const r = await store.update(this.#key, encodeRecord(next), this.#revision);
        if (r.ok) {
          this.#record = next;
          this.#revision = r.revision;
          this.#core.landed.note(r.revision, clock.now());
          ok = true;
        } else {
          const c = await this.#onConflict();
          if (c !== "adopted") {
            ok = c === "landed";
            break;
          }
        }
      }
    } catch (e) {
      log("warn", "Heartbeat failed", { error: String(e) });
    }
    // The leader beat goes after the member beat: a new leader can then tell
    // a dead leader (member record older than its last leader beat) from one
    // that only lost leadership (member record still moving).
    await this.#hooks.extraBeat();
    if (!this.#running) return;
    if (ok) {
      this.#lastOk = start;
      this.#armSelfFence();
      if (this.#starved) {
        this.#starved = false;
        log("info", "Heartbeat restored after a self-fence", {});
        this.#core.trace.memberEvent("heartbeat.restored");
        this.#hooks.onRestored(this.#revision);
      }
      this.#hooks.onBeat();
    }
    this.#scheduleBeat(ok ? undefined : this.#core.timings.heartbeatRetryMs);
    if (this.#lanesMoved) {
      this.#lanesMoved = false;
      this.lanesChanged();
    }
  }

  /**
   * After a heartbeat CAS conflict: `landed` when a write of ours landed
   * now (a create over a deleted record, a replacement of an unreadable
   * one), `adopted` when the record already held our session's write (its
   * revision is taken, nothing was written), `failed` otherwise.
   */
  async #onConflict(): Promise<"landed" | "adopted" | "failed"> {
    const { me } = this.#core;
    const store = this.#beats;
    // Our CAS at #revision lost: the record is past it. A store serving
    // reads from a replica can answer with a version from before — ours,
    // or the session we took the record over from — which proves nothing:
    // read again until the answer is past it, and if it never is, this beat
    // failed (the next one tries again). Taken as it came, an old version
    // of the predecessor's stopped a healthy member with DUPLICATE_INSTANCE,
    // and one of our own adopted a revision that lost again (issue 40).
    const { entry: cur, fresh } = await this.#readPast(store, this.#revision + 1);
    if (cur && !fresh) return "failed";
    if (!cur) {
      const r = await store.create(this.#key, encodeRecord(this.#record));
      if (r.ok) this.#revision = r.revision;
      return r.ok ? "landed" : "failed";
    }
    const read = safeDecodeRecord(this.#key, cur.value, MemberRecordSchema);
    if (!read.ok) {
      // Our own record, unreadable: write ours over it (CAS at its revision).
      const r = await store.update(this.#key, encodeRecord(this.#record), cur.revision);
      if (r.ok) {
        this.#revision = r.revision;
        this.#core.replaced.note(this.#key, read.error.message);
      }
      return r.ok ? "landed" : "failed";
    }
    const rec = read.value;
    if (rec.session === me.session) {
      // Our own write landed earlier (a maybe-landed timeout), or an operator
      // asked us to drain (`draining: true` written at our revision): adopt it.
      this.#record = rec;
      this.#revision = cur.revision;
      if (rec.draining && !this.#draining) {
        this.#draining = true;
        this.#core.log("info", "Drain requested on the member record", { instance: me.instance });
        this.#core.trace.memberEvent("drain.requested");
        this.#hooks.onDrainRequested();
      }
      return "adopted";
    }
    this.stop();
    const duplicate = duplicateInstance(this.#core);
    this.#core.trace.close("failed", duplicate); // the membership is a twin's now: its span ends here
    this.#hooks.onDuplicate(duplicate);
    return "failed";
  }

  /** `member.<me>` at revision `floor` or later, read again while older (within an op timeout); absent counts as not fresh. */
  #readPast(store: CausedStore, floor: number) {
    return readMemberPast(this.#core, store, this.#key, floor);
  }

  #armSelfFence(): void {
    const { clock, timings } = this.#core;
    if (this.#fenceTimer !== undefined) clock.clearTimeout(this.#fenceTimer);
    const at = this.#lastOk + timings.selfFenceAfterMs;
    this.#fenceTimer = clock.setTimeout(() => {
      this.#fenceTimer = undefined;
      this.#fence();
    }, at - clock.now());
  }

  #fence(): void {
    if (this.#starved || !this.#running) return;
    this.#starved = true;
    this.#core.stats.selfFences++;
    this.#core.trace.memberEvent("self-fenced");
    this.#hooks.onStarved();
  }
}
