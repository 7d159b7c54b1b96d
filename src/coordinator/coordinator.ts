/**
 * `SplitCoordinator`: joins a job, heartbeats, claims its fair share of
 * splits, fences commits, and reports ownership and job-state changes as
 * events (DESIGN §2, §4–§10).
 *
 * @module
 */
import { FencedError, SplitleaseError } from "../errors.ts";
import {
  decodeRecord,
  encodeRecord,
  JobRecordSchema,
  MemberRecordSchema,
  type MemberRecord,
  type Owner,
  safeDecodeRecord,
  SpecRecordSchema,
  type SplitProgress,
  type SplitRecord,
  SplitRecordSchema,
} from "../records.ts";
import { keys } from "../store/keys.ts";
import type { Store, Watch } from "../store/store.ts";
import { Channel } from "../util/channel.ts";
import { chooseClaims, type ClaimCandidate } from "./claims.ts";
import { systemClock } from "./clock.ts";
import { type CoordinatorConfig, type CoordinatorTunables, parseCoordinatorConfig } from "./config.ts";
import { Leadership } from "./leadership.ts";
import { LivenessTracker } from "./liveness.ts";
import { buildStatus } from "./status.ts";
import { bump, InstrumentedStore, newStats } from "./stats.ts";
import { claimRecord, commitRecord, failRecord, heldBy, releaseRecord } from "./transitions.ts";
import type {
  Clock,
  CommitOptions,
  CoordinationEvent,
  Coordinator,
  CoordinatorStats,
  CoordinatorStatus,
  Logger,
  LostReason,
  Planner,
  SplitSpec,
} from "./types.ts";
import { JobView, ownerKey } from "./view.ts";

/** Library version advertised on member records. */
export const VERSION = "0.1.0";

/** Options of {@linkcode SplitCoordinator.join}. */
export interface JoinOptions extends CoordinatorTunables {
  /** The coordination store (shared by the whole fleet). */
  store: Store;
  /** Job name. */
  job: string;
  /** Instance id (pod name); generated when absent. */
  instance?: string;
  /** Job fingerprint; a bucket holding another fingerprint is refused (default: the job name). */
  fingerprint?: string;
  /** Planner; an instance without one never leads. */
  planner?: Planner;
  /** Clock (default: the system clock). */
  clock?: Clock;
  /** Randomness in [0, 1) (default `Math.random`). */
  random?: () => number;
  /** Structured logger (default: silent). */
  logger?: Logger;
  /** Runtime name advertised on the member record. */
  runtime?: string;
}

/** One tenancy of a held split. */
export interface Tenancy {
  epoch: number;
  revision: number;
  record: SplitRecord;
  spec: SplitSpec;
  draining: boolean;
  reservedFor: string | null;
  drainTimer?: unknown;
}

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
  /** Validated configuration. */
  readonly config: CoordinatorConfig;
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #log: Logger;
  readonly #me: Owner;
  readonly #runtime: string;
  readonly #stats: CoordinatorStats = newStats();
  readonly #view = new JobView();
  readonly #liveness = new LivenessTracker();
  readonly #events = new Channel<CoordinationEvent>();
  readonly #held = new Map<string, Tenancy>();
  readonly #claiming = new Map<string, number>();
  readonly #deferred = new Map<string, number>();
  readonly #departedAt = new Map<string, number>();
  readonly #specs = new Map<string, SplitSpec>();
  readonly #leadership: Leadership | undefined;
  #watches: Watch[] = [];
  #state: CoordinatorStatus["state"] = "starting";
  #member: MemberRecord;
  #memberRev = 0;
  #lastBeatOk = 0;
  #fenced = false;
  #draining = false;
  #outcome: CoordinatorStatus["outcome"] = null;
  #confirming = false;
  #reconciling = false;
  #dirty = false;
  #beatTimer: unknown;
  #fenceTimer: unknown;
  #wakeTimer: unknown;
  #wakeAt = Infinity;
  #drainWaiters: (() => void)[] = [];

  private constructor(options: JoinOptions) {
    const random = options.random ?? Math.random;
    const { store: _s, planner: _p, clock: _c, random: _r, logger: _l, runtime: _rt, ...rest } = options;
    this.config = parseCoordinatorConfig({
      ...rest,
      instance: options.instance ?? "w-" + nonce(random, 10),
      fingerprint: options.fingerprint ?? options.job,
    });
    this.#clock = options.clock ?? systemClock;
    this.#random = random;
    this.#log = options.logger ?? silent;
    this.#store = new InstrumentedStore(options.store, this.#stats, this.#clock);
    this.#me = { instance: this.config.instance, session: nonce(random, 16) };
    this.#runtime = options.runtime ?? "web";
    this.#member = {
      v: 1,
      session: this.#me.session,
      maxInFlight: this.config.maxInFlight,
      runtime: this.#runtime,
      version: VERSION,
      beat: 0,
    };
    if (options.planner) {
      this.#leadership = new Leadership({
        store: this.#store,
        view: this.#view,
        liveness: this.#liveness,
        config: this.config,
        clock: this.#clock,
        me: this.#me,
        planner: options.planner,
        logger: this.#log,
        active: () => this.#active(),
        poke: () => this.#schedule(),
      });
    }
  }

  /**
   * Joins the job: validates config, checks the job fingerprint, loads the
   * current state, registers this member (refusing a live twin with the same
   * instance id) and starts heartbeating and claiming.
   *
   * @throws {SplitleaseError} `INVALID_CONFIG`, `FINGERPRINT_MISMATCH`, `DUPLICATE_INSTANCE`
   */
  static async join(options: JoinOptions): Promise<SplitCoordinator> {
    const c = new SplitCoordinator(options);
    try {
      await c.#start();
    } catch (e) {
      await c.#teardown();
      throw e;
    }
    return c;
  }

  /** This instance id. */
  get instance(): string {
    return this.#me.instance;
  }

  /** This process's session nonce. */
  get session(): string {
    return this.#me.session;
  }

  /** Whether this instance currently leads. */
  get isLeader(): boolean {
    return this.#leadership?.leading ?? false;
  }

  async #start(): Promise<void> {
    await this.#checkJob();
    const filters = [keys.memberPrefix, keys.splitPrefix, keys.handoffPrefix, keys.leader, keys.plan];
    await Promise.all(filters.map((f) => this.#openWatch(f)));
    await this.#register();
    this.#state = "running";
    this.#log("info", "Joined", { instance: this.#me.instance, session: this.#me.session, job: this.config.job });
    this.#armSelfFence();
    this.#scheduleBeat();
    this.#schedule();
  }

  async #checkJob(): Promise<void> {
    const want = { v: 1 as const, fingerprint: this.config.fingerprint, createdAt: this.#clock.wallNow() };
    let cur = await this.#store.get(keys.job);
    if (!cur) {
      const r = await this.#store.create(keys.job, encodeRecord(want));
      if (r.ok) return;
      cur = await this.#store.get(keys.job);
      if (!cur) throw new SplitleaseError("STORE_UNAVAILABLE", `Job record "job" vanished while joining`);
    }
    const job = decodeRecord(keys.job, cur.value, JobRecordSchema);
    if (job.fingerprint !== this.config.fingerprint) {
      throw new SplitleaseError(
        "FINGERPRINT_MISMATCH",
        `Job "${this.config.job}" belongs to another job: the store holds fingerprint ${
          JSON.stringify(job.fingerprint)
        }, this worker has ${JSON.stringify(this.config.fingerprint)}`,
      );
    }
  }

  #openWatch(filter: string): Promise<void> {
    const w = this.#store.watch(filter);
    this.#watches.push(w);
    return new Promise<void>((ready, fail) => {
      let isReady = false;
      (async () => {
        for await (const ev of w) {
          const now = this.#clock.now();
          const applied = this.#view.apply(filter, ev);
          if (ev.type === "ready" && !isReady) {
            isReady = true;
            ready();
          }
          if (ev.type === "reset") this.#log("warn", "Watch re-established", { filter, reason: ev.reason });
          if (applied) this.#observe(applied.key, applied.removed, ev.type === "put" ? ev.revision : 0, now);
          if (isReady) this.#schedule();
        }
      })().catch((e) => {
        if (!isReady) fail(e);
        else if (this.#state === "running") this.#log("error", "Watch failed", { filter, error: String(e) });
      });
    });
  }

  #observe(key: string, removed: boolean, revision: number, now: number): void {
    if (key === keys.leader || key.startsWith(keys.memberPrefix)) {
      if (removed) {
        this.#liveness.forget(key);
        if (key !== keys.leader) this.#departedAt.set(key.slice(keys.memberPrefix.length), now);
      } else {
        this.#liveness.observe(key, revision, now);
        if (key !== keys.leader) this.#departedAt.delete(key.slice(keys.memberPrefix.length));
      }
    }
    const msg = this.#view.invalid.get(key);
    if (msg) this.#log("error", "Unreadable record skipped", { key, error: msg });
  }

  /** Registers `member.<instance>`; a live twin with our instance id is fatal. */
  async #register(): Promise<void> {
    const key = keys.member(this.#me.instance);
    const start = this.#clock.now();
    const r = await this.#store.create(key, encodeRecord(this.#member));
    if (r.ok) {
      this.#memberRev = r.revision;
      this.#lastBeatOk = start;
      return;
    }
    // A record exists: a crashed predecessor (take it over) or a live twin
    // (refuse). A live twin beats within leaseMs/3; wait that long for a move.
    const first = await this.#store.get(key);
    if (first) {
      const wait = Math.ceil(this.config.leaseMs / 3 + this.config.leaseMs / 10);
      await new Promise<void>((res) => this.#clock.setTimeout(res, wait));
    }
    const cur = await this.#store.get(key);
    if (first && cur && cur.revision !== first.revision) throw this.#duplicate();
    const start2 = this.#clock.now();
    const w = cur
      ? await this.#store.update(key, encodeRecord(this.#member), cur.revision)
      : await this.#store.create(key, encodeRecord(this.#member));
    if (!w.ok) throw this.#duplicate();
    this.#memberRev = w.revision;
    this.#lastBeatOk = start2;
    this.#log("info", "Took over the member record of a previous process", { instance: this.#me.instance });
  }

  #duplicate(): SplitleaseError {
    return new SplitleaseError(
      "DUPLICATE_INSTANCE",
      `Instance id "${this.#me.instance}" is already used by another live process of job "${this.config.job}"`,
    );
  }

  #active(): boolean {
    return this.#state === "running" && !this.#fenced;
  }

  // --- heartbeat and self-fence -------------------------------------------

  #scheduleBeat(delay?: number): void {
    const base = this.config.leaseMs / 3;
    // Jitter only ever makes a beat earlier, never later.
    const ms = delay ?? base * (1 - 0.1 * this.#random());
    this.#beatTimer = this.#clock.setTimeout(() => void this.#beat(), ms);
  }

  async #beat(): Promise<void> {
    if (this.#state !== "running" && this.#state !== "draining") return;
    const start = this.#clock.now();
    const key = keys.member(this.#me.instance);
    const next: MemberRecord = { ...this.#member, beat: this.#member.beat + 1 };
    if (this.#draining) next.draining = true;
    const leaderBeat = this.#leadership?.beat();
    let ok = false;
    try {
      const r = await this.#store.update(key, encodeRecord(next), this.#memberRev);
      if (r.ok) {
        this.#member = next;
        this.#memberRev = r.revision;
        ok = true;
      } else {
        ok = await this.#onMemberConflict(key);
      }
    } catch (e) {
      this.#log("warn", "Heartbeat failed", { error: String(e) });
    }
    await leaderBeat;
    if (this.#state !== "running" && this.#state !== "draining") return;
    if (ok) {
      this.#lastBeatOk = start;
      this.#armSelfFence();
      if (this.#fenced) {
        this.#fenced = false;
        this.#log("info", "Heartbeat restored after a self-fence", { instance: this.#me.instance });
        this.#schedule();
      }
    }
    this.#scheduleBeat(ok ? undefined : Math.min(this.config.leaseMs / 3, this.config.leaseMs / 10));
  }

  async #onMemberConflict(key: string): Promise<boolean> {
    const cur = await this.#store.get(key);
    if (!cur) {
      const r = await this.#store.create(key, encodeRecord(this.#member));
      if (r.ok) this.#memberRev = r.revision;
      return r.ok;
    }
    const rec = decodeRecord(key, cur.value, MemberRecordSchema);
    if (rec.session === this.#me.session) {
      // Our own write landed earlier (a maybe-landed timeout): adopt it.
      this.#member = rec;
      this.#memberRev = cur.revision;
      return true;
    }
    this.#fatal(this.#duplicate());
    return false;
  }

  #armSelfFence(): void {
    if (this.#fenceTimer !== undefined) this.#clock.clearTimeout(this.#fenceTimer);
    const at = this.#lastBeatOk + this.config.leaseMs - this.config.selfFenceMarginMs;
    this.#fenceTimer = this.#clock.setTimeout(() => this.#selfFence(), at - this.#clock.now());
  }

  /** No successful heartbeat for leaseMs - margin: stop everything before peers judge us dead. */
  #selfFence(): void {
    this.#fenceTimer = undefined;
    if (this.#fenced || (this.#state !== "running" && this.#state !== "draining")) return;
    this.#fenced = true;
    this.#stats.selfFences++;
    this.#log("error", "Self-fenced: no successful heartbeat within the lease", {
      instance: this.#me.instance,
      held: this.#held.size,
    });
    this.#leadership?.stop();
    for (const id of [...this.#held.keys()]) this.#lose(id, "starved");
  }

  // --- reconcile -------------------------------------------------------------

  #schedule(): void {
    if (this.#reconciling) {
      this.#dirty = true;
      return;
    }
    this.#reconciling = true;
    queueMicrotask(async () => {
      try {
        do {
          this.#dirty = false;
          await this.#reconcile();
        } while (this.#dirty && this.#state !== "stopped");
      } catch (e) {
        this.#log("warn", "Reconcile failed; retrying", { error: String(e) });
        this.#wake(this.#clock.now() + Math.max(50, this.config.leaseMs / 10));
      } finally {
        this.#reconciling = false;
      }
    });
  }

  async #reconcile(): Promise<void> {
    if (this.#state !== "running" && this.#state !== "draining") return;
    const now = this.#clock.now();
    this.#checkHeld();
    if (!this.#active()) return;
    void this.#leadership?.maybeElect();
    if (!this.#draining) await this.#claimPass(now);
    await this.#checkCompletion();
    this.#scheduleWake(this.#clock.now());
  }

  /** Held splits whose record moved on without us are lost. */
  #checkHeld(): void {
    for (const [id, t] of this.#held) {
      const e = this.#view.splits.get(id);
      if (e && e.revision <= t.revision) continue;
      if (e && heldBy(e.record, this.#me, t.epoch)) {
        t.revision = e.revision;
        t.record = e.record;
        continue;
      }
      const reason: LostReason = !e || e.record.status !== "runnable"
        ? "fenced"
        : e.record.owner === null
        ? "revoked"
        : "expired";
      this.#lose(id, reason);
    }
  }

  #peers(now: number): Map<string, { session: string; maxInFlight: number }> {
    const peers = new Map<string, { session: string; maxInFlight: number }>();
    for (const [instance, m] of this.#view.members) {
      if (instance === this.#me.instance || m.record.draining) continue;
      if (!this.#liveness.alive(keys.member(instance), now, this.config.leaseMs)) continue;
      peers.set(instance, { session: m.record.session, maxInFlight: m.record.maxInFlight });
    }
    return peers;
  }

  #takeable(instance: string, now: number): boolean {
    const delay = this.config.rebalanceDelayMs;
    if (delay === 0) return true;
    const key = keys.member(instance);
    const deadSince = this.#view.members.has(instance)
      ? (this.#liveness.expiresAt(key, this.config.leaseMs) ?? now)
      : (this.#departedAt.get(instance) ?? -Infinity);
    return now >= deadSince + delay;
  }

  async #claimPass(now: number): Promise<void> {
    let heldWeight = 0;
    for (const t of this.#held.values()) heldWeight += t.record.weight;
    for (const w of this.#claiming.values()) heldWeight += w;
    const peers = this.#peers(now);
    const candidates = chooseClaims({
      me: this.#me,
      seed: this.config.job,
      splits: this.#view.splits,
      unowned: this.#view.unowned,
      ownedBy: this.#view.ownedBy,
      loadBy: this.#view.loadBy,
      runnableWeight: this.#view.runnableWeight,
      peers,
      takeable: (i) => this.#takeable(i, now),
      heldCount: this.#held.size + this.#claiming.size,
      heldWeight,
      isMine: (id) => this.#held.has(id) || this.#claiming.has(id),
      skip: (id) => this.#view.handoffs.has(id),
      maxInFlight: this.config.maxInFlight,
      claimStaggerMs: this.config.claimStaggerMs,
    });
    const due: ClaimCandidate[] = [];
    const chosen = new Set(candidates.map((c) => c.id));
    for (const id of this.#deferred.keys()) if (!chosen.has(id)) this.#deferred.delete(id);
    for (const c of candidates) {
      if (c.delayMs === 0) {
        due.push(c);
        continue;
      }
      const at = this.#deferred.get(c.id);
      if (at === undefined) this.#deferred.set(c.id, now + c.delayMs);
      else if (at <= now) due.push(c);
    }
    if (due.length === 0) return;
    const takeovers = due.filter((c) => c.kind === "takeover");
    const moved = takeovers.length ? await this.#ownersThatMoved(takeovers) : new Set<string>();
    await Promise.all(due.filter((c) => !moved.has(c.id)).map((c) => this.#claim(c)));
  }

  /**
   * Before a takeover, re-read each dead owner's member record: if it moved
   * since we last saw it, the owner is alive and we were behind.
   */
  async #ownersThatMoved(cands: ClaimCandidate[]): Promise<Set<string>> {
    const byOwner = new Map<string, string[]>();
    for (const c of cands) {
      const inst = this.#view.splits.get(c.id)?.record.owner?.instance;
      if (inst) byOwner.set(inst, [...(byOwner.get(inst) ?? []), c.id]);
    }
    const moved = new Set<string>();
    await Promise.all([...byOwner].map(async ([inst, ids]) => {
      const key = keys.member(inst);
      const cur = await this.#store.get(key);
      const seen = this.#liveness.get(key)?.revision;
      if (cur && cur.revision !== seen) {
        this.#liveness.observe(key, cur.revision, this.#clock.now());
        this.#view.putRaw(cur.key, cur.value, cur.revision);
        for (const id of ids) moved.add(id);
      }
    }));
    return moved;
  }

  async #claim(c: ClaimCandidate): Promise<void> {
    const e = this.#view.splits.get(c.id);
    if (!e || this.#claiming.has(c.id) || this.#held.has(c.id)) return;
    this.#claiming.set(c.id, c.weight);
    this.#deferred.delete(c.id);
    try {
      const spec = await this.#spec(c.id, e);
      if (!spec) return;
      const nonGraceful = c.kind === "takeover" || c.kind === "reclaim";
      const next = claimRecord(e.record, this.#me, nonGraceful, this.config.maxAttempts);
      const r = await this.#store.update(keys.split(c.id), encodeRecord(next), e.revision);
      if (!r.ok) {
        await this.#refreshSplit(c.id);
        return;
      }
      this.#view.applyOwnSplit(c.id, next, r.revision);
      if (next.status === "quarantined") {
        this.#quarantined(c.id, next.attempts);
        return;
      }
      if (this.#state !== "running" || this.#fenced) {
        // Stopped or fenced while claiming: hand it straight back.
        await this.#store.update(keys.split(c.id), encodeRecord(releaseRecord(next, null)), r.revision);
        return;
      }
      this.#held.set(c.id, {
        epoch: next.epoch,
        revision: r.revision,
        record: next,
        spec,
        draining: false,
        reservedFor: null,
      });
      bump(this.#stats.acquisitions, c.kind);
      const ev: CoordinationEvent = { type: "gained", split: spec, epoch: next.epoch };
      if (next.progress) ev.progress = next.progress;
      this.#events.push(ev);
      this.#log("info", "Gained split", { split: c.id, epoch: next.epoch, kind: c.kind, attempts: next.attempts });
    } catch (e) {
      this.#log("warn", "Claim failed", { split: c.id, error: String(e) });
    } finally {
      this.#claiming.delete(c.id);
    }
  }

  /** Reads (and caches) a split's immutable spec; an unreadable spec quarantines the split. */
  async #spec(id: string, e: { record: SplitRecord; revision: number }): Promise<SplitSpec | undefined> {
    const cached = this.#specs.get(id);
    if (cached) return cached;
    const key = keys.spec(id);
    const entry = await this.#store.get(key);
    try {
      if (!entry) throw new SplitleaseError("INVALID_RECORD", `Spec record "${key}" is missing`);
      const rec = decodeRecord(key, entry.value, SpecRecordSchema);
      const spec: SplitSpec = { id, descriptor: rec.descriptor, weight: rec.weight };
      this.#specs.set(id, spec);
      return spec;
    } catch (err) {
      const reason = (err as Error).message;
      this.#log("error", "Unreadable spec: quarantining the split", { key, error: reason });
      const next: SplitRecord = {
        ...e.record,
        epoch: e.record.epoch + 1,
        owner: null,
        status: "quarantined",
        lastFailure: reason,
      };
      const r = await this.#store.update(keys.split(id), encodeRecord(next), e.revision);
      if (r.ok) {
        this.#view.applyOwnSplit(id, next, r.revision);
        this.#quarantined(id, next.attempts);
      }
      return undefined;
    }
  }

  async #refreshSplit(id: string): Promise<void> {
    const cur = await this.#store.get(keys.split(id));
    if (cur) this.#view.putRaw(cur.key, cur.value, cur.revision);
  }

  #quarantined(splitId: string, attempts: number): void {
    this.#events.push({ type: "quarantined", splitId, attempts });
    this.#log("warn", "Split quarantined", { split: splitId, attempts });
  }

  async #checkCompletion(): Promise<void> {
    const plan = this.#view.plan?.record;
    if (this.#outcome || this.#confirming || !plan || plan.finality !== "final" || plan.generation === 0) return;
    if (this.#view.statusCounts.runnable > 0 || this.#view.splits.size < plan.planned) return;
    this.#confirming = true;
    try {
      // Confirm with an authoritative listing before announcing.
      let completed = 0, quarantined = 0, runnable = 0;
      for (const e of await this.#store.list(keys.splitPrefix)) {
        const r = safeDecodeRecord(e.key, e.value, SplitRecordSchema);
        // An unreadable record cannot be proven complete: it blocks completion.
        if (!r.ok) runnable++;
        else if (r.value.status === "completed") completed++;
        else if (r.value.status === "quarantined") quarantined++;
        else runnable++;
      }
      if (runnable > 0 || completed + quarantined < plan.planned || this.#outcome) return;
      if (quarantined === 0) {
        this.#outcome = "allComplete";
        this.#events.push({ type: "allComplete" });
        this.#log("info", "Job complete", { completed });
      } else {
        this.#outcome = "stalled";
        this.#events.push({ type: "stalled", completed, quarantined });
        this.#log("error", "Job stalled on quarantined splits", { completed, quarantined });
      }
    } finally {
      this.#confirming = false;
    }
  }

  #scheduleWake(now: number): void {
    let at = Infinity;
    for (const t of this.#deferred.values()) if (t > now) at = Math.min(at, t);
    for (const [instance] of this.#view.members) {
      if (instance === this.#me.instance) continue;
      const exp = this.#liveness.expiresAt(keys.member(instance), this.config.leaseMs);
      if (exp !== undefined && exp > now) at = Math.min(at, exp);
      else if (exp !== undefined && this.config.rebalanceDelayMs > 0) {
        const t = exp + this.config.rebalanceDelayMs;
        if (t > now) at = Math.min(at, t);
      }
    }
    if (this.config.rebalanceDelayMs > 0) {
      for (const d of this.#departedAt.values()) {
        const t = d + this.config.rebalanceDelayMs;
        if (t > now) at = Math.min(at, t);
      }
    }
    const lexp = this.#liveness.expiresAt(keys.leader, this.config.leaseMs);
    if (lexp !== undefined && lexp > now) at = Math.min(at, lexp);
    if (at !== Infinity) this.#wake(at);
  }

  #wake(at: number): void {
    if (at >= this.#wakeAt && this.#wakeTimer !== undefined) return;
    if (this.#wakeTimer !== undefined) this.#clock.clearTimeout(this.#wakeTimer);
    this.#wakeAt = at;
    this.#wakeTimer = this.#clock.setTimeout(() => {
      this.#wakeTimer = undefined;
      this.#wakeAt = Infinity;
      this.#schedule();
    }, at - this.#clock.now() + 1);
  }

  // --- ownership API ---------------------------------------------------------

  #lose(id: string, reason: LostReason): void {
    const t = this.#held.get(id);
    if (!t) return;
    this.#endTenancy(id, t);
    bump(this.#stats.losses, reason);
    this.#events.push({ type: "lost", splitId: id, reason });
    this.#log("warn", "Lost split", { split: id, epoch: t.epoch, reason });
  }

  #endTenancy(id: string, t: Tenancy): void {
    if (t.drainTimer !== undefined) this.#clock.clearTimeout(t.drainTimer);
    this.#held.delete(id);
    if (this.#held.size === 0) for (const w of this.#drainWaiters.splice(0)) w();
    this.#schedule();
  }

  /**
   * CAS loop on a held split: `make` builds the next record from the current
   * one. Retries while the record still carries our epoch and owner; throws
   * `FencedError` (and emits `lost`) once it does not.
   */
  async #casHeld(id: string, epoch: number, make: (r: SplitRecord) => SplitRecord): Promise<SplitRecord> {
    const t = this.#held.get(id);
    if (!t || t.epoch !== epoch) {
      throw new FencedError(id, epoch, t?.epoch ?? -1, `split is not held by this instance at epoch ${epoch}`);
    }
    let record = t.record;
    let revision = t.revision;
    for (let attempt = 0; attempt < 8; attempt++) {
      const next = make(record);
      const r = await this.#store.update(keys.split(id), encodeRecord(next), revision);
      if (r.ok) {
        this.#view.applyOwnSplit(id, next, r.revision);
        if (this.#held.get(id) === t) {
          t.record = next;
          t.revision = r.revision;
        }
        return next;
      }
      const cur = await this.#store.get(keys.split(id));
      const rec = cur ? decodeRecord(cur.key, cur.value, SplitRecordSchema) : undefined;
      if (!cur || !rec || !heldBy(rec, this.#me, epoch)) {
        if (cur) this.#view.putRaw(cur.key, cur.value, cur.revision);
        if (this.#held.get(id) === t) this.#lose(id, "fenced");
        throw new FencedError(id, epoch, rec?.epoch ?? -1);
      }
      record = rec;
      revision = cur.revision;
    }
    throw new SplitleaseError("STORE_UNAVAILABLE", `Commit to split "${id}" kept conflicting; giving up`);
  }

  /**
   * Fenced progress commit. A terminal commit (`final`) marks the split
   * completed and ends the tenancy.
   *
   * @throws {FencedError} when the split moved on (nothing written; `lost` emitted)
   */
  async commit(splitId: string, epoch: number, progress: SplitProgress, options: CommitOptions = {}): Promise<void> {
    const final = options.final ?? false;
    await this.#casHeld(splitId, epoch, (r) => commitRecord(splitId, r, progress, final));
    const t = this.#held.get(splitId);
    if (final && t) {
      this.#endTenancy(splitId, t);
      this.#specs.delete(splitId);
      this.#log("info", "Completed split", { split: splitId, epoch });
    }
  }

  /** Graceful release: owner none, epoch unchanged, no attempt consumed. */
  async release(splitIds: readonly string[]): Promise<void> {
    await Promise.all(splitIds.map(async (id) => {
      const t = this.#held.get(id);
      if (!t) return;
      try {
        await this.#casHeld(id, t.epoch, (r) => releaseRecord(r, t.reservedFor));
        this.#stats.releases++;
        this.#log("info", "Released split", { split: id, epoch: t.epoch, to: t.reservedFor });
      } catch (e) {
        if (!(e instanceof FencedError)) throw e;
      } finally {
        if (this.#held.get(id) === t) this.#endTenancy(id, t);
      }
    }));
  }

  /** Poison report: attempts + 1, owner none; quarantined at `maxAttempts`. */
  async fail(splitId: string, epoch: number, reason: string): Promise<void> {
    const next = await this.#casHeld(splitId, epoch, (r) => failRecord(r, reason, this.config.maxAttempts));
    const t = this.#held.get(splitId);
    if (t) this.#endTenancy(splitId, t);
    this.#log("warn", "Split failed", { split: splitId, epoch, attempts: next.attempts, reason });
    if (next.status === "quarantined") this.#quarantined(splitId, next.attempts);
  }

  /** Forcibly releases a split whose source cannot stop intake. */
  async declineRevocation(splitId: string): Promise<void> {
    const t = this.#held.get(splitId);
    if (!t) return;
    await this.#forceRelease(splitId, t);
  }

  async #forceRelease(id: string, t: Tenancy): Promise<void> {
    this.#lose(id, "revoked");
    bump(this.#stats.revocations, "forced");
    try {
      const r = await this.#store.update(keys.split(id), encodeRecord(releaseRecord(t.record, t.reservedFor)), t.revision);
      if (r.ok) this.#view.applyOwnSplit(id, releaseRecord(t.record, t.reservedFor), r.revision);
    } catch (e) {
      this.#log("warn", "Forced release failed; the split frees when our lease lapses", { split: id, error: String(e) });
    }
  }

  /** Asks the owner of `id` (this instance) to revoke it cooperatively. */
  #requestRevoke(id: string, t: Tenancy): void {
    if (t.draining) return;
    t.draining = true;
    bump(this.#stats.revocations, "requested");
    this.#events.push({ type: "revokeRequested", splitId: id });
    t.drainTimer = this.#clock.setTimeout(() => {
      if (this.#held.get(id) === t) void this.#forceRelease(id, t);
    }, this.config.drainDeadlineMs);
  }

  /**
   * Graceful drain: stop claiming, request revocation of every held split,
   * force the stragglers after `drainDeadlineMs`. Resolves when nothing is held.
   */
  async drain(): Promise<void> {
    if (this.#state !== "running" && this.#state !== "draining") return;
    this.#draining = true;
    this.#state = "draining";
    this.#leadership?.stop();
    for (const [id, t] of this.#held) this.#requestRevoke(id, t);
    if (this.#held.size === 0) return;
    await new Promise<void>((res) => this.#drainWaiters.push(res));
  }

  /** Releases everything still held, resigns leadership, leaves, stops. */
  async close(): Promise<void> {
    if (this.#state === "stopped" || this.#state === "failed") return;
    this.#draining = true;
    if (this.#state === "running") this.#state = "draining";
    try {
      await this.release([...this.#held.keys()]);
      await this.#leadership?.resign();
      await this.#store.delete(keys.member(this.#me.instance), this.#memberRev);
      this.#log("info", "Left", { instance: this.#me.instance });
    } catch (e) {
      this.#log("warn", "Leaving failed; peers take over when the lease lapses", { error: String(e) });
    } finally {
      await this.#teardown();
    }
  }

  /**
   * Stops at once without releasing or leaving, as if the process died
   * (its splits are taken over after one lease). For tests and fatal paths.
   */
  async abandon(): Promise<void> {
    await this.#teardown();
  }

  #fatal(error: SplitleaseError): void {
    if (this.#state === "failed" || this.#state === "stopped") return;
    this.#log("error", "Fatal coordination error", { error: error.message, code: error.code });
    for (const id of [...this.#held.keys()]) this.#lose(id, "fenced");
    this.#state = "failed";
    this.#leadership?.stop();
    this.#stopTimers();
    for (const w of this.#watches) void w.stop();
    this.#events.fail(error);
  }

  #stopTimers(): void {
    for (const t of [this.#beatTimer, this.#fenceTimer, this.#wakeTimer]) {
      if (t !== undefined) this.#clock.clearTimeout(t);
    }
    for (const t of this.#held.values()) if (t.drainTimer !== undefined) this.#clock.clearTimeout(t.drainTimer);
    this.#beatTimer = this.#fenceTimer = this.#wakeTimer = undefined;
  }

  async #teardown(): Promise<void> {
    if (this.#state !== "failed") this.#state = "stopped";
    this.#leadership?.stop();
    this.#stopTimers();
    this.#held.clear();
    for (const w of this.#drainWaiters.splice(0)) w();
    await Promise.all(this.#watches.map((w) => w.stop()));
    this.#events.close();
  }

  /** Closes (for `await using`). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  // --- events and status -------------------------------------------------------

  /** Waits for the next event; `undefined` once stopped. Rejects after a fatal error. */
  async poll(): Promise<CoordinationEvent | undefined> {
    const r = await this.#events.next();
    return r.done ? undefined : r.value;
  }

  /** The next queued event without waiting. */
  tryPoll(): CoordinationEvent | undefined {
    return this.#events.tryTake();
  }

  /** Iterates events until the coordinator stops. */
  [Symbol.asyncIterator](): AsyncIterator<CoordinationEvent> {
    return { next: () => this.#events.next() };
  }

  /** `/status` snapshot. */
  status(): CoordinatorStatus {
    const now = this.#clock.now();
    return buildStatus({
      view: this.#view,
      me: this.#me,
      job: this.config.job,
      state: this.#state,
      connected: !this.#fenced && now - this.#lastBeatOk < this.config.leaseMs / 2 + this.config.opTimeoutMs,
      isLeader: this.isLeader,
      leaderAlive: this.#liveness.alive(keys.leader, now, this.config.leaseMs),
      liveMembers: [this.#me.instance, ...this.#peers(now).keys()].sort(),
      held: this.#held,
      outcome: this.#outcome,
    });
  }

  /** Counters for metrics (a live object: read, don't mutate). */
  stats(): CoordinatorStats {
    return this.#stats;
  }
}

function nonce(random: () => number, n: number): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  let s = "";
  for (let i = 0; i < n; i++) s += alphabet[Math.floor(random() * alphabet.length)];
  return s;
}

export { ownerKey };
