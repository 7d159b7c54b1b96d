/**
 * The leader role's lifecycle (docs/DESIGN.md, "Leader loss", "Plans"):
 * election by create (or CAS over a silent leader after a re-read; when one
 * is due is election.ts's), the term bump on `plan` as the leader fence
 * (term_bump.ts), the leader's heartbeat, the assignment role while leading,
 * and planning off the heartbeat path.
 *
 * @module
 */
import { encodeRecord, type LeaderRecord, LeaderRecordSchema, type PlanRecord, safeDecodeRecord } from "../records.ts";
import { keys } from "../store/keys.ts";
import { causedBy, type Core } from "./core.ts";
import { type CausedStore, causedStore } from "../tracing/cause.ts";
import type { SpanParts } from "../tracing/span_parts.ts";
import type { Follower } from "./member/follower.ts";
import type { OwnReleases } from "./leader/release_hold.ts";
import { LeaderRole, type Predecessor } from "./leader/role.ts";
import { Planning } from "./leader/planning.ts";
import type { Planner } from "./types.ts";
import { newer, readAtLeast } from "./fresh_read.ts";
import { electionDue } from "./election.ts";
import { bumpTerm, repairPlan } from "./term_bump.ts";

/** Leader state machine of one coordinator. */
export class Leadership {
  readonly #core: Core;
  readonly #follower: Follower;
  readonly #planner: Planner | undefined;
  readonly #active: () => boolean;
  readonly #fresh: () => boolean;
  #leading = false;
  #electing = false;
  #term = 0;
  #leaderRev = 0;
  #record: LeaderRecord | undefined;
  #role: LeaderRole | undefined;
  #planning: Planning | undefined;
  readonly #since: number;
  #repairing = false;
  /** An election is writing the leader record (won, term not yet written). */
  #taking = false;
  /** The term's span (tracing on), the cause of its store operations. */
  #lead: SpanParts | undefined;
  /** The environment of the term's parts: the coordinator's, its store operations traced under the term. */
  #leaderCore: Core;
  /** The store of the leader's beats: traced as events of the term, not a span each. */
  #beats: CausedStore;

  /**
   * `active` says whether the coordinator may lead (running, not draining,
   * not self-fenced); `fresh` whether its membership is proven now (its last
   * heartbeat started less than the twin wait ago: no twin can have taken
   * its member record over since).
   */
  /** Whether this member elects a leader while the job is stalled (it stays in it: `afterStall: "wait"`). */
  readonly #leadWhileStalled: boolean;

  constructor(
    core: Core,
    follower: Follower,
    planner: Planner | undefined,
    active: () => boolean,
    fresh: () => boolean,
    leadWhileStalled = false,
  ) {
    this.#leadWhileStalled = leadWhileStalled;
    this.#core = core;
    this.#follower = follower;
    this.#planner = planner;
    this.#active = active;
    this.#fresh = fresh;
    this.#since = core.clock.now();
    this.#leaderCore = core;
    this.#beats = core.store;
  }

  /** Whether this instance currently leads. */
  get leading(): boolean {
    return this.#leading;
  }

  /** The term this instance leads in (0 when not leading). */
  get term(): number {
    return this.#leading ? this.#term : 0;
  }

  /** The assignment role while leading. */
  get role(): LeaderRole | undefined {
    return this.#leading ? this.#role : undefined;
  }

  /** Planning state while leading (failures, for status). */
  get planning(): Planning | undefined {
    return this.#leading ? this.#planning : undefined;
  }

  /**
   * Runs an election when there is no live leader; returns when the next
   * check is due. Members without a planner wait half a lease longer, so a
   * member with one wins when there is one. Never throws.
   */
  maybeElect(now: number): number {
    if (this.#leading || this.#electing || !this.#active()) return Infinity;
    const { me, timings } = this.#core;
    const elector = { me, timings, planner: this.#planner !== undefined, leadWhileStalled: this.#leadWhileStalled, since: this.#since };
    const due = electionDue(this.#follower, elector, now);
    if ("at" in due) return due.at;
    // A session elects itself only while its member record is provably its
    // own: a process woken from a freeze may have been replaced by a twin
    // meanwhile (which then leads under our instance); it waits for its next
    // heartbeat, which either lands (and schedules a pass) or finds the twin
    // (DUPLICATE_INSTANCE).
    if (!this.#fresh()) return Infinity;
    this.#electing = true;
    void this.#elect(due.judged).catch((e) => this.#core.log("warn", "Leader election failed", { error: String(e) }))
      .finally(() => {
        this.#electing = false;
        this.#core.schedule();
      });
    return Infinity;
  }

  async #elect(judged: number | undefined): Promise<void> {
    const { store, me, clock, log } = this.#core;
    const f = this.#follower;
    const record: LeaderRecord = { v: 2, instance: me.instance, session: me.session, term: 0, beat: 0 };
    let predecessor: Predecessor | undefined;
    let replaced: string | undefined;
    let won;
    if (judged === undefined) {
      if (!this.#fresh()) return;
      won = await store.create(keys.leader, encodeRecord(record));
    } else {
      // Re-read before deposing a silent leader: if it moved since the
      // revision we judged silent, we were behind (even if our watch has
      // shown the move meanwhile). An answer older than that revision is a
      // stale read (a store serving reads from a replica), not a move: taken
      // for one, it restarted the lease from an old revision, and every
      // election after it found the record "moved" again (issue 40). Read
      // again; none past it within an op timeout: no election this time.
      const { entry: cur, fresh } = await readAtLeast(() => store.get(keys.leader), judged, this.#wait(), "fresh");
      if (!fresh) return;
      if (cur && cur.revision > judged) {
        f.leaderLiveness.observe(keys.leader, cur.revision, clock.now());
        return;
      }
      if (cur) {
        const old = safeDecodeRecord(keys.leader, cur.value, LeaderRecordSchema);
        if (old.ok) {
          const since = f.leaderLiveness.get(keys.leader)?.since ?? clock.now();
          predecessor = { instance: old.value.instance, session: old.value.session, revision: cur.revision, since };
        } else replaced = old.error.message;
      }
      // Checked again between the re-read and the write (no await between
      // this check and the write going out): a freeze during the re-read
      // leaves the membership unproven.
      if (!this.#fresh() || !this.#active()) return;
      won = cur
        ? await store.update(keys.leader, encodeRecord(record), cur.revision)
        : await store.create(keys.leader, encodeRecord(record));
    }
    if (!won.ok) {
      // Lost to another candidate: learn its record now (our watch may lag)
      // so the next election waits for it to go silent instead of retrying at once.
      const cur = await store.get(keys.leader);
      if (cur) f.applyRead(keys.leader, cur);
      return;
    }
    if (!this.#active()) return;
    if (replaced) this.#core.replaced.note(keys.leader, replaced);
    this.#traceTerm();
    this.#leaderRev = won.revision;
    this.#record = record;
    this.#leading = true;
    this.#taking = true;
    let plan: Pick<PlanRecord, "pages" | "pageTerms"> = {};
    try {
      const bumped = await bumpTerm(this.#leaderCore, this.#follower, { leading: () => this.#leading, fresh: () => this.#fresh() });
      if (bumped === undefined) return this.stop();
      const { term } = bumped;
      plan = bumped.plan;
      this.#term = term;
      this.#record = { ...record, term };
      this.#lead?.set({ "splitlease.term": term });
      if (!this.#fresh()) return this.stop();
      const r = await this.#leaderCore.store.update(keys.leader, encodeRecord(this.#record), this.#leaderRev);
      if (!r.ok) return this.stop();
      this.#leaderRev = r.revision;
    } catch (e) {
      // Half-elected (no term, or the term not on the leader record): stop
      // leading, so the lease lapses into a new election.
      this.stop();
      throw e;
    } finally {
      this.#taking = false;
    }
    const term = this.#term;
    log("info", "Leader elected", { instance: me.instance, term });
    const core = this.#leaderCore;
    const role = (this.#role = new LeaderRole(
      core,
      term,
      () => this.#deposed("a newer term wrote an assignment record"),
      (entry) => this.#follower.applyRead(keys.plan, entry),
    ));
    this.#planning = this.#planner
      ? new Planning(core, this.#planner, role, () => this.#stillLeading(role), () => this.#follower.plan)
      : undefined;
    try {
      log("debug", "Leader role starting", { term });
      await role.start(predecessor, plan);
      log("debug", "Leader role started", { term, splits: role.view.splits.size, members: role.view.members.size });
    } catch (e) {
      if (this.#role === role) this.stop();
      throw e;
    }
    if (this.#role !== role) return;
    this.#planning?.schedule(0);
    this.#core.schedule();
  }

  /** A won election: the term's span, and the store of its parts and beats traced under it. */
  #traceTerm(): void {
    const lead = (this.#lead = this.#core.trace.leadership());
    this.#leaderCore = lead ? causedBy(this.#core, lead) : this.#core;
    this.#beats = lead ? causedStore(this.#core.store, lead.events) : this.#core.store;
  }

  #stillLeading(role: LeaderRole): boolean {
    return this.#leading && this.#role === role;
  }

  /** How long reads of a record known to be past a revision are tried again. */
  #wait() {
    return { clock: this.#core.clock, budgetMs: this.#core.config.opTimeoutMs };
  }

  /** A plan record that turned unreadable while we lead: write ours back (CAS at its revision). */
  async #repairPlan(revision: number): Promise<void> {
    if (await repairPlan(this.#leaderCore, this.#follower, this.#term, revision)) {
      this.planning?.schedule(0); // plan again: the published state may be lost
    }
  }

  /** The leader's pass (assignment); returns when the next one is due. */
  reconcile(own: OwnReleases): number {
    const role = this.role;
    if (!role) return Infinity;
    // Like an election, leading needs a proven membership: a leader woken
    // from a freeze whose member record a twin took over meanwhile would
    // otherwise act on its backlog (take its own splits over for the twin,
    // charging attempts) before its heartbeat finds the twin. The next
    // heartbeat that lands schedules a pass.
    if (!this.#fresh()) return Infinity;
    const garbage = this.#follower.unreadable.get(keys.plan);
    if (garbage !== undefined && !this.#repairing) {
      this.#repairing = true;
      void this.#repairPlan(garbage).catch((e) => this.#core.log("warn", "Plan repair failed; retrying", { error: String(e) }))
        .finally(() => (this.#repairing = false));
    }
    const plan = this.#follower.plan?.record;
    if (plan && plan.term > this.#term) {
      // A newer term was bumped (an election we did not see): we are deposed.
      this.#deposed(`the plan record carries term ${plan.term}`);
      return Infinity;
    }
    // A rerun resets the plan under a leader that planned already: plan again
    // (only once the role is ready: its first planning run starts after the
    // role's start, whose view seeds for idle lanes need).
    if (role.ready) this.#planning?.onPlan(plan);
    return role.reconcile(plan, this.#follower.plan?.revision, own);
  }

  /** Leader heartbeat: one CAS on `leader`, carrying the job counts. A conflict means we were deposed. */
  async beat(): Promise<void> {
    const { log, me } = this.#core;
    const store = this.#beats;
    // Not while an election is writing the leader record itself (a beat would
    // move it under the election's CAS, and the election would give up).
    if (!this.#leading || !this.#record || this.#taking) return;
    const next: LeaderRecord = { ...this.#record, beat: this.#record.beat + 1 };
    const counts = this.#role?.ready ? this.#role.counts() : undefined;
    if (counts) next.counts = counts;
    try {
      const r = await store.update(keys.leader, encodeRecord(next), this.#leaderRev);
      if (!this.#leading) return;
      if (r.ok) {
        this.#leaderRev = r.revision;
        this.#record = next;
        return;
      }
      // Moved: by our own earlier beat whose reply was lost, or by a successor.
      // Either way the record is past #leaderRev now: an answer from before
      // it (a store serving reads from a replica: our own older beat, our
      // predecessor's record, absent) proves nothing, and deposed a healthy
      // leader (issue 40). Read again until past it, or take the leader
      // watch's value when that is past it; neither: decide at the next beat.
      const rev = this.#leaderRev;
      const { entry, fresh } = await readAtLeast(() => store.get(keys.leader), rev + 1, this.#wait());
      const decoded = fresh && entry ? safeDecodeRecord(keys.leader, entry.value, LeaderRecordSchema) : undefined;
      const read = decoded && entry ? { record: decoded.ok ? decoded.value : undefined, revision: entry.revision } : undefined;
      const watched = this.#follower.leader;
      const cur = newer(read, watched && watched.revision > rev ? watched : undefined);
      if (!this.#leading || this.#leaderRev !== rev) return;
      if (!cur) return log("warn", "Leader heartbeat: the store answered from before our last beat; trying again at the next", {});
      if (cur.record && cur.record.session === me.session && cur.record.term === this.#term) {
        this.#leaderRev = cur.revision;
        this.#record = cur.record;
      } else {
        this.#deposed("its leader record moved");
      }
    } catch (e) {
      log("warn", "Leader heartbeat failed", { error: String(e) });
    }
  }

  /** Stops leading; gives the leader record up (guarded by our revision) so the next election need not wait a lease. */
  #deposed(why: string): void {
    if (!this.#leading) return;
    this.#core.log("warn", "Leader deposed", { instance: this.#core.me.instance, term: this.#term, why });
    void this.resign(undefined, why);
    this.#core.schedule();
  }

  /** Stops leading locally (no write): aborts the planner, drops the leader's view. */
  stop(): void {
    this.#core.trace.endLeadership(this.#lead, "stopped");
    this.#leading = false;
    this.#planning?.stop();
    this.#planning = undefined;
    const role = this.#role;
    this.#role = undefined;
    void role?.stop();
  }

  /**
   * Stops leading and deletes the leader record so a peer takes over at once.
   * With `handOver` (a member leaving, not a deposed leader) it first writes
   * what its own releases changed (see `LeaderRole.settle`); with `deposed`
   * (why) the term's span ends `deposed`, else `resigned`.
   */
  async resign(handOver?: () => OwnReleases, deposed?: string): Promise<void> {
    const role = this.role;
    if (handOver && this.#leading && role) {
      await role.settle(this.#follower.plan?.record, this.#core.config.opTimeoutMs, handOver);
    }
    const was = this.#leading;
    const lead = this.#lead;
    this.#lead = undefined; // ended below, after the delete it covers
    this.stop();
    if (was) {
      try {
        await this.#leaderCore.store.delete(keys.leader, this.#leaderRev);
      } catch (e) {
        this.#core.log("warn", "Leader resignation failed", { error: String(e) });
      }
    }
    this.#core.trace.endLeadership(lead, deposed === undefined ? "resigned" : "deposed", deposed);
  }
}
