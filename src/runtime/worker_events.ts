/**
 * What a worker does with each coordination event: a gained split becomes a
 * lane (or a poison report, or a release while draining), a lost or
 * quarantined one ends its lane, a revocation stops one, and the job's end
 * finishes the worker.
 *
 * @module
 */
import type { Clock, CoordinationEvent, Coordinator } from "../coordinator/types.ts";
import type { Logger } from "../util/logger.ts";
import { SplitleaseError } from "../errors.ts";
import type { SplitSource } from "./source.ts";
import type { OutcomeBase } from "./worker_finish.ts";
import { isTerminal } from "./lane_state.ts";
import { count, type LanePool } from "./worker_lanes.ts";
import type { WorkerStats } from "./worker_types.ts";

/** What event handling needs from its worker. */
export interface WorkerEventDeps<D> {
  coordinator: Coordinator;
  source: SplitSource<D>;
  log: Logger;
  /** The worker's counters, updated in place. */
  stats: WorkerStats;
  /** Whether a stalled job ends `stalled` (else `drained` with a warning). */
  stalledIsFatal: boolean;
  /**
   * How long a `stalled` outcome must stand before the worker finishes on
   * it: an outcome withdrawn meanwhile (`reopened`: an operator requeued or
   * cancelled a split as it was decided) keeps the worker working.
   */
  stallHoldMs: number;
  /**
   * `"wait"`: a stall never finishes the worker; it stays in the job and a
   * `reopened` (an operator's requeue or cancel) has it take work again.
   */
  afterStall: "exit" | "wait";
  clock: Clock;
  pool: LanePool<D>;
  /** Whether the worker is draining: a split gained now is handed back. */
  draining(): boolean;
  /** Starts finishing the worker with `result`. */
  finish(result: OutcomeBase): void;
  /** Runs a task nobody awaits, logging its failure. */
  background(p: Promise<unknown>): void;
}

/** Applies coordination events to a worker's lanes. */
export class WorkerEvents<D> {
  readonly #coordinator: Coordinator;
  readonly #source: SplitSource<D>;
  readonly #log: Logger;
  readonly #stats: WorkerStats;
  readonly #stalledIsFatal: boolean;
  readonly #pool: LanePool<D>;
  readonly #d: WorkerEventDeps<D>;
  /** The finish a standing `stalled` outcome starts once {@linkcode WorkerEventDeps.stallHoldMs} has passed. */
  #stall: unknown = null;

  /** Creates the event handling of a worker. */
  constructor(deps: WorkerEventDeps<D>) {
    this.#coordinator = deps.coordinator;
    this.#source = deps.source;
    this.#log = deps.log;
    this.#stats = deps.stats;
    this.#stalledIsFatal = deps.stalledIsFatal;
    this.#pool = deps.pool;
    this.#d = deps;
  }

  /** Applies one event. */
  apply(ev: CoordinationEvent): void {
    switch (ev.type) {
      case "gained":
        return this.#onGained(ev);
      case "lost": {
        const lane = this.#pool.lanes.get(ev.splitId);
        this.#pool.orphans.delete(ev.splitId);
        if (!lane) return;
        // A lane we are ending ourselves (release or terminal write in flight) is not lost.
        if (lane.state.kind === "closed") return;
        if (ev.reason === "revoked" && lane.state.kind === "revoking") count(this.#stats.revocations, "forced");
        this.#pool.lose(lane, ev.reason, true);
        return;
      }
      case "revokeRequested":
        return this.#pool.revoke(ev.splitId);
      case "splitRequested":
        return this.#pool.cut(ev.splitId, ev.epoch, ev.parts);
      case "quarantined": {
        this.#log("warn", "Split quarantined", { event: "quarantined", splitId: ev.splitId, attempts: ev.attempts, ...(ev.permanent ? { permanent: true } : {}) });
        const lane = this.#pool.lanes.get(ev.splitId);
        if (lane && !isTerminal(lane.state)) this.#pool.lose(lane, "fenced", true);
        return;
      }
      case "allComplete":
        this.#holdStall(null);
        // The coordinator logs the job's outcome (one line, event allComplete,
        // stalled or planFailed); the worker's own lines are "draining" (with
        // the reason) and then "worker finished".
        this.#d.finish({ kind: "drained", reason: "complete" });
        return;
      case "planFailed": {
        const error = new SplitleaseError(
          "PLAN_FAILED",
          `The job failed: its planner failed ${ev.attempts} time(s) in a row (last: ${ev.error}); restart to plan again`,
        );
        this.#d.finish({ kind: "error", error });
        return;
      }
      case "stalled": {
        if (this.#d.afterStall === "wait") {
          this.#holdStall(null);
          // The coordinator logged the outcome; this line says why the process stays.
          this.#log("warn", "Job stalled: waiting for a repair (afterStall: wait)", {
            event: "stallWait",
            completed: ev.completed,
            quarantined: ev.quarantined,
          });
          return;
        }
        const result: OutcomeBase = this.#stalledIsFatal
          ? { kind: "stalled", completed: ev.completed, quarantined: ev.quarantined }
          : {
            kind: "drained",
            reason: "stalled",
            warning: `job stalled: ${ev.quarantined} split(s) quarantined, ${ev.completed} completed`,
          };
        this.#holdStall(result);
        return;
      }
      case "reopened":
        // Logged by the coordinator (one line, event reopened), like the outcome it withdraws.
        this.#holdStall(null);
        return;
    }
  }

  /** Finishes with `result` once it has stood for the hold (`null`: withdrawn, keep working). */
  #holdStall(result: OutcomeBase | null): void {
    if (this.#stall !== null) this.#d.clock.clearTimeout(this.#stall);
    this.#stall = null;
    if (!result) return;
    this.#stall = this.#d.clock.setTimeout(() => {
      this.#stall = null;
      this.#d.finish(result);
    }, this.#d.stallHoldMs);
  }

  #onGained(ev: Extract<CoordinationEvent, { type: "gained" }>): void {
    const splitId = ev.split.id;
    const old = this.#pool.lanes.get(splitId);
    if (old) {
      // A re-gain always carries a higher epoch; the old tenancy is over.
      this.#pool.lose(old, "fenced", true);
      this.#pool.lanes.delete(splitId);
    }
    this.#pool.orphans.delete(splitId);
    this.#stats.gained++;
    // The one line of a gain (the coordinator does not log it): how it came (`kind`) and its attempts.
    this.#log("info", "Gained split", {
      event: "gained",
      splitId,
      epoch: ev.epoch,
      kind: ev.kind ?? null,
      attempts: ev.attempts ?? null,
      weight: ev.split.weight,
      progress: ev.progress ?? null,
    });
    if (this.#d.draining()) {
      this.#d.background(this.#pool.release(splitId, "draining"));
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
        this.#d.background(
          this.#coordinator.fail(splitId, ev.epoch, reason).catch((e) =>
            this.#log("error", "poison report failed", { splitId, error: e })
          ),
        );
        return;
      }
      descriptor = r.data;
    }
    this.#pool.add(ev, descriptor);
  }
}
