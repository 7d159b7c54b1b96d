/**
 * A worker's watch on its coordinator's status, after every event and on an
 * interval: it finishes the worker when an operator drained this member.
 * (Elections and plans are the coordinator's to log: `Leader elected`,
 * `Leader deposed`, `Plan published`, one line each.)
 *
 * @module
 */
import type { Clock, Coordinator } from "../coordinator/types.ts";
import type { Logger } from "../util/logger.ts";
import type { OutcomeBase } from "./worker_finish.ts";

/** What the status watch needs from its worker. */
export interface StatusWatchDeps {
  coordinator: Coordinator;
  log: Logger;
  clock: Clock;
  /** Interval of the check (0: only when {@linkcode StatusWatch.check} is called). */
  intervalMs: number;
  /** Whether the worker started finishing. */
  draining(): boolean;
  /** Whether the worker finished. */
  finished(): boolean;
  /** Starts finishing the worker with `result`. */
  finish(result: OutcomeBase): void;
}

/** Checks a coordinator's status for what the worker logs or acts on. */
export class StatusWatch {
  readonly #coordinator: Coordinator;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #statusIntervalMs: number;
  readonly #d: StatusWatchDeps;
  #statusTimer: unknown = null;

  /** Creates the watch (it checks nothing until called or scheduled). */
  constructor(deps: StatusWatchDeps) {
    this.#coordinator = deps.coordinator;
    this.#log = deps.log;
    this.#clock = deps.clock;
    this.#statusIntervalMs = deps.intervalMs;
    this.#d = deps;
  }

  /** The coordinator's status, or `undefined` when it cannot give one. */
  safeStatus(): ReturnType<Coordinator["status"]> | undefined {
    try {
      return this.#coordinator.status();
    } catch {
      return undefined;
    }
  }

  /** Checks again after the interval, and so on until the worker finished. */
  schedule(): void {
    if (this.#d.finished() || this.#statusIntervalMs === 0) return;
    this.#statusTimer = this.#clock.setTimeout(() => {
      this.#statusTimer = null;
      this.check();
      this.schedule();
    }, this.#statusIntervalMs);
  }

  /** Stops the interval. */
  stop(): void {
    if (this.#statusTimer !== null) this.#clock.clearTimeout(this.#statusTimer);
    this.#statusTimer = null;
  }

  /** Checks the status now. */
  check(): void {
    // The state alone: a drain ends a lane at a time, and building the whole
    // status (O(held)) after each made a 50-split hand-back O(held²).
    const state = this.#coordinator.state ?? this.safeStatus()?.state;
    if (state === "draining" && !this.#d.draining() && !this.#d.finished()) {
      // The coordinator drains without us asking: an operator drained this
      // member (its member record). Finish as after SIGTERM.
      this.#log("info", "coordinator draining (an operator drained this member); shutting down", {
        event: "shutdown",
        reason: "member drained",
      });
      this.#d.finish({ kind: "drained", reason: "shutdown" });
      return;
    }
  }
}
