/**
 * The leader's assignment role (docs/DESIGN.md, "Who watches what", "Liveness:
 * judged by the leader", "How a split reaches a worker"): watches every
 * member and split record, judges members' liveness on its own clock, takes
 * over the splits of members that are gone, decides every member's offers,
 * grants, revokes, drops and asks to cut (into a draft of its assignment
 * tracker, which keeps them), writes their assignment records, and decides
 * the job outcome. Started when this instance wins an election, stopped
 * (and its O(splits) state dropped) when it stops leading.
 *
 * @module
 */
import type { JobCounts, MemberRecord, Owner, PlanRecord, SplitRecord } from "../../records.ts";
import { keys } from "../../store/keys.ts";
import type { StoreEntry } from "../../store/store.ts";
import { type Core, decided } from "../core.ts";
import type { Versioned } from "../versioned.ts";
import type { LandedSplit } from "../split_records.ts";
import { LivenessTracker } from "../liveness.ts";
import { WatchSet } from "../watch_set.ts";
import { CompletionJudge, decideCompletion } from "./completion.ts";
import { CutAsks, decideAnswered } from "./cut_asks.ts";
import { MembershipSignature } from "./signature.ts";
import { dateMembers, DeathJudge } from "./judge.ts";
import { adoptDirectives } from "./adopt.ts";
import { readPages } from "./plan_pages.ts";
import { applyIntents, type Decision, type IntentAppliers, LaneLedger, type LeaderIntent } from "./intents.ts";
import { LeaderView } from "./leader_view.ts";
import { type SplitChange, splitChange } from "./split_change.ts";
import type { MemberState } from "./member_state.ts";
import { AssignmentTracker } from "./assignment_tracker.ts";
import type { AssignmentDraft, LaneReservation } from "./directives.ts";
import { type OwnReleases, ReleaseHold, releasedGracefully } from "./release_hold.ts";
import { SeedRuns } from "./seed_runs.ts";
import { decideOffers } from "./offers.ts";
import { leaderAppliers } from "./appliers.ts";
import { decideMemberChange, decideSplitChange } from "./view_changes.ts";
import { RetryBackoff } from "./retry_backoff.ts";
import { Revocations } from "./revocations.ts";
import { decideDrain, decideSettled } from "./revocation_rules.ts";
import { Takeovers } from "./takeovers.ts";
import { decideClose, DealingGate } from "./dealing_gate.ts";
import { jobCounts } from "./job_counts.ts";

/** The member that led before us, as its last leader beat showed it. */
export interface Predecessor {
  instance: string;
  session: string;
  /** Revision of its last leader beat. */
  revision: number;
  /** Our time when that beat was first seen. */
  since: number;
}

/** Leader-side state of one term. */
export class LeaderRole {
  readonly #seedRuns = new SeedRuns();
  readonly #hold = new ReleaseHold();
  readonly #core: Core;
  readonly term: number;
  readonly view: LeaderView;
  readonly liveness: LivenessTracker = new LivenessTracker();
  /** Live member sessions by instance. */
  readonly states: Map<string, MemberState> = new Map();
  /** Who is told and promised what: every directive of every member, the lanes on their way, the dealing order. */
  readonly tracker: AssignmentTracker;
  readonly #watches: WatchSet;
  readonly #takeovers: Takeovers;
  readonly #revocations: Revocations;
  readonly #completion: CompletionJudge;
  readonly #cuts: CutAsks;
  readonly #judge: DeathJudge;
  readonly #appliers: IntentAppliers;
  /** Failed splits waiting out their retry backoff. */
  readonly retry: RetryBackoff;
  /** Pause: the one predicate every dealing rule below consults (dealing_gate.ts). */
  readonly gate: DealingGate = new DealingGate();
  #ready = false;
  #stopped = false;
  readonly #unlanded: () => void;
  #onDeposed: () => void;

  /** `learnPlan` hands the member's view of `plan` a record this role read or wrote (see {@linkcode CompletionJudge}). */
  constructor(core: Core, term: number, onDeposed: () => void, learnPlan: (entry: StoreEntry) => void) {
    this.#core = core;
    this.term = term;
    this.#onDeposed = onDeposed;
    this.retry = new RetryBackoff(core);
    this.view = new LeaderView((id, prev, next, change) => this.#onSplit(id, prev, next, change), (i, p, n) => this.#onMember(i, p, n), () => core.clock.now());
    this.tracker = new AssignmentTracker(this.view, this.states);
    this.#watches = new WatchSet(core, (f, ev) => {
      if (!this.#stopped) this.view.apply(f, ev);
    });
    const ctx = {
      core,
      view: this.view,
      states: this.states,
      tracker: this.tracker,
      leading: () => !this.#stopped,
      dealing: () => this.gate.open, // pause: takeovers grant to nobody, drains name no successor
    };
    this.#takeovers = new Takeovers(ctx);
    this.#revocations = new Revocations(ctx);
    this.#cuts = new CutAsks(core, this.view, this.states, this.tracker);
    this.#completion = new CompletionJudge(core, this.view, () => this.#watches.caughtUp(keys.splitPrefix), learnPlan);
    this.#unlanded = core.splits.onLanded((w) => this.#onLanded(w));
    this.#judge = new DeathJudge({
      core,
      view: this.view,
      states: this.states,
      liveness: this.liveness,
      stopped: () => this.#stopped,
      drop: (st) => this.#drop(st),
      revive: (instance, record) => this.#onMember(instance, undefined, record),
      membersCaughtUp: () => this.#watches.caughtUp(keys.memberPrefix),
    });
    this.#appliers = leaderAppliers({
      core,
      tracker: this.tracker,
      judge: this.#judge,
      takeovers: this.#takeovers,
      revocations: this.#revocations,
      cuts: this.#cuts,
    });
  }

  /** Whether the initial snapshots are in. */
  get ready(): boolean {
    return this.#ready;
  }

  /**
   * Opens the watches (streamed snapshots), adopts the directives of the
   * assignment records it finds, and dates every member by when its record
   * had certainly landed (see `dateMembers` in judge.ts).
   */
  async start(prev: Predecessor | undefined, plan: Pick<PlanRecord, "pages" | "pageTerms"> = {}): Promise<void> {
    const { store } = this.#core;
    // The plan's pages first: their order is the dealing order, of records dealt already too; each
    // split held as not dealt yet until the split watch's snapshot brings its record.
    await readPages(store, plan, this.view, { clock: this.#core.clock, budgetMs: this.#core.config.opTimeoutMs });
    if (this.#stopped) return;
    // No deadline for the whole snapshot (1M split records stream for longer
    // than any fixed bound); one that stops making progress is started over.
    await this.#watches.open([keys.memberPrefix, keys.splitPrefix], Infinity);
    if (this.#stopped) return;
    dateMembers(this.#core, this.view, this.liveness, prev);
    await adoptDirectives(store, this.view, this.states, this.tracker);
    this.#ready = true;
    this.#core.schedule();
  }

  /** Stops watching and drops the view. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unlanded();
    await this.#watches.stop();
  }

  readonly #signature = new MembershipSignature();

  // --- view events -------------------------------------------------------------------

  #onSplit(id: string, prev: SplitRecord | undefined, next: Versioned<SplitRecord> | undefined, change: SplitChange): void {
    const rec = next?.record;
    this.#applyAll(decideSplitChange({ view: this.view, states: this.states, tracker: this.tracker, ready: this.#ready }, id, prev, next));
    // Nothing a decision reads changed (a write of the tenancy's own, a hand edit): at most a grant acknowledged, no pass.
    if (change === "detail") return;
    const from = prev?.owner;
    if (from && from.instance !== rec?.owner?.instance) {
      const follower = from.instance !== this.#core.me.instance && prev !== undefined && releasedGracefully(prev, rec);
      this.#hold.released(from, follower, this.states.get(from.instance)?.draining === true, this.#core.clock.now());
    }
    this.retry.onSplit(id, prev, rec);
    this.#applyAll(decideAnswered(this.tracker, id, rec)); // an ask of it answered or overtaken
    this.#applyAll(decideSettled(this.tracker, id, rec, this.#core.clock.now())); // a revocation of it settled
    this.#core.schedule();
  }

  #onMember(instance: string, prev: MemberRecord | undefined, next: Versioned<MemberRecord> | undefined): void {
    const { clock } = this.#core;
    const key = keys.member(instance);
    const st = this.states.get(instance);
    if (!next) {
      this.liveness.forget(key);
      if (st) this.#drop(st);
      this.#judge.left(instance, clock.now(), prev?.session);
      // A member that left cleanly: its directives go with it (a failed delete is
      // left behind for good: the next session of the instance overwrites it).
      void this.#core.store.delete(keys.assign(instance)).catch((e) =>
        this.#core.log("warn", "Could not delete the assignment record of a member that left", { member: instance, error: String(e) })
      );
      this.#core.schedule();
      return;
    }
    this.liveness.observe(key, next.revision, clock.now());
    const r = next.record;
    this.view.paceFromBeat(instance, r.session, r.est);
    if (r.draining === true && prev?.draining !== true && instance !== this.#core.me.instance) {
      this.#hold.drains({ instance, session: r.session }, clock.now());
    }
    if (st && st.session !== r.session) this.#drop(st);
    let cur = this.states.get(instance);
    // A sharded job's member deals here what its other shards do not hold (as of its last beat).
    const lanes = Math.max(0, r.maxInFlight - (r.away ?? 0));
    if (!cur) {
      if (!this.#judge.returning(instance, next.revision)) return; // still the record we judged dead
      const joined = this.tracker.member(instance, r.session, lanes, r.draining === true, r.planner === true);
      this.tracker.edit((d) => d.touch(joined));
      this.states.set(instance, (cur = joined));
    } else {
      // The state mirrors the record it was told of.
      const changed = cur;
      if (cur.maxInFlight !== lanes || cur.draining !== (r.draining === true)) this.tracker.edit((d) => d.touch(changed));
      cur.maxInFlight = lanes;
      cur.planner = r.planner === true;
    }
    if (prev && prev.session !== r.session) this.#judge.replaced(instance, clock.now());
    this.#applyAll(decideMemberChange(this.view, this.tracker, cur, r));
    this.#core.schedule();
  }

  /** A member (this leader itself, before its record says so) drains: nothing more is offered to it; returns the successors named for its splits. */
  draining(instance: string): Map<string, Owner> {
    const st = this.states.get(instance);
    if (!st) return new Map();
    if (!st.draining) {
      this.#applyAll([{ kind: "unofferAll", member: st, drains: true }]);
      this.#core.schedule();
    }
    // Successors for our own splits now, before our lanes stop: each
    // release then opens the split for its successor (a grant it starts
    // without a write) instead of freeing it to be offered and claimed.
    const input = { view: this.view, states: this.states, tracker: this.tracker, now: this.#core.clock.now(), dealing: this.gate.open };
    const intents = decideDrain(input, st, new LaneLedger());
    this.#applyAll(intents);
    const named = new Map<string, Owner>();
    for (const i of intents) if (i.kind === "revoke" && i.revoke.to) named.set(i.id, i.revoke.to);
    for (const [id, r] of this.tracker.of(st).revokes) if (r.to && !named.has(id)) named.set(id, r.to);
    return named;
  }

  /** A member session is gone: its offers return to the pool, its lanes on their way and its revocations end. */
  #drop(st: MemberState): void {
    this.#seedRuns.forget(st);
    this.tracker.edit((d) => {
      d.forget(st);
      this.#revocations.forget(st);
    });
    this.states.delete(st.instance);
  }

  // --- the leader's pass ---------------------------------------------------------------

  /** One pass; returns when the next one is due (`Infinity`: on the next event). `planRevision`: the revision `plan` was read at. */
  reconcile(plan: PlanRecord | undefined, planRevision: number | undefined, own: OwnReleases): number {
    if (!this.#ready || this.#stopped) return Infinity;
    const now = this.#core.clock.now();
    this.#core.stats.leaderPasses++;
    // Every rule decides into one draft of the tracker, committed before any record is written.
    let next = this.tracker.edit((d) => this.#decide(d, plan, now));
    const dealing = this.gate.open;
    const owed = own.owed;
    const activeAt = owed ? this.#hold.activeAt(own.releasedAt) : -Infinity;
    const burstUntil = this.#hold.burstUntil(now, (owner) => this.view.heldByKey(owner) > 0);
    for (const st of this.states.values()) {
      if (!this.tracker.writer(st).dirty) continue;
      const holdUntil = this.#hold.until(st, now, owed?.get(st.instance) ?? 0, activeAt, this.#core.config.opTimeoutMs, burstUntil);
      if (holdUntil > now) next = Math.min(next, holdUntil);
      else void this.#flush(st);
    }
    // Paused: completion and stall judgement wait for the resume.
    const outcome = dealing ? decideCompletion(this.view, plan, this.term, planRevision) : undefined;
    if (outcome) void this.#completion.apply(outcome);
    return next;
  }

  /** The rules of one pass, in order, each deciding on the state the previous one's intents left in the draft `d`. */
  #decide(d: AssignmentDraft, plan: PlanRecord | undefined, now: number): number {
    // Pause: read once per pass; closing takes back what was dealt and not yet taken.
    if (this.gate.update(plan) === "closed") {
      const { intents, offers, steals } = decideClose(this.states, d);
      this.#applyAll(intents);
      decided(this.#core, "info", "Job paused: dealing nothing new", "dealing.paused", { offers, steals });
    }
    const dealing = this.gate.open;
    let next = this.#apply(this.#judge.deaths(now));
    next = Math.min(next, this.#apply(this.#judge.orphans(now)));
    next = Math.min(next, this.retry.expire(now, (id) => d.requeue(id))); // offerable again
    const offers = {
      view: this.view,
      states: this.states,
      tracker: d,
      withheld: (id: string) => this.retry.has(id),
      own: this.#core.me.instance,
      coverMs: this.#core.timings.leaderlessCoverMs,
    };
    if (dealing) this.#applyAll(decideOffers(offers)); // the last intent prunes the dealing order
    // Paused: no steals (the standing revocations still settle, fence and name nobody).
    const nothingFree = dealing && this.view.free.size === 0 && this.#takeovers.inflight.size === 0;
    next = Math.min(next, this.#revocations.cycle(now, this.#signature.of(this.states, plan?.generation ?? 0), nothingFree, this.#applyAll));
    // Every free split dealt (or waiting out a backoff) and lanes still idle: cut running ones.
    const dealt = this.view.free.size <= d.offered + this.retry.waiting.size && this.#takeovers.inflight.size === 0;
    if (dealing) next = Math.min(next, this.#cuts.cycle(now, dealt, this.#applyAll));
    return next;
  }

  /**
   * Before a leader resigns: applies every split change made so far (its
   * own releases among them), runs a pass and writes the assignment records
   * it changed, so the successors of a drain hear of their grants and offers
   * from this leader rather than after the next one is elected and has
   * rebuilt its view. Gives up at `limitMs` (the next leader repairs
   * anything left). Waits on store round trips, not timers, so it also
   * ends on a manual clock.
   */
  async settle(plan: PlanRecord | undefined, limitMs: number, own: () => OwnReleases): Promise<void> {
    if (!this.#ready || this.#stopped) return;
    const { clock } = this.#core;
    const end = clock.now() + limitMs;
    for (let i = 0; i < 50 && clock.now() < end; i++) {
      if ((await this.#watches.caughtUp(keys.splitPrefix).catch(() => undefined)) !== false) break;
    }
    if (this.#stopped) return;
    this.reconcile(plan, undefined, own());
    const writes = [...this.states.values()].map((st) => this.tracker.writer(st).settle(this.#core, this.view, this.term, () => this.#onDeposed()));
    let timer: unknown;
    await Promise.race([
      Promise.all(writes),
      new Promise<void>((r) => (timer = clock.setTimeout(r, Math.max(0, end - clock.now())))),
    ]);
    clock.clearTimeout(timer);
  }

  /**
   * A split write of this coordinator landed (`SplitRecords`): applied now,
   * ahead of its echo. The leader's own writes at once; its own member's
   * commits, releases and claims once the view is ready, in the writer's
   * tick after its bookkeeping (a pass must see a release where it no
   * longer sees the tenancy, or the release hold waits for nothing).
   * Resumes, forced releases and hand-backs come with the echo.
   */
  #onLanded(w: LandedSplit): void {
    if (w.kind === "seed" || w.kind === "residual" || w.kind === "takeover" || w.kind === "fence") {
      this.view.applyOwn(w.id, w.record, w.revision);
    } else if ((w.kind === "tenancy" || w.kind === "claim") && this.#ready && !this.#stopped) {
      const before = this.view.splits.get(w.id);
      this.#hold.landed(this.#core.clock.now());
      this.view.applyOwn(w.id, w.record, w.revision);
      if (!(before && before.revision < w.revision && splitChange(before.record, w.record) === "detail")) this.#core.schedule();
    }
  }

  /** Applies a decision's intents, in order; returns when it wants the next pass. */
  #apply(d: Decision): number {
    this.#applyAll(d.intents);
    return d.next;
  }

  /**
   * The one place the leader's decisions take effect (see
   * {@linkcode applyIntents}): into a draft of the tracker, the pass's when
   * one is open, else one of their own, committed when they are applied.
   */
  readonly #applyAll = (intents: readonly LeaderIntent[]): void => this.tracker.edit(() => applyIntents(intents, this.#appliers));

  #flush(st: MemberState): Promise<void> {
    const w = this.tracker.writer(st);
    return w.flush(this.#core, this.view, this.term, () => this.#onDeposed()).then((wrote) => {
      if (wrote && w.dirty && !this.#stopped) this.#core.schedule();
    });
  }

  /** A member to seed a split for, its lane reserved until the reservation is released (see {@linkcode SeedRuns.reserve}). */
  reserveIdle(seeded: number, planned = 0): { member: MemberState; lane: LaneReservation } | undefined {
    if (!this.gate.open) return undefined; // paused: seeds go free, granted to nobody
    return this.#seedRuns.reserve(this.states, this.view, this.tracker, seeded, planned, this.#core.me.instance, this.#core.shard.count);
  }

  /** Ends a reservation made by {@linkcode LeaderRole.reserveIdle}. */
  unreserve(lane: LaneReservation): void {
    this.tracker.edit((d) => d.release(lane));
  }

  /** Job counts for the leader's beat. */
  counts(): JobCounts {
    return jobCounts(this.view, this.states.size, this.#core.clock);
  }
}

