/**
 * How a served process stops: the first SIGTERM/SIGINT drains within the
 * deadline, a second aborts lanes at once; `POST /drain` and `shutdown()`
 * drain too. With `afterCompletion: "idle"` a completed job leaves the
 * process up, idle, until one of those ends it (a restart would find the
 * job done and exit at once, which a Deployment restarts in a loop), its
 * page showing the finished job.
 *
 * @module
 */
import type { Logger } from "../util/logger.ts";
import type { ShutdownOptions, WorkerOutcome } from "../runtime/worker_types.ts";
import { EXIT_DRAINED } from "../runtime/exit_codes.ts";

/**
 * The stop requests of one served worker, and its idle state.
 *
 * @example
 * ```ts ignore
 * const life = new ServeLifecycle((o) => worker.shutdown(o), deadlineMs, log);
 * host.onSignal(["SIGTERM", "SIGINT"], (s) => life.signal(s));
 * ```
 */
export class ServeLifecycle {
  readonly #stop: (o: ShutdownOptions) => Promise<unknown>;
  readonly #deadlineMs: number;
  readonly #log: Logger;
  #signals = 0;
  #idling = false;
  #stopRequested = false;
  #endIdle: (() => void) | undefined;

  /** `stop` shuts the worker down; `deadlineMs` bounds a drain. */
  constructor(stop: (o: ShutdownOptions) => Promise<unknown>, deadlineMs: number, log: Logger) {
    this.#stop = stop;
    this.#deadlineMs = deadlineMs;
    this.#log = log;
  }

  /** Whether the job completed and the process stays up, idle (`afterCompletion: "idle"`). */
  get idling(): boolean {
    return this.#idling;
  }

  /** Drains the worker within `deadlineMs` (ends the idle state). */
  shutdown(reason: string, deadlineMs = this.#deadlineMs): Promise<unknown> {
    this.#stopRequested = true;
    this.#endIdle?.();
    return this.#stop({ reason, deadlineMs });
  }

  /** A process signal: the first drains, a second aborts lanes at once. */
  signal(signal: string): void {
    this.#signals++;
    if (this.#idling) {
      this.#log("info", `${signal}: leaving the idle state`, { event: "signal", signal });
      void this.shutdown(signal);
    } else if (this.#signals === 1) {
      this.#log("info", `${signal}: draining`, { event: "signal", signal, deadlineMs: this.#deadlineMs });
      void this.shutdown(signal);
    } else {
      this.#log("warn", `${signal} again: aborting lanes now`, { event: "signal", signal });
      void this.shutdown(signal, 0);
    }
  }

  /** Whether a worker that ended with `outcome` (exit code `exitCode`) stays up idle: the job completed and nobody asked it to stop. */
  idlesAfter(outcome: WorkerOutcome, exitCode: number, afterCompletion: "exit" | "idle" | undefined): boolean {
    return afterCompletion === "idle" && exitCode === EXIT_DRAINED && outcome.kind === "drained" &&
      outcome.reason !== "shutdown" && !this.#stopRequested;
  }

  /** Idles until a signal, `POST /drain` or `shutdown()` ends it. */
  async idle(reason: string): Promise<void> {
    const stopped = new Promise<void>((resolve) => (this.#endIdle = resolve));
    this.#idling = true;
    this.#log("info", "idling until SIGTERM (afterCompletion: idle)", { event: "idle", reason });
    if (!this.#stopRequested) await stopped;
    this.#idling = false;
  }
}
