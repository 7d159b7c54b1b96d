/**
 * `SplitCoordinator`: joins a job, heartbeats, follows the leader's
 * assignments (claiming offers, starting grants, answering revocations),
 * fences commits, leads when elected (assignment, takeovers, balancing,
 * completion, planning), and reports ownership and job-state changes as
 * events (docs/DESIGN.md).
 *
 * @module
 */
import type { SplitleaseError } from "../errors.ts";
import type { SplitProgress } from "../records.ts";
import { keys } from "../store/keys.ts";
import { Channel } from "../util/channel.ts";
import { systemClock } from "./clock.ts";
import { type CoordinatorConfig, parseCoordinatorConfig } from "./config.ts";
import type { JoinOptions } from "./join_options.ts";
import type { Core } from "./core.ts";
import { Follower } from "./member/follower.ts";
import { Leadership } from "./leadership.ts";
import { Membership } from "./member/membership.ts";
import { ReconcileLoop } from "./reconcile_loop.ts";
import { LandedBy } from "./landed_by.ts";
import { ReplacedRecords } from "./replaced_records.ts";
import { buildStatus } from "./status.ts";
import { SplitRecords } from "./split_records.ts";
import { ProgRecords } from "./prog_records.ts";
import { checkJobRecord, checkStoreJob, VERSION } from "./member/job_check.ts";
import { checkSeat } from "./shard.ts";
import { InstrumentedStore, newStats } from "./stats.ts";
import { CoordinatorTrace } from "../tracing/coordinator_trace.ts";
import { randomId } from "../util/random_id.ts";
import { Tenancies } from "./member/tenancies.ts";
import { timings } from "./timings.ts";
import type { OwnReleases } from "./leader/release_hold.ts";
import type { CoordinatorStats } from "./coordinator_stats.ts";
import type { CommitOptions, CoordinationEvent, FailOptions, Coordinator, CoordinatorStatus, CutAnswer } from "./types.ts";
import type { Logger } from "../util/logger.ts";


const silent: Logger = () => {};

/**
 * Coordinates one worker of a job over a shared {@linkcode Store}.
 *
 * @example
 * ```ts
 * import { MemoryStore, SplitCoordinator } from "@splitlease/splitlease";
 * const store = new MemoryStore();
 * await using c = await SplitCoordinator.join({
 *   store,
 *   job: "demo",
 *   planner: async () => ({ splits: [{ id: "a", descriptor: { file: "a.ndjson" } }], finality: "final" }),
 * });
 * for await (const ev of c) {
 *   if (ev.type === "gained") await c.commit(ev.split.id, ev.epoch, { watermark: 1 }, { final: true });
 *   if (ev.type === "allComplete") break;
 * }
 * ```
 */
export class SplitCoordinator implements Coordinator {
  readonly #core: Core;
  readonly #tenancies: Tenancies;
  readonly #membership: Membership;
  readonly #follower: Follower;
  readonly #leadership: Leadership;
  #state: CoordinatorStatus["state"] = "starting";
  #draining = false;
  readonly #loop: ReconcileLoop;
  readonly #store: InstrumentedStore;
  /** Unsubscribes from the shard seat's lane changes (a sharded job's shard). */
  #unseat: (() => void) | undefined;

  private constructor(options: JoinOptions) {
    const random = options.random ?? Math.random;
    const { store: _s, planner: _p, clock: _c, random: _r, logger: _l, runtime: _rt, leadWhileStalled: _ls, shard: seat, ...rest } = options;
    const config = parseCoordinatorConfig({
      ...rest,
      instance: options.instance ?? "w-" + randomId(random, 10),
      fingerprint: options.fingerprint ?? options.job,
    });
    checkStoreJob(options.store, config.job);
    const shard = checkSeat(seat, config.job);
    const clock = options.clock ?? systemClock;
    const t = timings(config);
    const stats = newStats();
    this.#loop = new ReconcileLoop(clock, () => this.#reconcile(), (e) => {
      this.#core.log("warn", "Reconcile failed; retrying", { error: String(e) });
      return t.reconcileRetryMs;
    }, () => this.#state !== "stopped" && this.#state !== "failed");
    const me = { instance: config.instance, session: randomId(random, 16) };
    // Spans of the membership, the leadership, the tenancies and their store operations (no-ops without an OpenTelemetry SDK).
    const trace = new CoordinatorTrace(this, config.job, me, options.runtime ?? "web", clock);
    this.#store = new InstrumentedStore(options.store, stats, clock, trace);
    const core: Core = (this.#core = {
      store: this.#store,
      splits: new SplitRecords(this.#store, undefined, undefined, { clock, budgetMs: config.opTimeoutMs }),
      progs: new ProgRecords(this.#store, config.opTimeoutMs, undefined, clock),
      clock,
      random,
      config,
      timings: t,
      log: options.logger ?? silent,
      me,
      stats,
      events: new Channel<CoordinationEvent>(),
      schedule: () => this.#loop.schedule(),
      replaced: new ReplacedRecords(stats, options.logger ?? silent),
      landed: new LandedBy(),
      trace,
      shard,
      lanes: seat ? () => Math.max(0, config.maxInFlight - seat.lanesElsewhere()) : () => config.maxInFlight,
    });
    // Orphans: the follower resumes or releases them. A start that waited for its fence checks again that we take work.
    this.#tenancies = new Tenancies(core, (id, d) => this.#follower.remember(id, d), () => this.#mayClaim());
    this.#follower = new Follower(core, this.#tenancies, () => this.#mayClaim());
    this.#leadership = new Leadership(
      core,
      this.#follower,
      options.planner,
      () => this.#active() && !this.#draining,
      () => this.#membershipFresh(),
      options.leadWhileStalled === true,
    );
    this.#membership = new Membership(core, {
      extraBeat: () => this.#leadership.beat(),
      onStarved: () => this.#onStarved(),
      onRestored: (revision) => {
        this.#follower.restored(revision);
        void this.#follower.resume();
      },
      onBeat: () => {
        if (this.#follower.dormant > 0) void this.#follower.resume();
        this.#loop.schedule();
      },
      onDuplicate: (e) => this.#fatal(e),
      // The worker sees `state: "draining"` in status() and finishes as after SIGTERM.
      onDrainRequested: () => void this.drain().catch(() => {}),
      // Splits given up by their holder (a failed terminal write) are not counted: the leader's anti-entropy re-grants them.
      held: () => this.#tenancies.held.size - this.#tenancies.stuck + this.#follower.claiming.size + this.#follower.dormant,
      seen: () => this.#follower.assign?.revision,
      estimates: () => this.#tenancies.estimates(),
    }, options.runtime ?? "web", VERSION, options.planner !== undefined);
    // A sharded job's shard: lanes the other shards free may be claimed here; a shift tells our leader early.
    this.#unseat = seat?.onChange(() => {
      this.#membership.lanesChanged();
      this.#loop.schedule();
    });
  }

  /**
   * Joins the job: validates config, checks the job fingerprint and record
   * layout, opens its watches, registers this member (refusing a live twin
   * with the same instance id) and starts heartbeating.
   *
   * @throws {SplitleaseError} `INVALID_CONFIG`, `FINGERPRINT_MISMATCH`, `INCOMPATIBLE_LAYOUT`, `DUPLICATE_INSTANCE`
   */
  static async join(options: JoinOptions): Promise<SplitCoordinator> {
    const c = new SplitCoordinator(options);
    try {
      await c.#start();
    } catch (e) {
      await c.#teardown(e);
      throw e;
    }
    return c;
  }

  /** Validated configuration. */
  get config(): CoordinatorConfig {
    return this.#core.config;
  }

  /** This instance id. */
  get instance(): string {
    return this.#core.me.instance;
  }

  /**
   * Lanes this member has taken now: splits held, being claimed or started,
   * waiting to be resumed. What a sharded job's other shards count against
   * the lane budget they share (`ShardSeat.lanesElsewhere`).
   */
  get lanesBusy(): number {
    return this.#follower.busyLanes();
  }

  /** The splits this member holds at most (its `maxInFlight`, announced on its member record). */
  get maxInFlight(): number {
    return this.#core.config.maxInFlight;
  }

  /** This process's session nonce. */
  get session(): string {
    return this.#core.me.session;
  }

  /** The lifecycle state `status()` reports, without building the rest of it. */
  get state(): CoordinatorStatus["state"] {
    return this.#state;
  }

  /** Whether this instance currently leads. */
  get isLeader(): boolean {
    return this.#leadership.leading;
  }

  async #start(): Promise<void> {
    const { log, me, config, timings } = this.#core;
    await checkJobRecord(this.#core);
    await this.#follower.open();
    await this.#membership.register();
    this.#state = "running";
    log("info", "Joined", { instance: me.instance, session: me.session, job: config.job, maxInFlight: config.maxInFlight, leaseMs: config.leaseMs });
    log("debug", "Timings derived from the configuration", { timings }); // about 20 intervals: not on the first info line
    this.#membership.start();
    this.#loop.schedule();
  }

  #active(): boolean {
    return (this.#state === "running" || this.#state === "draining") && !this.#membership.checkFence();
  }

  /**
   * New work is taken only while our membership is provably ours: a process
   * that was frozen for a while must see its next heartbeat land first (a
   * twin may have taken its instance over meanwhile, and would only be
   * charged attempts by our claims).
   */
  #mayClaim(): boolean {
    // Paused (the plan record says so): nothing new is taken, whoever deals it.
    return this.#active() && !this.#draining && !this.#follower.paused && this.#membershipFresh();
  }

  /**
   * Whether our last heartbeat started less than the twin wait ago: a twin
   * takes our member record over only after watching it unmoved for that
   * long, so until then the record is still ours (claims and elections).
   */
  #membershipFresh(): boolean {
    const { clock, timings } = this.#core;
    return clock.now() - this.#membership.lastOk < timings.twinWaitMs;
  }

  /** No heartbeat for leaseMs - margin: stop every lane before the leader can judge us dead. */
  #onStarved(): void {
    this.#core.log("error", "Self-fenced: no successful heartbeat within the lease", {
      instance: this.#core.me.instance,
      held: this.#tenancies.held.size,
    });
    this.#leadership.stop();
    for (const id of [...this.#tenancies.held.keys()]) {
      const t = this.#tenancies.lose(id, "starved");
      if (t) this.#follower.remember(id, { epoch: t.epoch, revision: t.revision, record: t.record, spec: t.spec });
    }
  }

  // --- reconcile -------------------------------------------------------------

  /** One pass (see {@linkcode ReconcileLoop}); returns when the next is due. */
  /** What our own member side tells the leader's pass (we may lead while we hold splits). */
  #own(): OwnReleases {
    return { owed: this.#tenancies.owedTo(), releasedAt: this.#tenancies.releasedAt };
  }

  #reconcile(): number {
    if (this.#state !== "running" && this.#state !== "draining") return Infinity;
    if (!this.#active()) return Infinity;
    const now = this.#core.clock.now();
    let next = Infinity;
    if (!this.#draining) next = Math.min(next, this.#leadership.maybeElect(now));
    next = Math.min(next, this.#leadership.reconcile(this.#own()));
    return Math.min(next, this.#follower.pump());
  }

  // --- ownership API -----------------------------------------------------------

  /**
   * Fenced progress commit. A terminal commit (`final`) marks the split
   * completed and ends the tenancy.
   *
   * @throws {FencedError} when the split moved on (nothing written; `lost` emitted)
   */
  commit(splitId: string, epoch: number, progress: SplitProgress, options: CommitOptions = {}): Promise<void> {
    this.#membership.checkFence(); // overdue (the process was paused): fenced before it writes
    return this.#tenancies.commit(splitId, epoch, progress, options.final ?? false, options.records ?? 0, options.transaction);
  }

  /** Graceful release: no attempt consumed (to the successor of a revocation, if one was named). */
  release(splitIds: readonly string[]): Promise<void> {
    this.#membership.checkFence(); // overdue (the process was paused): fenced before it writes
    return this.#tenancies.release(splitIds);
  }

  /** Poison report: attempts + 1, owner none; quarantined at `maxAttempts`, or at once when `permanent`. */
  async fail(splitId: string, epoch: number, reason: string, options: FailOptions = {}): Promise<void> {
    this.#membership.checkFence(); // overdue (the process was paused): fenced before it writes
    const permanent = options.permanent === true;
    const next = await this.#tenancies.fail(splitId, epoch, reason, options.stack, permanent);
    // Not logged here: the caller logs its report (the worker's `Split failed` line), the event's consumer the quarantine.
    if (next.status === "quarantined") {
      this.#core.events.push({ type: "quarantined", splitId, attempts: next.attempts, ...(permanent ? { permanent } : {}) });
    }
  }

  /** Cuts a held split's remaining work (see `Coordinator.split`): the residuals' ids once the cut landed. */
  split(splitId: string, epoch: number, answer: CutAnswer): Promise<string[]> {
    this.#membership.checkFence(); // overdue (the process was paused): fenced before it writes
    return this.#tenancies.cut(splitId, epoch, answer);
  }

  /** Forcibly releases a split whose source cannot stop intake (`lost`, reason `revoked`). */
  declineRevocation(splitId: string): Promise<void> {
    this.#membership.checkFence(); // overdue (the process was paused): fenced before it writes
    return this.#tenancies.forceRelease(splitId);
  }

  /**
   * Graceful drain: stop claiming, request revocation of every held split,
   * force the stragglers after `drainDeadlineMs`. Resolves when nothing is
   * held. A draining leader keeps leading until `close()`: it hands its own
   * splits to their successors itself (a new leader would first have to
   * rebuild its view).
   */
  async drain(): Promise<void> {
    if (this.#state !== "running" && this.#state !== "draining") return;
    this.#draining = true;
    this.#state = "draining";
    // Announce and revoke at once: a lane that stops before the leader hears
    // of the drain releases to nobody, and the leader offers it on.
    const announced = this.#membership.announceDraining();
    // As the leader we name our splits' successors ourselves, at once.
    const successors = this.#leadership.role?.draining(this.#core.me.instance);
    for (const id of this.#tenancies.held.keys()) this.#tenancies.requestRevoke(id, successors?.get(id) ?? null, false, successors !== undefined);
    await announced;
    await this.#tenancies.whenEmpty();
  }

  /** Releases everything still held, resigns leadership, leaves, stops. */
  async close(): Promise<void> {
    if (this.#state === "stopped" || this.#state === "failed" || this.#state === "starting") return;
    this.#draining = true;
    this.#state = "draining";
    try {
      const announced = this.#tenancies.held.size > 0 ? this.#membership.announceDraining() : undefined;
      // As the leader we name our splits' successors ourselves (see drain()),
      // before the announcement lands: our own role then holds each
      // successor's grants for the whole hand-over, not only from here on.
      for (const [id, to] of this.#leadership.role?.draining(this.#core.me.instance) ?? []) this.#tenancies.nameSuccessor(id, to);
      await announced;
      await this.#tenancies.release([...this.#tenancies.held.keys()]);
      await this.#follower.resume(); // grants that arrived while leaving: released, not abandoned
      await this.#leadership.resign(() => this.#own()); // our releases reach their successors from us, not the next leader
      await this.#membership.leave();
      this.#core.log("info", "Left", { instance: this.#core.me.instance });
    } catch (e) {
      this.#core.log("warn", "Leaving failed; peers take over when the lease lapses", { error: String(e) });
    } finally {
      await this.#teardown();
    }
  }

  /**
   * Stops at once without releasing or leaving, as if the process died
   * (the leader moves its splits after one lease). For tests and fatal paths.
   */
  async abandon(): Promise<void> {
    await this.#teardown();
  }

  #fatal(error: SplitleaseError): void {
    if (this.#state === "failed" || this.#state === "stopped") return;
    this.#core.log("error", "Fatal coordination error", { error: error.message, code: error.code });
    this.#store.refuseWrites(error); // a task between its read and its write (an election) writes nothing now
    for (const id of [...this.#tenancies.held.keys()]) this.#tenancies.lose(id, "fenced");
    this.#state = "failed";
    this.#stopAll();
    void this.#follower.stop();
    this.#core.events.fail(error);
  }

  #stopAll(): void {
    this.#unseat?.();
    this.#unseat = undefined;
    this.#leadership.stop();
    this.#membership.stop();
    this.#loop.stop();
  }

  async #teardown(error?: unknown): Promise<void> {
    if (this.#state !== "failed") this.#state = "stopped";
    this.#stopAll();
    this.#tenancies.clear();
    await this.#follower.stop();
    this.#core.events.close();
    this.#core.trace.close(error === undefined ? this.#state : "join failed", error);
  }

  /** Closes (for `await using`). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  // --- events and status ---------------------------------------------------------

  /** Waits for the next event; `undefined` once stopped. Rejects after a fatal error. */
  async poll(): Promise<CoordinationEvent | undefined> {
    const r = await this.#core.events.next();
    return r.done ? undefined : r.value;
  }

  /** The next queued event without waiting. */
  tryPoll(): CoordinationEvent | undefined {
    return this.#core.events.tryTake();
  }

  /** Iterates events until the coordinator stops. */
  [Symbol.asyncIterator](): AsyncIterator<CoordinationEvent> {
    return { next: () => this.#core.events.next() };
  }

  /** `/status` snapshot. */
  status(): CoordinatorStatus {
    const { clock, config, timings, me } = this.#core;
    const now = clock.now();
    const f = this.#follower;
    return buildStatus({
      me,
      job: config.job,
      state: this.#state,
      connected: !this.#membership.starved && now - this.#membership.lastOk < timings.connectedWithinMs,
      follower: f,
      leaderAlive: f.leaderLiveness.alive(keys.leader, now, timings.deadAfterMs),
      role: this.#leadership.role,
      planning: this.#leadership.planning,
      held: this.#tenancies.held,
      replaced: this.#core.replaced.recent,
      now,
    });
  }

  /** Counters for metrics (a live object: read, don't mutate). */
  stats(): CoordinatorStats {
    return this.#core.stats;
  }
}
