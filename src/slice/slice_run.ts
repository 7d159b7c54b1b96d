/**
 * One slice: join with a fresh session, work until the budget minus the
 * margin, drain cooperatively, leave, and report what it did.
 *
 * @module
 */
import type { Clock } from "../coordinator/types.ts";
import { SplitleaseError } from "../errors.ts";
import { systemClock } from "../coordinator/clock.ts";
import { SLICE_DEFAULT_BUDGET_MS } from "../coordinator/config.ts";
import { startHosted, tidyAfterOutcome } from "../host/host_start.ts";
import { jsonLogger } from "../util/logger.ts";
import type { WorkerOutcome } from "../runtime/worker_types.ts";
import { durationIssue } from "../util/timers.ts";
import { checkSliceOptions, type SliceOptions } from "./slice_options.ts";

/**
 * What one slice did.
 *
 * @example
 * ```ts
 * import { runSlice, type SliceResult } from "@splitlease/splitlease/serverless";
 * import { MemoryStore, type SplitSource } from "@splitlease/splitlease";
 * declare const source: SplitSource;
 * const r: SliceResult = await runSlice({ store: new MemoryStore(), source, job: "backfill", budgetMs: 4000, leaseMs: 1000, opTimeoutMs: 250, drainDeadlineMs: 500 });
 * console.log(r.outcome, r.completed);
 * ```
 */
export interface SliceResult {
  /** `complete` (job done), `budget` (time up, drained), `stalled`, `drained` (stalled, not fatal) or `error`. */
  outcome: "complete" | "budget" | "stalled" | "drained" | "error";
  /** Instance id of this invocation. */
  instance: string;
  /** Wall time of the slice in ms. */
  durationMs: number;
  /** Splits this slice started (claims, grants, resumes). */
  gained: number;
  /** Splits this slice finished (their final commit landed). */
  completed: number;
  /** Splits released (handed back for the next invocation). */
  released: number;
  /** Tenancies that failed: `run` threw, it called `fail`, or its descriptor was refused. */
  failed: number;
  /** Lost splits, by reason. */
  lost: Record<string, number>;
  /** Progress writes that landed. */
  commits: number;
  /** Records reported with commits that landed. */
  recordsCommitted: number;
  /** Whether the drain missed its deadline (lanes aborted). */
  forced: boolean;
  /** Error message when `outcome` is `error`. */
  error?: string;
  /** Warning (stall drained by configuration). */
  warning?: string;
}

function nonce(): string {
  const b = new Uint8Array(6);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(36).padStart(2, "0")).join("").slice(0, 10);
}

function resultOf(instance: string, started: number, clock: Clock, outcome: WorkerOutcome): SliceResult {
  const s = outcome.stats;
  const base = {
    instance,
    durationMs: Math.round(clock.now() - started),
    gained: s.gained,
    completed: s.completed,
    released: s.released,
    failed: s.failed,
    lost: s.lost,
    commits: s.commits,
    recordsCommitted: s.recordsCommitted,
    forced: outcome.kind === "drained" && outcome.forced === true,
  };
  if (outcome.kind === "error") {
    return {
      ...base,
      outcome: "error",
      error: outcome.error instanceof Error ? outcome.error.message : String(outcome.error),
    };
  }
  if (outcome.kind === "stalled") return { ...base, outcome: "stalled" };
  if (outcome.reason === "complete") return { ...base, outcome: "complete" };
  if (outcome.reason === "stalled") return { ...base, outcome: "drained", warning: outcome.warning };
  return { ...base, outcome: "budget" };
}

/**
 * Runs one slice: join (fresh session), work until `budgetMs - marginMs`,
 * drain cooperatively, leave. Resolves once everything is released and
 * every timer it started is cleared.
 *
 * @example
 * ```ts
 * import { runSlice } from "@splitlease/splitlease/serverless";
 * import { MemoryStore, type SplitSource } from "@splitlease/splitlease";
 * declare const source: SplitSource;
 * const store = new MemoryStore();
 * const r = await runSlice({ store, source, job: "demo", budgetMs: 20_000, drainDeadlineMs: 2000 });
 * console.log(r.outcome, r.completed);
 * ```
 */
export async function runSlice<D>(
  options: SliceOptions<D>,
  budgetMs: number = options.budgetMs ?? SLICE_DEFAULT_BUDGET_MS,
): Promise<SliceResult> {
  const issue = durationIssue("budgetMs", budgetMs);
  if (issue) throw new SplitleaseError("INVALID_ARGUMENT", `runSlice: ${issue}`);
  const { drainDeadlineMs, marginMs, opTimeoutMs, leaseMs } = checkSliceOptions(options, budgetMs, "runSlice");
  const clock = options.clock ?? systemClock;
  const started = clock.now();
  const instance = `${options.instancePrefix ?? "fn"}-${nonce()}`;
  // Traced by the coordinator and the worker themselves (docs/OPERATIONS.md, "Tracing").
  const log = options.logger ?? jsonLogger({ base: { instance } });
  const hosted = await startHosted(options, {
    host: "a slice",
    instance,
    runtime: options.runtime ?? "serverless",
    logger: log,
    clock,
    join: { opTimeoutMs, leaseMs, drainDeadlineMs },
    worker: { abortGraceMs: options.abortGraceMs ?? 1000, statusIntervalMs: 0 },
  });
  // A source whose fingerprint() throws fails here ("config"), as it failed the join before.
  if (!hosted.ok && hosted.stage !== "join" && hosted.stage !== "config") throw hosted.error;
  if (!hosted.ok) {
    log("error", "join failed", { event: "startupFailed", error: hosted.error });
    return {
      outcome: "error",
      instance,
      durationMs: Math.round(clock.now() - started),
      gained: 0,
      completed: 0,
      released: 0,
      failed: 0,
      lost: {},
      commits: 0,
      recordsCommitted: 0,
      forced: false,
      error: hosted.error instanceof Error ? hosted.error.message : String(hosted.error),
    };
  }
  const { stores, ownsStore, worker } = hosted;
  let timer: unknown = null;
  try {
    const workMs = Math.max(0, budgetMs - marginMs - (clock.now() - started));
    timer = clock.setTimeout(() => {
      timer = null;
      void worker.shutdown({
        reason: "budget",
        deadlineMs: marginMs - 500 > drainDeadlineMs ? marginMs - 500 : marginMs,
      });
    }, workMs);
    const outcome = await worker.done;
    await tidyAfterOutcome(stores, outcome, instance, log, () => clock.wallNow());
    const result = resultOf(instance, started, clock, outcome);
    log("info", "slice finished", { event: "slice", ...result });
    return result;
  } finally {
    if (timer !== null) clock.clearTimeout(timer);
    if (ownsStore) await Promise.all(stores.map((s) => s.close().catch(() => {})));
  }
}
