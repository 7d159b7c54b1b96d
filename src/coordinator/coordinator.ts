/**
 * `SplitCoordinator`: joins a job, heartbeats, follows the leader's
 * assignments (claiming offers, starting grants, answering revocations),
 * fences commits, leads when elected (assignment, takeovers, balancing,
 * completion, planning), and reports ownership and job-state changes as
 * events (docs/DESIGN.md). Its environment is built by build_core.ts, its
 * parts wired to each other by member_parts.ts; it keeps the lifecycle
 * state their gates read, and the API.
 *
 * @module
 */
import type { SplitleaseError } from "../errors.ts";
import type { SplitProgress } from "../records.ts";
import { keys } from "../store/keys.ts";
import { buildCore, joinConfig } from "./build_core.ts";
import type { CoordinatorConfig } from "./config.ts";
import type { JoinOptions } from "./join_options.ts";
import type { Core } from "./core.ts";
import type { Follower } from "./member/follower.ts";
import type { Leadership } from "./leadership.ts";
import type { Membership } from "./member/membership.ts";
import { wireMember } from "./member_parts.ts";
import { ReconcileLoop } from "./reconcile_loop.ts";
import { buildStatus } from "./status.ts";
import { checkJobRecord, checkStoreJob } from "./member/job_check.ts";
import type { InstrumentedStore } from "./stats.ts";
import type { Tenancies } from "./member/tenancies.ts";
import type { OwnReleases } from "./leader/release_hold.ts";
import type { CoordinatorStats } from "./coordinator_stats.ts";
import type { CommitOptions, CoordinationEvent, FailOptions, Coordinator, CoordinatorStatus, CutAnswer } from "./types.ts";

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
    const config = joinConfig(options, random);
    checkStoreJob(options.store, config.job);
    const { core, store } = buildCore(options, config, random, this, () => this.#loop.schedule());
    this.#core = core;
    this.#store = store;
    this.#loop = new ReconcileLoop(core.clock, () => this.#reconcile(), (e) => {
      this.#core.log("warn", "Reconcile failed; retrying", { error: String(e) });
      return core.timings.reconcileRetryMs;
    }, () => this.#state !== "stopped" && this.#state !== "failed");
    const parts = wireMember(core, options, {
      mayClaim: () => this.#mayClaim(),
      mayLead: () => this.#active() && !this.#draining,
      fresh: () => this.#membershipFresh(),
      onDuplicate: (e) => this.#fatal(e),
      // The worker sees `state: "draining"` in status() and finishes as after SIGTERM.
      onDrainRequested: () => void this.drain().catch(() => {}),
    });
    this.#tenancies = parts.tenancies;
    this.#follower = parts.follower;
    this.#leadership = parts.leadership;
    this.#membership = parts.membership;
    this.#unseat = parts.unseat;
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

  // --- reconcile -------------------------------------------------------------

  /** What our own member side tells the leader's pass (we may lead while we hold splits). */
  #own(): OwnReleases {
    return { owed: this.#tenancies.owedTo(), releasedAt: this.#tenancies.releasedAt };
  }

  /** One pass (see {@linkcode ReconcileLoop}); returns when the next is due. */
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
