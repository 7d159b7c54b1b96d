/**
 * One tenancy's lane: its state, the handle a source sees, and every write
 * the handle makes (commit cadence, flush, complete, fail), serialized per
 * lane so progress is written in order.
 *
 * @module
 */
import type { Clock, CoordinationEvent, Coordinator, FailOptions, LostReason, SplitSpec } from "../coordinator/types.ts";
import type { Logger } from "../util/logger.ts";
import { FencedError, isPermanentFailure, SplitleaseError } from "../errors.ts";
import { estimateProblem, type SplitProgress } from "../records.ts";
import type { TransactionWork } from "../store/store.ts";
import type { Lane, LaneCommitOptions } from "./source.ts";
import type { WorkerStats } from "./worker_types.ts";
import { stackOf } from "../util/stack.ts";
import type { CoordinatorTrace } from "../tracing/coordinator_trace.ts";
import type { TenancyTrace } from "../tracing/tenancy_trace.ts";
import { close, endedAs, isLost, type LaneState, QUEUED, reopen, writable } from "./lane_state.ts";

/** One tenancy's lane as its worker holds it. */
export interface WorkerLane<D> {
  id: string;
  splitId: string;
  epoch: number;
  spec: SplitSpec;
  descriptor: D;
  /** Where it stands: moved only by the transitions of lane_state.ts. */
  state: LaneState;
  abort: AbortController;
  revoke: AbortController;
  durable: SplitProgress | undefined;
  accepted: SplitProgress | undefined;
  pending: SplitProgress | undefined;
  pendingRecords: number;
  writeChain: Promise<void>;
  flushTimer: unknown;
  lastWriteAt: number;
  /** Armed when it is lost while running: past it, the lane is abandoned. */
  graceTimer: unknown;
  settled: Promise<void>;
  settle: () => void;
  handle: Lane<D>;
  /** Its tenancy's span (tracing on): `run()` runs inside it; released when the lane settles. */
  trace: TenancyTrace | undefined;
}

/** What lane writes need from their worker. */
export interface LaneDeps {
  coordinator: Coordinator;
  clock: Clock;
  log: Logger;
  stats: WorkerStats;
  commitIntervalMs: number;
  /** The coordinator's tracing, when it has one: each lane attaches to its tenancy's span. */
  trace: CoordinatorTrace | undefined;
  /** The lane was fenced: end it as lost. */
  markLost(lane: WorkerLane<unknown>, reason: LostReason): void;
  /** The split is still held but its lane ended without a release. */
  orphan(splitId: string): void;
}

let laneCounter = 0;
/**
 * 32 random bits drawn once per process: with the counter they make lane
 * ids unique across processes. Drawn per lane they cost 2% of a tiny-task
 * worker's CPU (crypto.getRandomValues per lane, profiled on Node 24).
 */
let laneNonce: string | undefined;

function processNonce(): string {
  if (laneNonce === undefined) {
    const b = new Uint8Array(4);
    crypto.getRandomValues(b);
    laneNonce = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  }
  return laneNonce;
}

export function isAbortError(e: unknown): boolean {
  return e instanceof Error && (e.name === "AbortError" || e.name === "TimeoutError");
}

export function errorMessage(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}

function regresses(prev: SplitProgress | undefined, next: SplitProgress): boolean {
  const a = prev?.watermark;
  const b = next.watermark;
  if (a === undefined || b === undefined) return false;
  if (typeof a !== typeof b) return false;
  return b < a;
}

/** Creates lanes and performs their writes. */
export class LaneOps<D> {
  readonly #d: LaneDeps;

  /** Creates the lane operations of a worker. */
  constructor(deps: LaneDeps) {
    this.#d = deps;
  }

  /** A new lane (queued) for a `gained` event. */
  create(ev: Extract<CoordinationEvent, { type: "gained" }>, descriptor: D): WorkerLane<D> {
    let settle!: () => void;
    const settled = new Promise<void>((r) => (settle = r));
    const trace = this.#d.trace?.attach(ev.split.id, ev.epoch);
    const lane: WorkerLane<D> = {
      id: `${ev.split.id}@${ev.epoch}-${(++laneCounter).toString(36)}${processNonce()}`,
      splitId: ev.split.id,
      epoch: ev.epoch,
      spec: ev.split,
      descriptor,
      state: QUEUED,
      abort: new AbortController(),
      revoke: new AbortController(),
      durable: ev.progress,
      accepted: ev.progress,
      pending: undefined,
      pendingRecords: 0,
      writeChain: Promise.resolve(),
      flushTimer: null,
      lastWriteAt: -Infinity,
      graceTimer: null,
      settled,
      // Settled once (ended or abandoned): its hold on the tenancy's span goes with it.
      settle: trace ? () => (settle(), lane.trace && (lane.trace = undefined, trace.detach())) : settle,
      handle: undefined as unknown as Lane<D>,
      trace,
    };
    // deno-lint-ignore no-this-alias
    const ops = this;
    lane.handle = {
      id: lane.id,
      splitId: lane.splitId,
      spec: lane.spec,
      get descriptor() {
        return lane.descriptor; // what it keeps once its remaining work was cut
      },
      epoch: lane.epoch,
      // A split cut from a running one is fenced by its lineage's root (see SplitSpec.root).
      fencingToken: Object.freeze({ splitId: lane.spec.root ?? lane.splitId, epoch: lane.epoch }),
      get progress() {
        return lane.accepted;
      },
      signal: lane.abort.signal,
      revokeSignal: lane.revoke.signal,
      get span() {
        return lane.trace?.span;
      },
      get traceparent() {
        return lane.trace?.traceparent;
      },
      commit: (progress, opts) => ops.#commit(lane, progress, opts),
      flush: () => ops.flush(lane),
      complete: (progress, opts) => ops.#complete(lane, progress, opts),
      fail: (reason, options) => ops.#fail(lane, reason, options?.permanent === true || isPermanentFailure(reason)),
    };
    return lane;
  }

  #checkActive(lane: WorkerLane<D>): void {
    if (!writable(lane.state)) {
      throw new FencedError(
        lane.splitId,
        lane.epoch,
        -1,
        `lane ${lane.id} is no longer active (${endedAs(lane.state)}); nothing was written`,
      );
    }
  }

  #checkProgress(lane: WorkerLane<D>, progress: SplitProgress): void {
    if (!progress || typeof progress !== "object") {
      throw new SplitleaseError("INVALID_ARGUMENT", `progress must be an object (split ${lane.splitId})`);
    }
    const bad = progress.estimate === undefined ? null : estimateProblem(progress.estimate);
    if (bad !== null) {
      throw new SplitleaseError("INVALID_ARGUMENT", `progress.estimate of split ${lane.splitId}: ${bad} (${JSON.stringify(progress.estimate)})`);
    }
    if (regresses(lane.accepted, progress)) {
      throw new SplitleaseError(
        "INVALID_ARGUMENT",
        `watermark regressed on split ${lane.splitId}: ${String(progress.watermark)} < ${
          String(lane.accepted?.watermark)
        }`,
      );
    }
  }

  #commit(lane: WorkerLane<D>, progress: SplitProgress, opts?: LaneCommitOptions): Promise<void> {
    try {
      this.#checkActive(lane);
      this.#checkProgress(lane, progress);
      checkRecords(lane.splitId, opts);
    } catch (e) {
      return Promise.reject(e);
    }
    if (opts?.transaction) return this.#commitWithin(lane, progress, opts.records ?? 0, opts.transaction);
    lane.accepted = progress;
    lane.pending = progress;
    lane.pendingRecords += opts?.records ?? 0;
    if (this.#d.commitIntervalMs === 0) return this.flush(lane);
    const due = lane.lastWriteAt + this.#d.commitIntervalMs - this.#d.clock.now();
    if (due <= 0) {
      lane.lastWriteAt = this.#d.clock.now();
      // Errors surface through the lane's signal (fenced) and the log (outage).
      this.flush(lane).catch(() => {});
    } else if (lane.flushTimer === null) {
      lane.flushTimer = this.#d.clock.setTimeout(() => {
        lane.flushTimer = null;
        this.flush(lane).catch(() => {});
      }, due);
    }
    return Promise.resolve();
  }

  /** Writes the lane's pending progress (serialized per lane). */
  flush(lane: WorkerLane<D>): Promise<void> {
    const run = lane.writeChain.catch(() => {}).then(async () => {
      const progress = lane.pending;
      if (progress === undefined) return;
      if (isLost(lane.state)) {
        throw new FencedError(lane.splitId, lane.epoch, -1, `lane ${lane.id} was lost; nothing was written`);
      }
      const records = lane.pendingRecords;
      lane.pending = undefined;
      lane.pendingRecords = 0;
      lane.lastWriteAt = this.#d.clock.now();
      try {
        await this.#d.coordinator.commit(lane.splitId, lane.epoch, progress, records > 0 ? { records } : undefined);
      } catch (e) {
        if (!(e instanceof FencedError) && lane.pending === undefined) {
          // Keep it for the next write (outage): progress may replay, never regress.
          lane.pending = progress;
          lane.pendingRecords += records;
        }
        this.onWriteError(lane, e, "commit");
        throw e;
      }
      lane.durable = progress;
      this.#d.stats.commits++;
      this.#d.stats.recordsCommitted += records;
    });
    lane.writeChain = run;
    return run;
  }

  /**
   * A commit whose progress lands in one transaction with the source's
   * statements: written now (no cadence), after the lane's earlier writes.
   * It supersedes accepted progress not yet written, which is kept for the
   * next write if this one does not land (the source's statements then
   * did not either, or the split's record says they did).
   */
  #commitWithin(lane: WorkerLane<D>, progress: SplitProgress, records: number, work: TransactionWork): Promise<void> {
    if (lane.flushTimer !== null) this.#d.clock.clearTimeout(lane.flushTimer);
    lane.flushTimer = null;
    const run = lane.writeChain.catch(() => {}).then(async () => {
      if (isLost(lane.state)) throw new FencedError(lane.splitId, lane.epoch, -1, `lane ${lane.id} was lost; nothing was written`);
      const earlier = lane.pending;
      const earlierRecords = lane.pendingRecords;
      lane.pending = undefined;
      lane.pendingRecords = 0;
      lane.lastWriteAt = this.#d.clock.now();
      try {
        const covered = records + earlierRecords;
        await this.#d.coordinator.commit(lane.splitId, lane.epoch, progress, { transaction: work, ...(covered > 0 ? { records: covered } : {}) });
      } catch (e) {
        if (!(e instanceof FencedError) && earlier !== undefined && lane.pending === undefined) {
          lane.pending = earlier;
          lane.pendingRecords += earlierRecords;
        }
        this.onWriteError(lane, e, "commit");
        throw e;
      }
      if (!regresses(progress, lane.accepted ?? progress)) lane.accepted = progress;
      lane.durable = progress;
      this.#d.stats.commits++;
      this.#d.stats.recordsCommitted += records + earlierRecords;
    });
    lane.writeChain = run;
    return run;
  }

  /** Flushes, reporting (not throwing) a failure. */
  async flushQuietly(lane: WorkerLane<D>): Promise<void> {
    if (lane.flushTimer !== null) this.#d.clock.clearTimeout(lane.flushTimer);
    lane.flushTimer = null;
    try {
      await this.flush(lane);
    } catch {
      // reported by #onWriteError
    }
  }

  /** Logs a failed write; a fenced one marks the lane lost. */
  onWriteError(lane: WorkerLane<D>, e: unknown, op: string): void {
    if (e instanceof FencedError) {
      this.#d.log("warn", `${op} fenced: the split moved on`, {
        event: "fenced",
        splitId: lane.splitId,
        epoch: lane.epoch,
        currentEpoch: e.currentEpoch,
      });
      this.#d.markLost(lane, "fenced");
    } else {
      this.#d.log("error", `${op} failed`, { splitId: lane.splitId, epoch: lane.epoch, error: e });
    }
  }

  async #complete(lane: WorkerLane<D>, progress?: SplitProgress, opts?: LaneCommitOptions): Promise<void> {
    this.#checkActive(lane);
    const final = progress ?? lane.accepted ?? {};
    if (progress) this.#checkProgress(lane, progress);
    checkRecords(lane.splitId, opts);
    if (lane.flushTimer !== null) this.#d.clock.clearTimeout(lane.flushTimer);
    lane.flushTimer = null;
    close(lane, "completed");
    const records = lane.pendingRecords + (opts?.records ?? 0);
    lane.pending = undefined;
    lane.pendingRecords = 0;
    const run = lane.writeChain.catch(() => {}).then(async () => {
      try {
        await this.#d.coordinator.commit(lane.splitId, lane.epoch, final, {
          final: true,
          ...(records > 0 ? { records } : {}),
          ...(opts?.transaction ? { transaction: opts.transaction } : {}),
        });
      } catch (e) {
        if (!(e instanceof FencedError)) reopen(lane); // outage: the source may retry
        this.onWriteError(lane, e, "complete");
        throw e;
      }
      lane.accepted = final;
      lane.durable = final;
      this.#d.stats.commits++;
      this.#d.stats.completed++;
      this.#d.stats.recordsCommitted += records;
      this.#d.log("info", "split completed", {
        event: "completed",
        splitId: lane.splitId,
        epoch: lane.epoch,
        progress: final,
      });
    });
    lane.writeChain = run;
    await run;
  }

  /** A poison report; `permanent`: quarantined at once (a `PermanentFailure`, or `{ permanent: true }`). */
  async #fail(lane: WorkerLane<D>, failure: string | Error, permanent: boolean): Promise<void> {
    this.#checkActive(lane);
    const reason = typeof failure === "string" ? failure : errorMessage(failure);
    const stack = stackOf(failure);
    if (typeof failure !== "string") lane.trace?.exception(failure);
    await this.flushQuietly(lane);
    this.#checkActive(lane);
    close(lane, "failed");
    this.#d.stats.failed++;
    this.#d.log("warn", "Split failed", {
      event: "laneFailed",
      splitId: lane.splitId,
      epoch: lane.epoch,
      reason,
      ...(permanent ? { permanent } : {}),
      ...(typeof failure === "string" ? {} : { error: failure }),
    });
    try {
      await this.#d.coordinator.fail(lane.splitId, lane.epoch, reason, failOptions(stack, permanent));
    } catch (e) {
      this.onWriteError(lane, e, "fail");
      if (!(e instanceof FencedError)) this.#d.orphan(lane.splitId);
      throw e;
    }
  }
}

/** The options of a `Coordinator.fail`: the stack when there is one, `permanent` when set (nothing otherwise: older coordinators take `undefined`). */
export function failOptions(stack: string | undefined, permanent: boolean): FailOptions | undefined {
  if (stack === undefined && !permanent) return undefined;
  return { ...(stack !== undefined ? { stack } : {}), ...(permanent ? { permanent } : {}) };
}

/** Refuses a records count that is not an integer >= 0 (it is summed into the split record). */
function checkRecords(splitId: string, opts: LaneCommitOptions | undefined): void {
  const n = opts?.records;
  if (n !== undefined && !(Number.isInteger(n) && n >= 0)) {
    throw new SplitleaseError("INVALID_ARGUMENT", `records of a commit of split ${splitId} must be an integer >= 0, got ${JSON.stringify(n)}`);
  }
}
