/**
 * Waiting for a job's outcome from outside the fleet (`splitlease wait`,
 * `waitForOutcome`): the `job` and `plan` records are read every
 * `pollMs` (two single-key reads: the same on every store, and a deleted
 * job is noticed as the records going away), and, for a progress display,
 * one fleet view every `progressMs` at most. Nothing is written.
 *
 * Why reads and not a watch of `plan`: a NATS bucket deleted under a watch
 * answers every request as an outage, and a watch re-creates itself after
 * one, so a deleted job would look like a store that never comes back; two
 * reads a poll cost the store as little and tell the two apart with the
 * caller's `exists` (a job catalog). The poll bounds how late the outcome
 * is seen (250 ms by default).
 *
 * @module
 */
import { SplitleaseError, StoreUnavailableError } from "../errors.ts";
import { type JobOutcome, type PlanRecord, PlanRecordSchema, safeDecodeRecord } from "../records.ts";
import { keys } from "../store/keys.ts";
import type { Store } from "../store/store.ts";
import { type JobResult, jobResultOf } from "./job_result.ts";
import { readFleetOverview } from "./fleet_summary.ts";
import type { JobShards } from "./job_shards.ts";
import { foldOutcomes, foldResults } from "./shard_fold.ts";
import { readJobOverview } from "./shard_reads.ts";
import type { FleetView } from "./types.ts";

/**
 * Options of {@linkcode waitForOutcome}.
 *
 * @example
 * ```ts
 * import type { WaitOptions } from "@splitlease/splitlease/admin";
 * const options: WaitOptions = { job: "backfill", timeoutMs: 3_600_000, onProgress: (v) => console.log(v.counts.completed) };
 * ```
 */
export interface WaitOptions {
  /** The job waited for; checked against the store's own (`Store.job`) when both are known. */
  job?: string;
  /** Aborts the wait: the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Gives up after this long (ms) with `{ kind: "timeout" }`. Default: no limit. */
  timeoutMs?: number;
  /**
   * How long the store may fail every read before the wait ends with
   * `{ kind: "unreachable" }` (ms). Default 60 000: a server restart or a
   * stream-leader election is waited out.
   */
  unreachableMs?: number;
  /** How often the `plan` and `job` records are read (ms). Default 250. */
  pollMs?: number;
  /** Called with a fresh fleet view (counts, rate, ETA, records) every `progressMs` at most. */
  onProgress?: (view: FleetView) => void;
  /**
   * How often `onProgress` gets a view (ms). Default 1000; a view of a job
   * of at most 10 000 splits lists every split record, so the next read also
   * waits at least four times as long as the last one took; a larger job's
   * view is its summary (the leader's beat: `basis: "beat"`), a few reads.
   */
  progressMs?: number;
  /**
   * Whether the job still exists, asked when the store fails a read: a
   * deleted NATS bucket answers every request as an outage, and this (a
   * job catalog, as the CLI passes) tells a deleted job from an outage.
   * Failing itself counts as "it exists".
   */
  exists?: () => Promise<boolean>;
}

/**
 * How {@linkcode waitForOutcome} ended: with the job's outcome; with the
 * job deleted while it waited (its `job` and `plan` records gone); with
 * the store unreachable for `unreachableMs`; or at `timeoutMs`. `result` is
 * the job's standing as last read (`null` when nothing was read).
 *
 * @example
 * ```ts
 * import type { WaitResult } from "@splitlease/splitlease/admin";
 * const done = (w: WaitResult) => w.kind === "outcome" && w.outcome.kind === "allComplete" && !w.outcome.cancelled;
 * ```
 */
export type WaitResult =
  | {
    kind: "outcome";
    outcome: JobOutcome;
    result: JobResult;
    /** Of a sharded job: each shard's outcome (a stall names its stalled shards by theirs). */
    shards?: { index: number; job: string; outcome: JobOutcome }[];
  }
  | { kind: "deleted"; result: JobResult | null }
  | { kind: "unreachable"; error: string; result: JobResult | null }
  | { kind: "timeout"; result: JobResult | null };

/**
 * Waits until the job has an outcome (`allComplete`, `stalled` or
 * `planFailed`) and returns its outcome record. A job whose records do not
 * exist yet (no worker joined) is waited for; a job whose records were
 * seen and then vanish was deleted. A paused job is waited through. Store
 * outages are retried for `unreachableMs`. Given a sharded job's shards
 * (`openJobShards`), it waits for the job's outcome: once every shard has
 * one (or one's planning failed), summed, each shard's in `shards`.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { waitForOutcome } from "@splitlease/splitlease/admin";
 * const w = await waitForOutcome(new MemoryStore(), { timeoutMs: 100 });
 * console.log(w.kind); // "timeout": no job in this store
 * ```
 */
export async function waitForOutcome(store: Store | JobShards, options: WaitOptions = {}): Promise<WaitResult> {
  if ("stores" in store) {
    if (options.job !== undefined && options.job !== store.job) {
      throw new SplitleaseError("INVALID_CONFIG", `waitForOutcome: job "${options.job}" but the shards are job "${store.job}"`);
    }
    if (store.stores.length > 1) return await waitForShards(store, options);
    store = store.stores[0];
  }
  const { signal, onProgress, exists } = options;
  if (options.job !== undefined && store.job !== undefined && options.job !== store.job) {
    throw new SplitleaseError("INVALID_CONFIG", `waitForOutcome: job "${options.job}" but the store is bound to job "${store.job}"`);
  }
  const pollMs = positive("pollMs", options.pollMs ?? 250);
  const progressMs = positive("progressMs", options.progressMs ?? 1000);
  const unreachableMs = positive("unreachableMs", options.unreachableMs ?? 60_000);
  const timeoutMs = options.timeoutMs === undefined ? Infinity : positive("timeoutMs", options.timeoutMs, true);
  const start = Date.now();
  let lastOk = start;
  let lastError = "";
  let seen = false;
  let result: JobResult | null = null;
  let nextView = start;
  for (;;) {
    signal?.throwIfAborted();
    try {
      const [job, planEntry] = await Promise.all([store.get(keys.job), store.get(keys.plan)]);
      lastOk = Date.now();
      if (job || planEntry) seen = true;
      else if (seen) return { kind: "deleted", result };
      // An unreadable plan record is the leader's to replace: wait on as if it had no outcome yet.
      const decoded = planEntry ? safeDecodeRecord(planEntry.key, planEntry.value, PlanRecordSchema) : undefined;
      const plan: PlanRecord | undefined = decoded?.ok ? decoded.value : undefined;
      result = planEntry && !plan && result ? result : jobResultOf(plan);
      if (plan?.outcome) return { kind: "outcome", outcome: plan.outcome, result };
      if (onProgress && Date.now() >= nextView) {
        const t0 = Date.now();
        // A large job's progress is its summary (the leader's beat): no split record read.
        const view = await readFleetOverview(store);
        signal?.throwIfAborted();
        onProgress(view);
        nextView = Date.now() + Math.max(progressMs, 4 * (Date.now() - t0));
      }
    } catch (e) {
      if (!(e instanceof StoreUnavailableError)) throw e;
      lastError = e.message;
      if (exists && !(await exists().catch(() => true))) return { kind: "deleted", result };
      if (Date.now() - lastOk >= unreachableMs) return { kind: "unreachable", error: lastError, result };
    }
    const left = start + timeoutMs - Date.now();
    if (left <= 0) return { kind: "timeout", result };
    await sleep(Math.min(pollMs, left), signal);
  }
}

/**
 * {@linkcode waitForOutcome} of a sharded job: every shard's `job` and
 * `plan` records read each poll; the job's outcome once every shard has
 * one (or one's planning failed: `foldOutcomes`), its progress the view
 * of every shard (`readJobOverview`). A shard whose records were seen and
 * then vanish means the job was deleted.
 */
async function waitForShards(shards: JobShards, options: WaitOptions): Promise<WaitResult> {
  const { signal, onProgress, exists } = options;
  const pollMs = positive("pollMs", options.pollMs ?? 250);
  const progressMs = positive("progressMs", options.progressMs ?? 1000);
  const unreachableMs = positive("unreachableMs", options.unreachableMs ?? 60_000);
  const timeoutMs = options.timeoutMs === undefined ? Infinity : positive("timeoutMs", options.timeoutMs, true);
  const start = Date.now();
  let lastOk = start;
  let lastError = "";
  const seen = shards.stores.map(() => false);
  const results: (JobResult | undefined)[] = shards.stores.map(() => undefined);
  let result: JobResult | null = null;
  let nextView = start;
  for (;;) {
    signal?.throwIfAborted();
    try {
      const read = await Promise.all(shards.stores.map((s) => Promise.all([s.get(keys.job), s.get(keys.plan)])));
      lastOk = Date.now();
      const outcomes: (JobOutcome | undefined)[] = [];
      for (const [i, [job, planEntry]] of read.entries()) {
        if (job || planEntry) seen[i] = true;
        else if (seen[i]) return { kind: "deleted", result };
        const decoded = planEntry ? safeDecodeRecord(planEntry.key, planEntry.value, PlanRecordSchema) : undefined;
        const plan: PlanRecord | undefined = decoded?.ok ? decoded.value : undefined;
        // An unreadable plan record is its leader's to replace: that shard stands where it stood.
        if (!(planEntry && !plan && results[i])) results[i] = jobResultOf(plan);
        outcomes.push(plan?.outcome);
      }
      result = foldResults(results as JobResult[]);
      const outcome = foldOutcomes(outcomes);
      if (outcome) {
        const each = outcomes.flatMap((o, index) => (o ? [{ index, job: shards.jobs[index], outcome: o }] : []));
        return { kind: "outcome", outcome, result, shards: each };
      }
      if (onProgress && Date.now() >= nextView) {
        const t0 = Date.now();
        const view = await readJobOverview(shards);
        signal?.throwIfAborted();
        onProgress(view);
        nextView = Date.now() + Math.max(progressMs, 4 * (Date.now() - t0));
      }
    } catch (e) {
      if (!(e instanceof StoreUnavailableError)) throw e;
      lastError = e.message;
      if (exists && !(await exists().catch(() => true))) return { kind: "deleted", result };
      if (Date.now() - lastOk >= unreachableMs) return { kind: "unreachable", error: lastError, result };
    }
    const left = start + timeoutMs - Date.now();
    if (left <= 0) return { kind: "timeout", result };
    await sleep(Math.min(pollMs, left), signal);
  }
}

/** A positive finite number of ms (`zero`: 0 allowed), else `INVALID_ARGUMENT` naming the option. */
function positive(name: string, v: number, zero = false): number {
  if (typeof v !== "number" || !Number.isFinite(v) || v < 0 || (!zero && v === 0)) {
    throw new SplitleaseError("INVALID_ARGUMENT", `waitForOutcome: ${name} must be a number of ms above 0, got ${v}`);
  }
  return v;
}

/** Sleeps `ms`, rejecting with the signal's reason when it aborts. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
