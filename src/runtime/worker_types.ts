/**
 * Public types of the worker runtime: options, counters, lanes, outcomes
 * and the worker handle.
 *
 * @module
 */
import type { Clock, Coordinator } from "../coordinator/types.ts";
import type { Logger } from "../util/logger.ts";
import type { SplitProgress } from "../records.ts";
import type { SplitSource } from "./source.ts";

/**
 * What every host of a worker takes and hands it unchanged: the source, the
 * logger and clock, and how its lanes end. {@linkcode WorkerOptions} extends
 * it, and so do the options of `serve` and of a slice (through
 * `HostOptions`), so each of these fields means one thing everywhere.
 *
 * @example
 * ```ts
 * import type { SplitSource } from "@splitlease/splitlease";
 * import type { WorkerBaseOptions } from "@splitlease/splitlease/host";
 * declare const source: SplitSource;
 * const base: WorkerBaseOptions<unknown> = { source, abortGraceMs: 2000, commitIntervalMs: 1000 };
 * ```
 */
export interface WorkerBaseOptions<D> {
  /** What to do: the planner and the processing of one split. */
  source: SplitSource<D>;
  /** Structured logger (default: {@linkcode jsonLogger}, JSON lines on the console). */
  logger?: Logger;
  /** Time source (default: {@linkcode systemClock}). */
  clock?: Clock;
  /**
   * `true` (default): a stalled job (quarantined splits left) ends with the
   * `stalled` outcome (`serve` exits 3; a slice answers `stalled`).
   * `false`: it drains and ends `drained` with a warning (`serve` exits 0).
   * Either way only once the stall has stood for `statusIntervalMs`: one
   * withdrawn meanwhile (`reopened`) keeps the worker working.
   */
  stalledIsFatal?: boolean;
  /**
   * How long a lane may ignore its abort signal before it is abandoned and
   * reported (default 5000 ms; 1000 ms in a slice).
   */
  abortGraceMs?: number;
  /**
   * Commit cadence per lane: 0 (default) writes every `commit`; above 0 the
   * newest accepted progress is written at most once per interval per lane.
   */
  commitIntervalMs?: number;
}

/**
 * Options of {@linkcode startWorker} and {@linkcode runWorker}.
 *
 * @example
 * ```ts
 * import { runWorker, type Coordinator, type SplitSource, type WorkerOptions } from "@splitlease/splitlease";
 * declare const coordinator: Coordinator;
 * declare const source: SplitSource;
 * const options: WorkerOptions<unknown> = { coordinator, source, maxInFlight: 4, commitIntervalMs: 1000 };
 * await runWorker(options);
 * ```
 */
export interface WorkerOptions<D> extends WorkerBaseOptions<D> {
  /** The coordinator (already joined). The worker drives and closes it. */
  coordinator: Coordinator;
  /**
   * Lanes running at once; gained splits beyond it wait. Default: the
   * coordinator's `maxInFlight` (the one it joined with), else 8. A value
   * that differs from the coordinator's is refused (`INVALID_CONFIG`).
   */
  maxInFlight?: number;
  /**
   * What a stall does to the worker. `"exit"` (default): the worker ends on
   * it as `stalledIsFatal` says. `"wait"`: it stays in the job (heartbeating,
   * possibly leading, its HTTP app up) and waits for a repair: a requeue or
   * cancel withdraws the outcome (`reopened`) and the worker takes work
   * again; a job that ends `allComplete` ends it as usual.
   */
  afterStall?: "exit" | "wait";
  /**
   * How often leadership and plan changes are checked for logging (default
   * 1000 ms); also how long a stall stands before the worker finishes on it,
   * and the first wait before a split held with no lane is released again.
   */
  statusIntervalMs?: number;
}

/**
 * Counters of one worker.
 *
 * @example
 * ```ts
 * import type { Worker } from "@splitlease/splitlease";
 * import type { WorkerStats } from "@splitlease/splitlease/admin";
 * declare const worker: Worker;
 * const stats: WorkerStats = worker.stats();
 * console.log(stats.completed, stats.recordsCommitted);
 * ```
 */
export interface WorkerStats {
  /** Lanes opened (splits gained). */
  gained: number;
  /** Splits completed by this worker. */
  completed: number;
  /** Splits released gracefully (revocation, shutdown, voluntary). */
  released: number;
  /** Failed tenancies (thrown `run`, `fail`, bad descriptor). */
  failed: number;
  /** Lanes lost, by reason (`fenced`, `expired`, `starved`, `revoked`, `shutdown`). */
  lost: Record<string, number>;
  /** Lanes that ignored their abort beyond `abortGraceMs`. */
  abandoned: number;
  /** Progress writes that landed (terminal ones included). */
  commits: number;
  /** Records reported through `commit(…, { records })` that landed. */
  recordsCommitted: number;
  /** Revocations by outcome: `drained` (cooperative), `declined`, `forced`. */
  revocations: Record<string, number>;
  /** The leader's asks to cut a lane's remaining work: `performed` (written), `declined` (by the source, or not writable). */
  cuts: { performed: number; declined: number };
  /** Lanes running now. */
  running: number;
  /** Gained splits waiting for a free lane. */
  queued: number;
}

/**
 * One lane as shown by {@linkcode Worker.lanes}.
 *
 * @example
 * ```ts
 * import type { LaneInfo } from "@splitlease/splitlease/admin";
 * import type { Worker } from "@splitlease/splitlease";
 * declare const worker: Worker;
 * const lanes: LaneInfo[] = worker.lanes();
 * console.log(lanes.length);
 * ```
 */
export interface LaneInfo {
  /** Lane id. */
  id: string;
  /** The split the lane runs. */
  splitId: string;
  /** Epoch of the tenancy. */
  epoch: number;
  /** `queued`, `running`, `revoking` or `stopping`. */
  state: "queued" | "running" | "revoking" | "stopping";
  /** Last durable progress of this tenancy. */
  progress: SplitProgress | null;
}

/**
 * How a worker ended.
 *
 * @example
 * ```ts
 * import type { WorkerOutcome } from "@splitlease/splitlease";
 * function exitCode(o: WorkerOutcome): number {
 *   return o.kind === "drained" ? 0 : o.kind === "stalled" ? 3 : 1;
 * }
 * ```
 */
export type WorkerOutcome =
  | {
    kind: "drained";
    /** `complete`: the job is done; `shutdown`: asked to stop; `stalled`: stalled, drained by configuration. */
    reason: "complete" | "shutdown" | "stalled";
    /** Set when the drain missed its deadline and lanes were aborted. */
    forced?: boolean;
    /** Set when something worth an operator's attention happened (stall). */
    warning?: string;
    stats: WorkerStats;
  }
  | { kind: "stalled"; completed: number; quarantined: number; stats: WorkerStats }
  | { kind: "error"; error: unknown; stats: WorkerStats };

/**
 * Options of {@linkcode Worker.shutdown}.
 *
 * @example
 * ```ts
 * import type { Worker } from "@splitlease/splitlease";
 * import type { ShutdownOptions } from "@splitlease/splitlease/host";
 * declare const worker: Worker;
 * const options: ShutdownOptions = { deadlineMs: 10_000, reason: "SIGTERM" };
 * console.log((await worker.shutdown(options)).kind);
 * ```
 */
export interface ShutdownOptions {
  /**
   * Deadline of the graceful drain in ms; past it every lane is aborted and
   * the coordinator closed (releasing what is still held). Default: none
   * (the coordinator's own `drainDeadlineMs` forces stuck revocations).
   */
  deadlineMs?: number;
  /** Why (logged). */
  reason?: string;
}

/**
 * A running worker.
 *
 * @example
 * ```ts
 * import { startWorker, type Coordinator, type SplitSource, type Worker } from "@splitlease/splitlease";
 * declare const coordinator: Coordinator;
 * declare const source: SplitSource;
 * const worker: Worker = startWorker({ coordinator, source });
 * console.log(worker.ready, (await worker.done).kind);
 * ```
 */
export interface Worker {
  /** The coordinator it drives (for `status()`, `stats()`, operator actions); the worker closes it. */
  readonly coordinator: Coordinator;
  /** Resolves with the outcome once the worker stopped (never rejects). */
  readonly done: Promise<WorkerOutcome>;
  /** Whether it is serving: started, not draining, not finished. */
  readonly ready: boolean;
  /** Whether a drain (shutdown, completion, stall) is under way. */
  readonly draining: boolean;
  /** Whether it stopped for good (`done` has resolved or is about to). */
  readonly finished: boolean;
  /** Graceful shutdown: drain, stop lanes cooperatively, release, close. */
  shutdown(options?: ShutdownOptions): Promise<WorkerOutcome>;
  /** Its counters: splits gained, completed, released and failed, lanes lost, commits, revocations, cuts (`/metrics` renders them). */
  stats(): WorkerStats;
  /** Lanes open now. */
  lanes(): LaneInfo[];
}
