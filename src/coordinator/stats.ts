/**
 * Counters and histograms of a coordinator, and a store wrapper that times
 * every operation and counts writes by outcome.
 *
 * @module
 */
import { isStoreOutage, StoreUnavailableError } from "../errors.ts";
import type { DeleteResult, KeyFilter, Store, StoreEntry, Watch, WriteResult } from "../store/store.ts";
import type { CoordinatorStats, Histogram } from "./coordinator_stats.ts";
import type { Cause, CausedStore, CausedUpdateInTransaction, StoreOp } from "../tracing/cause.ts";
import type { CoordinatorTrace } from "../tracing/coordinator_trace.ts";
import type { Clock } from "./types.ts";

/**
 * Default latency buckets in seconds (0.5 ms … 10 s).
 *
 * @example
 * ```ts
 * import { LATENCY_BUCKETS, newHistogram } from "@splitlease/splitlease/testing";
 * const h = newHistogram(LATENCY_BUCKETS);
 * ```
 */
export const LATENCY_BUCKETS: readonly number[] = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

/**
 * An empty histogram over `buckets`.
 *
 * @example
 * ```ts
 * import { newHistogram, observe } from "@splitlease/splitlease/testing";
 * const h = newHistogram();
 * observe(h, 0.003);
 * ```
 */
export function newHistogram(buckets: readonly number[] = LATENCY_BUCKETS): Histogram {
  return { buckets: [...buckets], counts: buckets.map(() => 0), sum: 0, count: 0 };
}

/**
 * Adds one observation (seconds) to `h`.
 *
 * @example
 * ```ts
 * import { newHistogram, observe } from "@splitlease/splitlease/testing";
 * const h = newHistogram([1, 2]);
 * observe(h, 1.5);
 * console.log(h.counts); // [0, 1]
 * ```
 */
export function observe(h: Histogram, seconds: number): void {
  h.sum += seconds;
  h.count++;
  for (let i = 0; i < h.buckets.length; i++) {
    if (seconds <= h.buckets[i]) {
      h.counts[i]++;
      return;
    }
  }
}

/** Fresh, zeroed coordinator stats. */
export function newStats(): CoordinatorStats {
  return {
    acquisitions: {},
    losses: {},
    releases: 0,
    revocations: {},
    writes: {},
    claimAttempts: 0,
    recordsReplaced: 0,
    planFailures: 0,
    selfFences: 0,
    storeOpSeconds: {},
    handoverSeconds: newHistogram(),
    cuts: { asked: 0, performed: 0 },
    leaderPasses: 0,
  };
}

/** Adds `n` to `record[key]`. */
export function bump(record: Record<string, number>, key: string, n = 1): void {
  record[key] = (record[key] ?? 0) + n;
}

/**
 * Wraps a store so every operation is timed into `stats.storeOpSeconds`,
 * every write is counted in `stats.writes` by outcome (`ok`, `conflict`,
 * `error`), and, with tracing on, every operation is traced under the
 * {@linkcode Cause} it names (by default the membership). Watches pass
 * through untouched.
 */
export class InstrumentedStore implements CausedStore {
  #inner: Store;
  #stats: CoordinatorStats;
  #clock: Clock;
  #trace: CoordinatorTrace | undefined;
  #refused: Error | undefined;

  /** Present when the wrapped store has it (see `Store.updateInTransaction`). */
  readonly updateInTransaction?: CausedUpdateInTransaction;

  /** Wraps `inner`; `trace` is the coordinator's tracing, when it has one. */
  constructor(inner: Store, stats: CoordinatorStats, clock: Clock, trace?: CoordinatorTrace) {
    this.#inner = inner;
    this.#stats = stats;
    this.#clock = clock;
    this.#trace = trace;
    if (typeof inner.updateInTransaction === "function") {
      this.updateInTransaction = (key, value, revision, work, cause) => {
        if (this.#refused) return Promise.reject(this.#refused);
        return this.#timed("updateInTransaction", true, key, cause, () => inner.updateInTransaction!(key, value, revision, work));
      };
    }
  }

  /** The job the wrapped store is bound to, if any. */
  get job(): string | undefined {
    return this.#inner.job;
  }

  async #timed<T>(op: StoreOp, write: boolean, key: string, cause: Cause | undefined, f: () => Promise<T>): Promise<T> {
    const t0 = this.#clock.now();
    const traced = this.#trace?.enabled ? (cause ?? this.#trace.membership).op(op, key) : undefined;
    try {
      const r = await f();
      if (write) bump(this.#stats.writes, (r as { ok: boolean }).ok ? "ok" : "conflict");
      traced?.end(outcomeOf(op, r));
      return r;
    } catch (e) {
      if (write) bump(this.#stats.writes, e instanceof StoreUnavailableError ? "unavailable" : "error");
      traced?.end(isStoreOutage(e) ? (write ? "maybe-landed" : "unavailable") : "error", e);
      throw e;
    } finally {
      const h = (this.#stats.storeOpSeconds[op] ??= newHistogram());
      observe(h, Math.max(0, this.#clock.now() - t0) / 1000);
    }
  }

  /**
   * Refuses every later write with `error` (reads and watches go on): a
   * coordinator that failed (`DUPLICATE_INSTANCE`) writes nothing more, even
   * from a task that was between a read and its write when it failed.
   */
  refuseWrites(error: Error): void {
    this.#refused = error;
  }

  create(key: string, value: string, cause?: Cause): Promise<WriteResult> {
    if (this.#refused) return Promise.reject(this.#refused);
    return this.#timed("create", true, key, cause, () => this.#inner.create(key, value));
  }
  update(key: string, value: string, revision: number, cause?: Cause): Promise<WriteResult> {
    if (this.#refused) return Promise.reject(this.#refused);
    return this.#timed("update", true, key, cause, () => this.#inner.update(key, value, revision));
  }
  delete(key: string, revision?: number, cause?: Cause): Promise<DeleteResult> {
    if (this.#refused) return Promise.reject(this.#refused);
    return this.#timed("delete", true, key, cause, () => this.#inner.delete(key, revision));
  }
  get(key: string, cause?: Cause): Promise<StoreEntry | undefined> {
    return this.#timed("get", false, key, cause, () => this.#inner.get(key));
  }
  list(filter: KeyFilter, cause?: Cause): Promise<StoreEntry[]> {
    return this.#timed("list", false, filter, cause, () => this.#inner.list(filter));
  }
  watch(filter: KeyFilter): Watch {
    return this.#inner.watch(filter);
  }
  /** Does not close the wrapped store: it belongs to the caller. */
  close(): Promise<void> {
    return Promise.resolve();
  }
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/** How an answered operation went, for its trace: writes `landed` or `conflict`, reads `found`, `absent` or `ok`. */
function outcomeOf(op: StoreOp, r: unknown): string {
  if (op === "get") return r === undefined ? "absent" : "found";
  if (op === "list") return "ok";
  return (r as { ok: boolean }).ok ? "landed" : "conflict";
}
