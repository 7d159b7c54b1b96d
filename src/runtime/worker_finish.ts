/**
 * How a worker finishes: queued lanes are handed back, the coordinator
 * drains, every lane settles, splits still held are released and the
 * coordinator is closed; a deadline, when given, aborts the lanes still
 * running. The outcome resolves once the event stream has ended and every
 * lane has settled.
 *
 * @module
 */
import type { Clock, Coordinator } from "../coordinator/types.ts";
import type { Logger } from "../util/logger.ts";
import { SplitleaseError } from "../errors.ts";
import type { LanePool } from "./worker_lanes.ts";
import type { WorkerOutcome, WorkerStats } from "./worker_types.ts";

/** A worker outcome before its counters are attached. */
export type OutcomeBase = WorkerOutcome extends infer U ? U extends WorkerOutcome ? Omit<U, "stats"> : never : never;

/** What finishing needs from its worker. */
export interface FinisherDeps<D> {
  coordinator: Coordinator;
  log: Logger;
  clock: Clock;
  pool: LanePool<D>;
  /** Runs a task nobody awaits, logging its failure. */
  background(p: Promise<unknown>): void;
  /** The coordinator's status, or `undefined` when it cannot give one. */
  status(): ReturnType<Coordinator["status"]> | undefined;
  /** The worker's counters as of now. */
  stats(): WorkerStats;
  /** Stops the periodic status check. */
  stopStatus(): void;
  /** Resolves the worker's `done`. */
  resolve(outcome: WorkerOutcome): void;
}

/** Drains, closes and ends one worker, once. */
export class Finisher<D> {
  readonly #coordinator: Coordinator;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #pool: LanePool<D>;
  readonly #d: FinisherDeps<D>;
  #draining = false;
  #finished = false;
  #finishing: Promise<void> | null = null;
  #result: OutcomeBase | null = null;
  #forced = false;

  /** Creates the finishing of a worker (nothing starts until {@linkcode Finisher.finish}). */
  constructor(deps: FinisherDeps<D>) {
    this.#coordinator = deps.coordinator;
    this.#log = deps.log;
    this.#clock = deps.clock;
    this.#pool = deps.pool;
    this.#d = deps;
  }

  /** Whether finishing has started (it stays `true` once finished). */
  get draining(): boolean {
    return this.#draining;
  }

  /** Whether the outcome is resolved. */
  get finished(): boolean {
    return this.#finished;
  }

  /**
   * Starts finishing with `result` (the first call decides the outcome); a
   * `deadlineMs` bounds the drain, and a later call may only tighten it.
   */
  finish(result: OutcomeBase, deadlineMs?: number): void {
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

  /** Settles the worker after its event stream ended, with the stream's `error` if it threw. */
  async stopped(error: unknown): Promise<void> {
    // The coordinator stopped: either because we closed it, or on its own.
    if (!this.#result) {
      const failed = this.#d.status()?.state === "failed";
      const cause = error ?? new SplitleaseError("CLOSED", "The coordinator stopped before the worker finished");
      this.#log("error", "coordinator stopped", { event: "coordinatorStopped", failed, error: cause });
      this.#result = { kind: "error", error: cause };
    } else if (error !== undefined) {
      this.#log("warn", "event stream ended with an error during shutdown", { error });
    }
    // Abort whatever still runs, then settle.
    for (const lane of this.#pool.lanes.values()) this.#pool.lose(lane, "shutdown", false);
    if (this.#forced) await this.#closing;
    else await this.#finishing?.catch(() => {});
    if (this.#result.kind === "error") {
      try {
        await this.#coordinator.close();
      } catch (e) {
        this.#log("warn", "coordinator close failed", { error: e });
      }
    }
    await this.#pool.settle();
    this.#end();
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
        lanes: this.#pool.lanes.size,
      });
      for (const lane of this.#pool.lanes.values()) this.#pool.lose(lane, "shutdown", false);
      this.#d.background(this.#close());
    }, ms);
  }

  async #drainAndClose(): Promise<void> {
    const reason = this.#result?.kind === "drained" ? this.#result.reason : this.#result?.kind;
    this.#log("info", "draining", { event: "draining", reason, lanes: this.#pool.lanes.size });
    // Queued lanes never started: release them now.
    for (const lane of [...this.#pool.queued]) this.#pool.revoke(lane.splitId);
    try {
      await this.#coordinator.drain();
    } catch (e) {
      this.#log("error", "drain failed", { error: e });
    }
    await this.#pool.settle();
    for (const id of [...this.#pool.orphans]) await this.#pool.release(id, "shutdown");
    await this.#close();
  }

  #closing: Promise<void> | null = null;

  #close(): Promise<void> {
    this.#closing ??= (async () => {
      try {
        await this.#coordinator.close();
      } catch (e) {
        this.#log("error", "coordinator close failed", { error: e });
      }
    })();
    return this.#closing;
  }

  #end(): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#d.stopStatus();
    this.#pool.stop();
    if (this.#deadlineTimer !== null) this.#clock.clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = null;
    const base = this.#result!;
    const stats = this.#d.stats();
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
    this.#d.resolve(outcome);
  }
}
