/**
 * The driver: runs a {@linkcode SplitSource} over a {@linkcode Coordinator},
 * one lane per held split, and turns coordination events into lane actions
 * and a final outcome (docs/DESIGN.md, "Runtime").
 *
 * @module
 */
import type { Coordinator } from "../coordinator/types.ts";
import type { Logger } from "../util/logger.ts";
import type { SplitSource } from "./source.ts";
import { Finisher, type OutcomeBase } from "./worker_finish.ts";
import { WorkerEvents } from "./worker_events.ts";
import { shownState } from "./lane_state.ts";
import { LanePool } from "./worker_lanes.ts";
import { workerSettings } from "./worker_options.ts";
import { StatusWatch } from "./worker_status.ts";

import type { LaneInfo, ShutdownOptions, Worker, WorkerOptions, WorkerOutcome, WorkerStats } from "./worker_types.ts";

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
 * const worker = startWorker({ coordinator, source }); // as many lanes as the coordinator joined with
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
  #log: Logger;
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
    cuts: { performed: 0, declined: 0 },
    running: 0,
    queued: 0,
  };
  #resolve!: (o: WorkerOutcome) => void;
  #pool: LanePool<D>;
  #events: WorkerEvents<D>;
  #finisher: Finisher<D>;
  #status: StatusWatch;

  constructor(options: WorkerOptions<D>) {
    const settings = workerSettings(options);
    const { log, clock } = settings;
    const coordinator = options.coordinator;
    const source: SplitSource<D> = options.source;
    this.coordinator = coordinator;
    this.#log = log;
    const background = (p: Promise<unknown>) => this.#background(p);
    const finish = (result: OutcomeBase) => this.#finisher.finish(result);
    const pool = this.#pool = new LanePool<D>({ coordinator, source, settings, stats: this.#stats, background });
    this.#finisher = new Finisher<D>({
      coordinator,
      log,
      clock,
      pool,
      background,
      status: () => this.#status.safeStatus(),
      stats: () => this.stats(),
      stopStatus: () => this.#status.stop(),
      resolve: (o) => this.#resolve(o),
    });
    this.#status = new StatusWatch({
      coordinator,
      log,
      clock,
      intervalMs: settings.statusIntervalMs,
      draining: () => this.#finisher.draining,
      finished: () => this.#finisher.finished,
      finish,
    });
    this.#events = new WorkerEvents<D>({
      coordinator,
      source,
      log,
      stats: this.#stats,
      stalledIsFatal: settings.stalledIsFatal,
      // A stall stands until the next status check before the worker finishes on it.
      stallHoldMs: settings.statusIntervalMs,
      afterStall: settings.afterStall,
      clock,
      pool,
      draining: () => this.#finisher.draining,
      finish,
      background,
    });
    this.done = new Promise((r) => (this.#resolve = r));
    this.#status.check();
    this.#status.schedule();
    void this.#loop();
  }

  get ready(): boolean {
    return !this.#finisher.draining && !this.#finisher.finished;
  }

  get draining(): boolean {
    return this.#finisher.draining && !this.#finisher.finished;
  }

  get finished(): boolean {
    return this.#finisher.finished;
  }

  stats(): WorkerStats {
    return {
      ...this.#stats,
      lost: { ...this.#stats.lost },
      revocations: { ...this.#stats.revocations },
      running: this.#pool.running,
      queued: this.#pool.queued.length,
    };
  }

  lanes(): LaneInfo[] {
    return [...this.#pool.lanes.values()].map((l) => ({
      id: l.id,
      splitId: l.splitId,
      epoch: l.epoch,
      state: shownState(l.state),
      progress: l.durable ?? null,
    }));
  }

  shutdown(options: ShutdownOptions = {}): Promise<WorkerOutcome> {
    if (this.#finisher.finished) return this.done;
    this.#log("info", "shutdown requested", { event: "shutdown", reason: options.reason ?? "shutdown" });
    this.#finisher.finish({ kind: "drained", reason: "shutdown" }, options.deadlineMs);
    return this.done;
  }

  async #loop(): Promise<void> {
    let error: unknown = undefined;
    try {
      for (;;) {
        let ev = await this.coordinator.poll();
        if (ev === undefined) break;
        // A burst (a drain revokes every lane at once) is applied whole and
        // the status checked once after it: a status is O(held), so checking
        // after each event made a burst O(held²).
        do {
          try {
            this.#events.apply(ev);
          } catch (e) {
            this.#log("error", "event handling failed", { event: ev.type, error: e });
          }
          ev = this.coordinator.tryPoll();
        } while (ev !== undefined);
        this.#status.check();
      }
    } catch (e) {
      error = e;
    }
    await this.#finisher.stopped(error);
  }

  #background(p: Promise<unknown>): void {
    const t = p.catch((e) => this.#log("error", "background task failed", { error: e }));
    this.#tasks.add(t);
    t.finally(() => this.#tasks.delete(t));
  }
}
