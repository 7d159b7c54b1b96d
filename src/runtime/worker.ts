/**
 * The driver: runs a {@linkcode SplitSource} over a {@linkcode Coordinator},
 * one lane per held split, and turns coordination events into lane actions
 * and a final outcome (docs/DESIGN.md, "Runtime").
 *
 * @module
 */
import type { Clock, CoordinationEvent, Coordinator, Logger, LostReason } from "../coordinator/types.ts";
import { FencedError, SplitleaseError } from "../errors.ts";
import { systemClock } from "../coordinator/clock.ts";
import { jsonLogger } from "./logger.ts";
import { errorMessage, isAbortError, LaneOps, type LaneState } from "./lane.ts";
import type { SplitSource } from "./source.ts";
import { keysOf, rejectUnknownKeys } from "../util/options.ts";
import { durationIssue } from "../util/timers.ts";

export type { LaneInfo, ShutdownOptions, Worker, WorkerOptions, WorkerOutcome, WorkerStats } from "./worker_types.ts";
import type { LaneInfo, ShutdownOptions, Worker, WorkerOptions, WorkerOutcome, WorkerStats } from "./worker_types.ts";

type OutcomeBase = WorkerOutcome extends infer U ? U extends WorkerOutcome ? Omit<U, "stats"> : never : never;

/** Every option `startWorker` takes: anything else is a typo. */
const WORKER_KEYS = keysOf<WorkerOptions<unknown>>({
  coordinator: true,
  source: true,
  maxInFlight: true,
  logger: true,
  clock: true,
  stalledIsFatal: true,
  abortGraceMs: true,
  commitIntervalMs: true,
  statusIntervalMs: true,
});


/**
 * Starts a worker over a joined coordinator and returns its handle. The
 * worker reads every event, runs one lane per held split (at most
 * `maxInFlight` at once), and ends with an outcome in {@linkcode Worker.done}:
 * `drained` when the job completed or after {@linkcode Worker.shutdown},
 * `stalled` when only quarantined splits remain (unless configured to drain
 * with a warning), `error` when the coordinator failed.
 *
 * @example
 * ```ts
 * import { startWorker, type Coordinator, type SplitSource } from "@splitlease/splitlease";
 * declare const coordinator: Coordinator;
 * declare const source: SplitSource;
 * const worker = startWorker({ coordinator, source, maxInFlight: 4 });
 * // later, on SIGTERM:
 * const outcome = await worker.shutdown({ deadlineMs: 10_000 });
 * console.log(outcome.kind);
 * ```
 */
export function startWorker<D>(options: WorkerOptions<D>): Worker {
  return new WorkerImpl(options);
}

/**
 * Runs a worker to its end and resolves with the outcome (see
 * {@linkcode startWorker}).
 *
 * @example
 * ```ts
 * import { runWorker, type Coordinator, type SplitSource } from "@splitlease/splitlease";
 * declare const coordinator: Coordinator;
 * declare const source: SplitSource;
 * const outcome = await runWorker({ coordinator, source });
 * if (outcome.kind !== "drained") console.error(outcome);
 * ```
 */
export function runWorker<D>(options: WorkerOptions<D>): Promise<WorkerOutcome> {
  return startWorker(options).done;
}

class WorkerImpl<D> implements Worker {
  readonly coordinator: Coordinator;
  readonly done: Promise<WorkerOutcome>;
  #source: SplitSource<D>;
  #log: Logger;
  #clock: Clock;
  #maxInFlight: number;
  #stalledIsFatal: boolean;
  #abortGraceMs: number;
  #commitIntervalMs: number;
  #statusIntervalMs: number;
  #lanes = new Map<string, LaneState<D>>();
  #queue: LaneState<D>[] = [];
  #running = 0;
  /** Splits still held by the coordinator whose lane ended without a release. */
  #orphans = new Set<string>();
  #tasks = new Set<Promise<unknown>>();
  #stats: WorkerStats = {
    gained: 0,
    completed: 0,
    released: 0,
    failed: 0,
    lost: {},
    abandoned: 0,
    commits: 0,
    recordsCommitted: 0,
    revocations: {},
    running: 0,
    queued: 0,
  };
  #draining = false;
  #finished = false;
  #finishing: Promise<void> | null = null;
  #result: OutcomeBase | null = null;
  #forced = false;
  #resolve!: (o: WorkerOutcome) => void;
  #statusTimer: unknown = null;
  #wasLeader = false;
  #planGeneration = -1;
  #ops: LaneOps<D>;

  constructor(options: WorkerOptions<D>) {
    rejectUnknownKeys(options, WORKER_KEYS, "startWorker");
    this.coordinator = options.coordinator;
    this.#source = options.source;
    this.#log = options.logger ?? jsonLogger();
    this.#clock = options.clock ?? systemClock;
    this.#maxInFlight = options.maxInFlight ?? 8;
    this.#stalledIsFatal = options.stalledIsFatal ?? true;
    this.#abortGraceMs = options.abortGraceMs ?? 5000;
    this.#commitIntervalMs = options.commitIntervalMs ?? 0;
    this.#statusIntervalMs = options.statusIntervalMs ?? 1000;
    if (!Number.isInteger(this.#maxInFlight) || this.#maxInFlight < 0) {
      throw new SplitleaseError("INVALID_CONFIG", `maxInFlight must be an integer >= 0 (got ${options.maxInFlight}); 0 makes a standby`);
    }
    for (
      const [k, v] of [["abortGraceMs", this.#abortGraceMs], ["commitIntervalMs", this.#commitIntervalMs], [
        "statusIntervalMs",
        this.#statusIntervalMs,
      ]] as const
    ) {
      const issue = durationIssue(k, v);
      if (issue) throw new SplitleaseError("INVALID_CONFIG", `startWorker: ${issue}`);
    }
    this.#ops = new LaneOps<D>({
      coordinator: this.coordinator,
      clock: this.#clock,
      log: this.#log,
      stats: this.#stats,
      commitIntervalMs: this.#commitIntervalMs,
      markLost: (lane, reason) => this.#markLost(lane as LaneState<D>, reason),
      orphan: (id) => this.#orphans.add(id),
    });
    this.done = new Promise((r) => (this.#resolve = r));
    const st = this.#safeStatus();
    this.#log("info", "joined", {
      event: "joined",
      instance: this.coordinator.instance,
      job: st?.job,
      session: st?.session,
      maxInFlight: this.#maxInFlight,
    });
    this.#checkStatus();
    this.#scheduleStatus();
    void this.#loop();
  }

  get ready(): boolean {
    return !this.#draining && !this.#finished;
  }

  get draining(): boolean {
    return this.#draining && !this.#finished;
  }

  get finished(): boolean {
    return this.#finished;
  }

  stats(): WorkerStats {
    return {
      ...this.#stats,
      lost: { ...this.#stats.lost },
      revocations: { ...this.#stats.revocations },
      running: this.#running,
      queued: this.#queue.length,
    };
  }

  lanes(): LaneInfo[] {
    return [...this.#lanes.values()].map((l) => ({
      id: l.id,
      splitId: l.splitId,
      epoch: l.epoch,
      state: l.state,
      progress: l.durable ?? null,
    }));
  }

  shutdown(options: ShutdownOptions = {}): Promise<WorkerOutcome> {
    if (this.#finished) return this.done;
    this.#log("info", "shutdown requested", { event: "shutdown", reason: options.reason ?? "shutdown" });
    this.#finish({ kind: "drained", reason: "shutdown" }, options.deadlineMs);
    return this.done;
  }

  // --- event loop ---------------------------------------------------------

  async #loop(): Promise<void> {
    let error: unknown = undefined;
    try {
      for (;;) {
        const ev = await this.coordinator.poll();
        if (ev === undefined) break;
        try {
          this.#apply(ev);
        } catch (e) {
          this.#log("error", "event handling failed", { event: ev.type, error: e });
        }
        this.#checkStatus();
      }
    } catch (e) {
      error = e;
    }
    // The coordinator stopped: either because we closed it, or on its own.
    if (!this.#result) {
      const failed = this.#safeStatus()?.state === "failed";
      const cause = error ?? new SplitleaseError("CLOSED", "The coordinator stopped before the worker finished");
      this.#log("error", "coordinator stopped", { event: "coordinatorStopped", failed, error: cause });
      this.#result = { kind: "error", error: cause };
    } else if (error !== undefined) {
      this.#log("warn", "event stream ended with an error during shutdown", { error });
    }
    // Abort whatever still runs, then settle.
    for (const lane of this.#lanes.values()) this.#loseLane(lane, "shutdown", false);
    if (this.#forced) await this.#closing;
    else await this.#finishing?.catch(() => {});
    if (this.#result.kind === "error") {
      try {
        await this.coordinator.close();
      } catch (e) {
        this.#log("warn", "coordinator close failed", { error: e });
      }
    }
    await this.#settleLanes();
    this.#end();
  }

  #apply(ev: CoordinationEvent): void {
    switch (ev.type) {
      case "gained":
        return this.#onGained(ev);
      case "lost": {
        const lane = this.#lanes.get(ev.splitId);
        this.#orphans.delete(ev.splitId);
        if (!lane) return;
        // A lane we are ending ourselves (release or terminal write in flight) is not lost.
        if (lane.closed && !lane.lost) return;
        if (ev.reason === "revoked" && lane.state === "revoking") this.#count(this.#stats.revocations, "forced");
        this.#loseLane(lane, ev.reason, true);
        return;
      }
      case "revokeRequested":
        return this.#onRevoke(ev.splitId);
      case "quarantined": {
        this.#log("warn", "split quarantined", { event: "quarantined", splitId: ev.splitId, attempts: ev.attempts });
        const lane = this.#lanes.get(ev.splitId);
        if (lane && !lane.terminal) this.#loseLane(lane, "fenced", true);
        return;
      }
      case "allComplete":
        // The coordinator logs the job's outcome (one line, event allComplete,
        // stalled or planFailed); the worker's own lines are "draining" (with
        // the reason) and then "worker finished".
        this.#finish({ kind: "drained", reason: "complete" });
        return;
      case "planFailed": {
        const error = new SplitleaseError(
          "PLAN_FAILED",
          `The job failed: its planner failed ${ev.attempts} time(s) in a row (last: ${ev.error}); restart to plan again`,
        );
        this.#finish({ kind: "error", error });
        return;
      }
      case "stalled": {
        if (this.#stalledIsFatal) {
          this.#finish({ kind: "stalled", completed: ev.completed, quarantined: ev.quarantined });
        } else {
          this.#finish({
            kind: "drained",
            reason: "stalled",
            warning: `job stalled: ${ev.quarantined} split(s) quarantined, ${ev.completed} completed`,
          });
        }
        return;
      }
    }
  }

  #onGained(ev: Extract<CoordinationEvent, { type: "gained" }>): void {
    const splitId = ev.split.id;
    const old = this.#lanes.get(splitId);
    if (old) {
      // A re-gain always carries a higher epoch; the old tenancy is over.
      this.#loseLane(old, "fenced", true);
      this.#lanes.delete(splitId);
    }
    this.#orphans.delete(splitId);
    this.#stats.gained++;
    this.#log("info", "split gained", {
      event: "gained",
      splitId,
      epoch: ev.epoch,
      weight: ev.split.weight,
      progress: ev.progress ?? null,
    });
    if (this.#draining) {
      this.#background(this.#release(splitId, "draining"));
      return;
    }
    let descriptor = ev.split.descriptor as D;
    const schema = this.#source.descriptorSchema;
    if (schema) {
      const r = schema.safeParse(ev.split.descriptor);
      if (!r.success) {
        const detail = r.error.issues
          .map((i) => `${i.path.map(String).join(".") || "(root)"}: ${i.message}`)
          .join("; ");
        const reason = `invalid descriptor: ${detail}`;
        this.#stats.failed++;
        this.#log("error", "poison split: descriptor does not match the schema", {
          event: "poison",
          splitId,
          epoch: ev.epoch,
          issues: r.error.issues.map((i) => ({ path: i.path.map(String), message: i.message })),
        });
        this.#background(
          this.coordinator.fail(splitId, ev.epoch, reason).catch((e) =>
            this.#log("error", "poison report failed", { splitId, error: e })
          ),
        );
        return;
      }
      descriptor = r.data;
    }
    const lane = this.#ops.create(ev, descriptor);
    this.#lanes.set(splitId, lane);
    this.#queue.push(lane);
    this.#pump();
  }

  #onRevoke(splitId: string): void {
    const lane = this.#lanes.get(splitId);
    if (!lane) {
      if (this.#orphans.has(splitId)) this.#background(this.#release(splitId, "orphan"));
      return;
    }
    if (lane.closed || lane.state === "revoking" || lane.state === "stopping") return;
    this.#count(this.#stats.revocations, "requested");
    this.#log("info", "revocation requested", { event: "revocation", splitId, epoch: lane.epoch, laneId: lane.id });
    if (lane.state === "queued") {
      // Never started: nothing to stop, nothing to commit.
      this.#queue = this.#queue.filter((l) => l !== lane);
      lane.closed = true;
      this.#lanes.delete(splitId);
      lane.settle();
      this.#count(this.#stats.revocations, "drained");
      this.#background(this.#release(splitId, "revoked before start"));
      return;
    }
    if (this.#source.stopsIntakeOnRevoke === false) {
      this.#count(this.#stats.revocations, "declined");
      this.#log("warn", "revocation declined: the source cannot stop intake; releasing forcibly", {
        event: "revocation",
        outcome: "declined",
        splitId,
      });
      lane.state = "stopping";
      lane.declined = true;
      this.#background(
        this.coordinator.declineRevocation(splitId).catch((e) =>
          this.#log("error", "declineRevocation failed", { splitId, error: e })
        ),
      );
      return;
    }
    lane.state = "revoking";
    lane.revoke.abort(new DOMException("revocation requested", "AbortError"));
  }

  // --- lanes --------------------------------------------------------------


  #pump(): void {
    while (this.#running < this.#maxInFlight && this.#queue.length > 0) {
      const lane = this.#queue.shift()!;
      if (lane.closed) continue;
      this.#running++;
      lane.state = "running";
      this.#background(this.#runLane(lane));
    }
  }

  async #runLane(lane: LaneState<D>): Promise<void> {
    let threw = false;
    let error: unknown;
    let slotFreed = false;
    const freeSlot = () => {
      if (slotFreed) return;
      slotFreed = true;
      this.#running--;
      this.#pump();
    };
    // An abandoned lane frees its slot while `run` is still going.
    lane.settled.then(freeSlot);
    try {
      await this.#source.run(lane.handle);
    } catch (e) {
      threw = true;
      error = e;
    }
    if (this.#isAbandoned(lane)) {
      this.#log("warn", "abandoned lane returned late", { splitId: lane.splitId, laneId: lane.id, threw });
      return;
    }
    try {
      await this.#endTenancy(lane, threw, error);
    } catch (e) {
      this.#log("error", "ending a tenancy failed", { splitId: lane.splitId, laneId: lane.id, error: e });
    } finally {
      if (lane.graceTimer !== null) this.#clock.clearTimeout(lane.graceTimer);
      if (lane.flushTimer !== null) this.#clock.clearTimeout(lane.flushTimer);
      lane.flushTimer = null;
      lane.closed = true;
      if (this.#lanes.get(lane.splitId) === lane) this.#lanes.delete(lane.splitId);
      lane.settle();
      freeSlot();
    }
  }

  #isAbandoned(lane: LaneState<D>): boolean {
    return lane.graceTimer === "abandoned";
  }

  async #endTenancy(lane: LaneState<D>, threw: boolean, error: unknown): Promise<void> {
    // Wait for any write in flight (a complete/fail the source did not await).
    await lane.writeChain.catch(() => {});
    if (lane.terminal || lane.lost) {
      if (threw && !lane.lost && !isAbortError(error)) {
        this.#log("warn", "run threw after the tenancy ended", { splitId: lane.splitId, error });
      }
      return;
    }
    if (lane.declined) {
      // Released forcibly by declineRevocation; a last flush is fenced or lands, by CAS.
      await this.#ops.flushQuietly(lane);
      lane.closed = true;
      return;
    }
    const cooperative = lane.state === "revoking" && (!threw || isAbortError(error));
    if (threw && !cooperative) {
      this.#stats.failed++;
      this.#log("error", "run failed", { event: "laneFailed", splitId: lane.splitId, epoch: lane.epoch, error });
      await this.#ops.flushQuietly(lane);
      if (lane.lost) return;
      lane.closed = true;
      lane.terminal = "failed";
      try {
        await this.coordinator.fail(lane.splitId, lane.epoch, `run threw: ${errorMessage(error)}`);
      } catch (e) {
        this.#ops.onWriteError(lane, e, "fail");
        if (!(e instanceof FencedError)) this.#orphans.add(lane.splitId);
      }
      return;
    }
    lane.state = "stopping";
    await this.#ops.flushQuietly(lane);
    if (lane.lost) return;
    lane.closed = true;
    if (cooperative) {
      this.#count(this.#stats.revocations, "drained");
      await this.#release(lane.splitId, "revoked", lane);
    } else {
      this.#log("warn", "run returned without complete() or fail(); releasing the split", {
        splitId: lane.splitId,
        epoch: lane.epoch,
      });
      await this.#release(lane.splitId, "returned", lane);
    }
  }

  async #release(splitId: string, why: string, lane?: LaneState<D>): Promise<void> {
    try {
      await this.coordinator.release([splitId]);
      this.#orphans.delete(splitId);
      this.#stats.released++;
      this.#log("info", "split released", {
        event: "released",
        splitId,
        reason: why,
        epoch: lane?.epoch,
        progress: lane?.durable ?? null,
      });
    } catch (e) {
      if (e instanceof FencedError) {
        if (lane) this.#markLost(lane, "fenced");
        return;
      }
      this.#orphans.add(splitId);
      this.#log("error", "release failed; the split stays held until shutdown or the next revocation", {
        splitId,
        error: e,
      });
    }
  }

  /** Marks a lane lost: aborts it, rejects its commits, bounds how long it may keep running. */
  #loseLane(lane: LaneState<D>, reason: LostReason | "shutdown", fromEvent: boolean): void {
    if (lane.lost || lane.terminal) {
      return;
    }
    this.#markLost(lane, reason);
    if (fromEvent) {
      this.#log("warn", "split lost", { event: "lost", splitId: lane.splitId, epoch: lane.epoch, reason });
    }
  }

  #markLost(lane: LaneState<D>, reason: LostReason | "shutdown"): void {
    if (lane.lost) return;
    lane.lost = true;
    lane.closed = true;
    this.#count(this.#stats.lost, reason);
    if (lane.flushTimer !== null) this.#clock.clearTimeout(lane.flushTimer);
    lane.flushTimer = null;
    lane.pending = undefined;
    if (lane.state === "queued") {
      this.#queue = this.#queue.filter((l) => l !== lane);
      if (this.#lanes.get(lane.splitId) === lane) this.#lanes.delete(lane.splitId);
      lane.settle();
      return;
    }
    lane.state = "stopping";
    lane.abort.abort(new DOMException(`split lost (${reason})`, "AbortError"));
    if (lane.graceTimer === null) {
      lane.graceTimer = this.#clock.setTimeout(() => this.#abandon(lane, reason), this.#abortGraceMs);
    }
  }

  #abandon(lane: LaneState<D>, reason: string): void {
    if (this.#lanes.get(lane.splitId) !== lane) return; // already ended
    lane.graceTimer = "abandoned";
    this.#lanes.delete(lane.splitId);
    this.#stats.abandoned++;
    this.#log("error", "lane ignored its abort signal; abandoned", {
      event: "abandoned",
      splitId: lane.splitId,
      laneId: lane.id,
      reason,
      graceMs: this.#abortGraceMs,
    });
    lane.settle();
  }

  // --- finishing ----------------------------------------------------------

  #finish(result: OutcomeBase, deadlineMs?: number): void {
    if (this.#finishing) {
      // Already finishing: a later shutdown may only tighten the deadline.
      if (deadlineMs !== undefined) this.#armDeadline(deadlineMs);
      return;
    }
    this.#result = result;
    this.#draining = true;
    this.#finishing = this.#drainAndClose();
    if (deadlineMs !== undefined) this.#armDeadline(deadlineMs);
  }

  #deadlineTimer: unknown = null;

  #deadlineAt = Infinity;

  #armDeadline(ms: number): void {
    if (this.#finished || this.#forced) return;
    const at = this.#clock.now() + ms;
    if (at >= this.#deadlineAt) return; // only ever tightened
    this.#deadlineAt = at;
    if (this.#deadlineTimer !== null) this.#clock.clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = this.#clock.setTimeout(() => {
      this.#deadlineTimer = null;
      if (this.#finished) return;
      this.#forced = true;
      this.#log("warn", "drain deadline passed; aborting lanes and releasing forcibly", {
        event: "drainDeadline",
        deadlineMs: ms,
        lanes: this.#lanes.size,
      });
      for (const lane of this.#lanes.values()) this.#loseLane(lane, "shutdown", false);
      this.#background(this.#close());
    }, ms);
  }

  async #drainAndClose(): Promise<void> {
    const reason = this.#result?.kind === "drained" ? this.#result.reason : this.#result?.kind;
    this.#log("info", "draining", { event: "draining", reason, lanes: this.#lanes.size });
    // Queued lanes never started: release them now.
    for (const lane of [...this.#queue]) this.#onRevoke(lane.splitId);
    try {
      await this.coordinator.drain();
    } catch (e) {
      this.#log("error", "drain failed", { error: e });
    }
    await this.#settleLanes();
    for (const id of [...this.#orphans]) await this.#release(id, "shutdown");
    await this.#close();
  }

  #closing: Promise<void> | null = null;

  #close(): Promise<void> {
    this.#closing ??= (async () => {
      try {
        await this.coordinator.close();
      } catch (e) {
        this.#log("error", "coordinator close failed", { error: e });
      }
    })();
    return this.#closing;
  }

  async #settleLanes(): Promise<void> {
    while (this.#lanes.size > 0) {
      await Promise.all([...this.#lanes.values()].map((l) => l.settled));
    }
  }

  #end(): void {
    if (this.#finished) return;
    this.#finished = true;
    if (this.#statusTimer !== null) this.#clock.clearTimeout(this.#statusTimer);
    this.#statusTimer = null;
    if (this.#deadlineTimer !== null) this.#clock.clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = null;
    const base = this.#result!;
    const stats = this.stats();
    const outcome =
      (base.kind === "drained" && this.#forced
        ? { ...base, forced: true, stats }
        : { ...base, stats }) as WorkerOutcome;
    this.#log(outcome.kind === "error" ? "error" : outcome.kind === "stalled" ? "error" : "info", "worker finished", {
      event: "finished",
      outcome: outcome.kind,
      reason: outcome.kind === "drained" ? outcome.reason : undefined,
      forced: this.#forced || undefined,
      error: outcome.kind === "error" ? outcome.error : undefined,
      stats,
    });
    this.#resolve(outcome);
  }

  // --- misc ---------------------------------------------------------------

  #background(p: Promise<unknown>): void {
    const t = p.catch((e) => this.#log("error", "background task failed", { error: e }));
    this.#tasks.add(t);
    t.finally(() => this.#tasks.delete(t));
  }

  #count(map: Record<string, number>, key: string): void {
    map[key] = (map[key] ?? 0) + 1;
  }

  #safeStatus(): ReturnType<Coordinator["status"]> | undefined {
    try {
      return this.coordinator.status();
    } catch {
      return undefined;
    }
  }

  #scheduleStatus(): void {
    if (this.#finished || this.#statusIntervalMs === 0) return;
    this.#statusTimer = this.#clock.setTimeout(() => {
      this.#statusTimer = null;
      this.#checkStatus();
      this.#scheduleStatus();
    }, this.#statusIntervalMs);
  }

  #checkStatus(): void {
    const st = this.#safeStatus();
    if (!st) return;
    if (st.state === "draining" && !this.#draining && !this.#finished) {
      // The coordinator drains without us asking: an operator drained this
      // member (its member record). Finish as after SIGTERM.
      this.#log("info", "coordinator draining (an operator drained this member); shutting down", {
        event: "shutdown",
        reason: "member drained",
      });
      this.#finish({ kind: "drained", reason: "shutdown" });
      return;
    }
    if (st.isLeader !== this.#wasLeader) {
      this.#wasLeader = st.isLeader;
      if (st.isLeader) {
        this.#log("info", "leader elected", { event: "leaderElected", instance: st.instance, term: st.leader?.term });
      } else {
        this.#log("info", "leadership lost", { event: "leadershipLost", instance: st.instance });
      }
    }
    const gen = st.plan?.generation ?? -1;
    if (st.plan && gen !== this.#planGeneration && gen > 0) {
      this.#log("info", "plan published", {
        event: "planPublished",
        term: st.plan.term,
        generation: gen,
        finality: st.plan.finality,
        planned: st.plan.planned,
      });
    }
    this.#planGeneration = gen;
  }
}
