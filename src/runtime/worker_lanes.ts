/**
 * A worker's lanes from queued to settled: at most `maxInFlight` run at once,
 * each tenancy ends with a completion, a failure, a release or a loss, and a
 * lost lane that ignores its abort is abandoned after the grace period.
 *
 * @module
 */
import type { Clock, CoordinationEvent, Coordinator, LostReason } from "../coordinator/types.ts";
import type { Logger } from "../util/logger.ts";
import { FencedError, isPermanentFailure, isStoreOutage } from "../errors.ts";
import { errorMessage, failOptions, isAbortError, LaneOps, type WorkerLane } from "./lane.ts";
import { abandon, beginEnding, close, decline, isLost, isTerminal, lose, start, stopIntake } from "./lane_state.ts";
import { cutLane } from "./lane_cut.ts";
import type { SplitSource } from "./source.ts";
import { stackOf } from "../util/stack.ts";
import { traceOf } from "../tracing/coordinator_trace.ts";
import type { WorkerSettings } from "./worker_options.ts";
import type { WorkerStats } from "./worker_types.ts";

/** What the lanes need from their worker. */
export interface LanePoolDeps<D> {
  coordinator: Coordinator;
  source: SplitSource<D>;
  settings: WorkerSettings;
  /** The worker's counters, updated in place. */
  stats: WorkerStats;
  /** Runs a task nobody awaits, logging its failure. */
  background(p: Promise<unknown>): void;
}

/** Longest wait between two tries to release the orphans (the first waits `statusIntervalMs`, then doubling). */
const ORPHAN_RETRY_MAX_MS = 30_000;

/** Adds one to `map[key]`. */
export function count(map: Record<string, number>, key: string): void {
  map[key] = (map[key] ?? 0) + 1;
}

/** The lanes of one worker, by split id, and the runs, writes and releases that end them. */
export class LanePool<D> {
  /** Every lane not yet ended, by split id. */
  readonly lanes: Map<string, WorkerLane<D>> = new Map();
  /**
   * Splits still held by the coordinator whose lane ended without a release
   * (its last write failed): released again on a timer until the
   * coordinator lets go of them, never left held with nothing running them.
   */
  readonly orphans: Set<string> = new Set();
  #orphanTimer: unknown = null;
  #orphanDelayMs = 0;
  #stopped = false;
  readonly #orphanBaseMs: number;
  #queue: WorkerLane<D>[] = [];
  #running = 0;
  readonly #coordinator: Coordinator;
  readonly #source: SplitSource<D>;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #maxInFlight: number;
  readonly #abortGraceMs: number;
  readonly #stats: WorkerStats;
  readonly #background: (p: Promise<unknown>) => void;
  readonly #ops: LaneOps<D>;

  /** Creates the (empty) lanes of a worker. */
  constructor(deps: LanePoolDeps<D>) {
    this.#coordinator = deps.coordinator;
    this.#source = deps.source;
    this.#log = deps.settings.log;
    this.#clock = deps.settings.clock;
    this.#maxInFlight = deps.settings.maxInFlight;
    this.#abortGraceMs = deps.settings.abortGraceMs;
    this.#stats = deps.stats;
    this.#background = deps.background;
    this.#orphanBaseMs = Math.max(1, deps.settings.statusIntervalMs);
    this.#ops = new LaneOps<D>({
      coordinator: deps.coordinator,
      clock: deps.settings.clock,
      log: deps.settings.log,
      stats: deps.stats,
      commitIntervalMs: deps.settings.commitIntervalMs,
      trace: traceOf(deps.coordinator),
      markLost: (lane, reason) => this.#markLost(lane as WorkerLane<D>, reason),
      orphan: (id) => this.#orphan(id),
    });
  }

  /** Lanes running now. */
  get running(): number {
    return this.#running;
  }

  /** Lanes waiting for a free slot, oldest first. */
  get queued(): readonly WorkerLane<D>[] {
    return this.#queue;
  }

  /** Queues a lane for a gained split and starts it when a slot is free. */
  add(ev: Extract<CoordinationEvent, { type: "gained" }>, descriptor: D): void {
    const lane = this.#ops.create(ev, descriptor);
    this.lanes.set(ev.split.id, lane);
    this.#queue.push(lane);
    this.#pump();
  }

  /** Ends a lane the leader wants back: at once if it never started, else by stopping its intake. */
  revoke(splitId: string): void {
    const lane = this.lanes.get(splitId);
    if (!lane) {
      if (this.orphans.has(splitId)) this.#background(this.release(splitId, "orphan"));
      return;
    }
    if (lane.state.kind !== "queued" && lane.state.kind !== "running") return;
    count(this.#stats.revocations, "requested");
    this.#log("info", "revocation requested", { event: "revocation", splitId, epoch: lane.epoch, laneId: lane.id });
    if (lane.state.kind === "queued") {
      // Never started: nothing to stop, nothing to commit.
      close(lane, "ended");
      this.#queue = this.#queue.filter((l) => l !== lane);
      this.lanes.delete(splitId);
      lane.settle();
      count(this.#stats.revocations, "drained");
      this.#background(this.release(splitId, "revoked before start"));
      return;
    }
    if (this.#source.stopsIntakeOnRevoke === false) {
      count(this.#stats.revocations, "declined");
      this.#log("warn", "revocation declined: the source cannot stop intake; releasing forcibly", {
        event: "revocation",
        outcome: "declined",
        splitId,
      });
      decline(lane);
      this.#background(
        this.#coordinator.declineRevocation(splitId).catch((e) =>
          this.#log("error", "declineRevocation failed", { splitId, error: e })
        ),
      );
      return;
    }
    stopIntake(lane);
    lane.revoke.abort(new DOMException("revocation requested", "AbortError"));
  }

  /** The leader asks to cut the remaining work of the lane of `splitId` at `epoch` into `parts` pieces (see lane_cut.ts). */
  cut(splitId: string, epoch: number, parts: number): void {
    const lane = this.lanes.get(splitId);
    if (!lane || lane.epoch !== epoch) return;
    cutLane(lane, parts, {
      coordinator: this.#coordinator,
      source: this.#source,
      log: this.#log,
      stats: this.#stats,
      background: this.#background,
      handBack: (l) => {
        // Stops intake like a revocation: the lane commits what it did and releases the split to nobody.
        if (!stopIntake(l)) return;
        l.revoke.abort(new DOMException("cut refused: handing the split back", "AbortError"));
      },
    });
  }

  #pump(): void {
    while (this.#running < this.#maxInFlight && this.#queue.length > 0) {
      const lane = this.#queue.shift()!;
      if (!start(lane)) continue;
      this.#running++;
      this.#background(this.#runLane(lane));
    }
  }

  async #runLane(lane: WorkerLane<D>): Promise<void> {
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
      // Inside the tenancy's span: spans the source starts nest under it.
      await (lane.trace ? lane.trace.run(() => this.#source.run(lane.handle)) : this.#source.run(lane.handle));
    } catch (e) {
      threw = true;
      error = e;
    }
    if (lane.state.kind === "abandoned") {
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
      close(lane, "ended");
      if (this.lanes.get(lane.splitId) === lane) this.lanes.delete(lane.splitId);
      lane.settle();
      freeSlot();
    }
  }

  async #endTenancy(lane: WorkerLane<D>, threw: boolean, error: unknown): Promise<void> {
    // Wait for any write in flight (a complete/fail the source did not await).
    await lane.writeChain.catch(() => {});
    if (isTerminal(lane.state) || isLost(lane.state)) {
      if (threw && !isLost(lane.state) && !isAbortError(error)) {
        this.#log("warn", "run threw after the tenancy ended", { splitId: lane.splitId, error });
        lane.trace?.exception(error);
      }
      return;
    }
    if (lane.state.kind === "declined") {
      // Released forcibly by declineRevocation; a last flush is fenced or lands, by CAS.
      await this.#ops.flushQuietly(lane);
      close(lane, "ended");
      return;
    }
    const cooperative = lane.state.kind === "revoking" && (!threw || isAbortError(error));
    if (threw && !cooperative && isStoreOutage(error)) {
      // The store did not take a commit (a stream leader election, a lost
      // connection): not the split's fault, so no attempt is charged. Hand
      // it back; whoever claims it next resumes from the durable progress.
      // A release the outage refuses too leaves it an orphan, released (or
      // resumed by the coordinator) once the store answers.
      this.#log("warn", "run stopped by a store outage; handing the split back with no attempt charged", {
        event: "laneOutage",
        splitId: lane.splitId,
        epoch: lane.epoch,
        error,
      });
      lane.trace?.event("store.outage", { "splitlease.error": errorMessage(error) });
      beginEnding(lane);
      await this.#ops.flushQuietly(lane);
      if (isLost(lane.state)) return;
      close(lane, "ended");
      await this.release(lane.splitId, "store outage", lane);
      return;
    }
    if (threw && !cooperative) {
      this.#stats.failed++;
      // A PermanentFailure (or any error with `permanent: true`) quarantines at once: no retry can succeed.
      const permanent = isPermanentFailure(error);
      this.#log("error", "run failed", { event: "laneFailed", splitId: lane.splitId, epoch: lane.epoch, error, ...(permanent ? { permanent } : {}) });
      lane.trace?.exception(error);
      await this.#ops.flushQuietly(lane);
      if (isLost(lane.state)) return;
      close(lane, "failed");
      try {
        await this.#coordinator.fail(lane.splitId, lane.epoch, `run threw: ${errorMessage(error)}`, failOptions(stackOf(error), permanent));
      } catch (e) {
        this.#ops.onWriteError(lane, e, "fail");
        if (!(e instanceof FencedError)) this.#orphan(lane.splitId);
      }
      return;
    }
    beginEnding(lane);
    await this.#ops.flushQuietly(lane);
    if (isLost(lane.state)) return;
    close(lane, "ended");
    if (cooperative) {
      count(this.#stats.revocations, "drained");
      await this.release(lane.splitId, "revoked", lane);
    } else {
      this.#log("warn", "run returned without complete() or fail(); releasing the split", {
        splitId: lane.splitId,
        epoch: lane.epoch,
      });
      await this.release(lane.splitId, "returned", lane);
    }
  }

  /** Releases a held split (logging the lane's last progress); a failure leaves it an orphan. */
  async release(splitId: string, why: string, lane?: WorkerLane<D>): Promise<void> {
    try {
      await this.#coordinator.release([splitId]);
      this.orphans.delete(splitId);
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
      this.#orphan(splitId);
      this.#log("error", "Release failed; retried shortly", { splitId, error: e });
    }
  }

  /** Notes a split held with no lane and arms the retry of its release. */
  #orphan(splitId: string): void {
    this.orphans.add(splitId);
    if (this.#orphanTimer !== null || this.#stopped) return;
    this.#orphanDelayMs = this.#orphanDelayMs === 0 ? this.#orphanBaseMs : Math.min(ORPHAN_RETRY_MAX_MS, 2 * this.#orphanDelayMs);
    this.#orphanTimer = this.#clock.setTimeout(() => {
      this.#orphanTimer = null;
      this.#background(this.#releaseOrphans());
    }, this.#orphanDelayMs);
  }

  /**
   * Releases every orphan with no lane. A release the coordinator cannot
   * write (an outage, an unreadable record) ends its tenancy there, and the
   * coordinator resumes or releases the split once the record reads as ours
   * again; the next try then finds nothing held and forgets it.
   */
  async #releaseOrphans(): Promise<void> {
    const before = this.orphans.size;
    for (const id of [...this.orphans]) {
      if (this.#stopped) return;
      if (this.lanes.has(id)) this.orphans.delete(id);
      else await this.release(id, "orphan");
    }
    if (this.orphans.size === 0 || this.orphans.size < before) this.#orphanDelayMs = 0;
  }

  /** Stops retrying orphan releases (the worker has finished). */
  stop(): void {
    this.#stopped = true;
    if (this.#orphanTimer !== null) this.#clock.clearTimeout(this.#orphanTimer);
    this.#orphanTimer = null;
  }

  /** Marks a lane lost: aborts it, rejects its commits, bounds how long it may keep running. */
  lose(lane: WorkerLane<D>, reason: LostReason | "shutdown", fromEvent: boolean): void {
    if (isLost(lane.state) || isTerminal(lane.state)) return;
    this.#markLost(lane, reason);
    if (fromEvent) {
      this.#log("warn", "Lost split", { event: "lost", splitId: lane.splitId, epoch: lane.epoch, reason });
    }
  }

  #markLost(lane: WorkerLane<D>, reason: LostReason | "shutdown"): void {
    const queued = lane.state.kind === "queued";
    if (!lose(lane)) return;
    count(this.#stats.lost, reason);
    if (lane.flushTimer !== null) this.#clock.clearTimeout(lane.flushTimer);
    lane.flushTimer = null;
    lane.pending = undefined;
    if (queued) {
      this.#queue = this.#queue.filter((l) => l !== lane);
      if (this.lanes.get(lane.splitId) === lane) this.lanes.delete(lane.splitId);
      lane.settle();
      return;
    }
    lane.abort.abort(new DOMException(`split lost (${reason})`, "AbortError"));
    if (lane.graceTimer === null) {
      lane.graceTimer = this.#clock.setTimeout(() => this.#abandon(lane, reason), this.#abortGraceMs);
    }
  }

  #abandon(lane: WorkerLane<D>, reason: string): void {
    if (this.lanes.get(lane.splitId) !== lane) return; // already ended
    abandon(lane);
    this.lanes.delete(lane.splitId);
    this.#stats.abandoned++;
    lane.trace?.abandoned(`lane ignored its abort signal for ${this.#abortGraceMs} ms (${reason})`);
    this.#log("error", "lane ignored its abort signal; abandoned", {
      event: "abandoned",
      splitId: lane.splitId,
      laneId: lane.id,
      reason,
      graceMs: this.#abortGraceMs,
    });
    lane.settle();
  }

  /** Resolves once every lane has settled (ended or been abandoned). */
  async settle(): Promise<void> {
    while (this.lanes.size > 0) {
      await Promise.all([...this.lanes.values()].map((l) => l.settled));
    }
  }
}
