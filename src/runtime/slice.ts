/**
 * Request-driven mode: one invocation = one bounded slice of work. Each
 * slice joins with a fresh session, works until its time budget minus a
 * margin, drains cooperatively (tails committed, everything released),
 * leaves, and reports what it did. Nothing keeps running after it returns.
 *
 * @module
 */
import { type JoinOptions, SplitCoordinator } from "../coordinator/coordinator.ts";
import type { CoordinatorTunables } from "../coordinator/config.ts";
import type { Clock, Coordinator, Logger } from "../coordinator/types.ts";
import { SplitleaseError } from "../errors.ts";
import { timingSafeEqual } from "../http/app.ts";
import type { Store } from "../store/store.ts";
import { systemClock } from "../coordinator/clock.ts";
import { jsonLogger } from "./logger.ts";
import type { SplitSource } from "./source.ts";
import { startWorker, type WorkerOutcome } from "./worker.ts";
import { parseCoordinatorConfig, pickTunables, TUNABLE_KEYS } from "../coordinator/config.ts";
import { keysOf, rejectUnknownKeys } from "../util/options.ts";
import { durationIssue } from "../util/timers.ts";

/**
 * Options of {@linkcode runSlice} and {@linkcode createSliceHandler}.
 *
 * @example
 * ```ts
 * import { createSliceHandler, type SliceOptions } from "@splitlease/splitlease/serverless";
 * import { MemoryStore, type SplitSource } from "@splitlease/splitlease";
 * declare const source: SplitSource;
 * const options: SliceOptions<unknown> = { store: new MemoryStore(), source, job: "backfill", budgetMs: 10_000 };
 * const handler = createSliceHandler(options);
 * ```
 */
export interface SliceOptions<D = unknown> extends CoordinatorTunables {
  /** The coordination store (kept open). */
  store?: Store;
  /** Creates a store per invocation (closed after it). */
  storeFactory?: () => Store | Promise<Store>;
  /** The user's source. */
  source: SplitSource<D>;
  /** Job name. */
  job: string;
  /** Instance id prefix; each invocation is `<prefix>-<random>` (default `fn`). */
  instancePrefix?: string;
  /**
   * Total time budget of an invocation in ms (default 30000). Must be at
   * least `marginMs + opTimeoutMs`: the drain margin plus one store
   * operation's time to join and claim (16000 with the defaults).
   */
  budgetMs?: number;
  /**
   * Time reserved at the end of the budget for the drain, release and leave
   * (default `drainDeadlineMs + 1000`). Must exceed `drainDeadlineMs`, which
   * must be at least `opTimeoutMs`.
   */
  marginMs?: number;
  /** Stalled job fatal (outcome `stalled`, default) or drained with a warning. */
  stalledIsFatal?: boolean;
  /** How long a lane may ignore its abort (default 1000 ms in slices). */
  abortGraceMs?: number;
  /** Commit cadence per lane (default 0). */
  commitIntervalMs?: number;
  /** Bearer token required by the fetch handler. */
  token?: string;
  /** Structured logger (default: JSON lines). */
  logger?: Logger;
  /** Clock (default: system clock). */
  clock?: Clock;
  /** Joins the coordinator (default `SplitCoordinator.join`). */
  join?: (options: JoinOptions) => Promise<Coordinator>;
  /** Runtime name for the member record (default `serverless`). */
  runtime?: string;
}

/**
 * What one slice did.
 *
 * @example
 * ```ts
 * import { runSlice, type SliceResult } from "@splitlease/splitlease/serverless";
 * import { MemoryStore, type SplitSource } from "@splitlease/splitlease";
 * declare const source: SplitSource;
 * const r: SliceResult = await runSlice({ store: new MemoryStore(), source, job: "backfill", budgetMs: 2000 });
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
  /** Splits gained. */
  gained: number;
  /** Splits completed. */
  completed: number;
  /** Splits released (handed back for the next invocation). */
  released: number;
  /** Failed tenancies. */
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

/** Every option a slice takes (the tunables included): anything else is a typo. */
const SLICE_KEYS: readonly string[] = [
  ...TUNABLE_KEYS,
  ...keysOf<Omit<SliceOptions, keyof CoordinatorTunables>>({
    store: true,
    storeFactory: true,
    source: true,
    job: true,
    instancePrefix: true,
    budgetMs: true,
    marginMs: true,
    stalledIsFatal: true,
    abortGraceMs: true,
    commitIntervalMs: true,
    token: true,
    logger: true,
    clock: true,
    join: true,
    runtime: true,
  }),
];

/** Refuses unknown keys and out-of-range durations before anything connects. */
function checkSliceInput(options: SliceOptions<unknown>, where: string): void {
  if (!options || typeof options !== "object") throw new SplitleaseError("INVALID_CONFIG", `${where} needs an options object`);
  rejectUnknownKeys(options, SLICE_KEYS, where);
  for (const key of ["budgetMs", "marginMs", "abortGraceMs", "commitIntervalMs"] as const) {
    if (options[key] === undefined) continue;
    const issue = durationIssue(key, options[key]);
    if (issue) throw new SplitleaseError("INVALID_CONFIG", `${where}: ${issue}`);
  }
}

/** A slice's timing after defaults (see {@linkcode checkSliceOptions}). */
export interface SliceTiming {
  /** The invocation's whole budget. */
  budgetMs: number;
  /** The end of the budget kept for the drain, release and leave. */
  marginMs: number;
  /** Deadline of the cooperative drain. */
  drainDeadlineMs: number;
  /** Timeout of one store operation. */
  opTimeoutMs: number;
  /** The smallest budget these options allow: `marginMs + opTimeoutMs`. */
  minBudgetMs: number;
}

const PREFIX = /^[A-Za-z0-9_-]{1,100}$/;

/**
 * Validates slice options with `budgetMs` (default `options.budgetMs`, else
 * 30000) and returns the timing they imply. Checks every rule the slice and
 * its coordinator would otherwise break at run time — the coordinator
 * tunables (`leaseMs >= 2 × opTimeoutMs`, `drainDeadlineMs >= opTimeoutMs`,
 * ...), `marginMs > drainDeadlineMs`, `budgetMs >= marginMs + opTimeoutMs`,
 * the job and instance prefix, a store — and throws one `INVALID_CONFIG`
 * error naming each broken rule. `createSliceHandler` and `runSlice` call it
 * before doing anything, so a handler that cannot work fails when it is
 * created, not with an error on every request.
 *
 * @example
 * ```ts
 * import { checkSliceOptions } from "./slice.ts";
 * import { MemoryStore, type SplitSource } from "@splitlease/splitlease";
 * declare const source: SplitSource;
 * const t = checkSliceOptions({ store: new MemoryStore(), source, job: "j", budgetMs: 8000, opTimeoutMs: 1000, drainDeadlineMs: 3000 });
 * console.log(t.marginMs, t.minBudgetMs); // 4000 5000
 * ```
 */
export function checkSliceOptions<D>(
  options: SliceOptions<D>,
  budgetMs: number = options.budgetMs ?? 30_000,
  where = "slice",
): SliceTiming {
  checkSliceInput(options as SliceOptions<unknown>, where);
  const rules: string[] = [];
  const opTimeoutMs = options.opTimeoutMs ?? 5000;
  const drainDeadlineMs = options.drainDeadlineMs ?? 10_000;
  const marginMs = options.marginMs ?? drainDeadlineMs + 1000;
  const minBudgetMs = marginMs + opTimeoutMs;
  if (!Number.isInteger(budgetMs) || budgetMs <= 0) {
    rules.push(`budgetMs must be a positive integer (ms), got ${budgetMs}`);
  } else if (budgetMs < minBudgetMs) {
    rules.push(
      `budgetMs must be at least marginMs + opTimeoutMs (${marginMs} + ${opTimeoutMs} = ${minBudgetMs}), got ${budgetMs}: ` +
        "the end of the budget is kept for the drain and the rest must fit at least one store operation to join; " +
        "lower drainDeadlineMs (and opTimeoutMs) or raise the budget",
    );
  }
  if (!Number.isInteger(marginMs) || marginMs <= drainDeadlineMs) {
    rules.push(
      `marginMs must exceed drainDeadlineMs (${drainDeadlineMs}) to leave time to release and leave after the drain, got ${marginMs}`,
    );
  }
  const prefix = options.instancePrefix ?? "fn";
  if (!PREFIX.test(prefix)) {
    rules.push(`instancePrefix must be 1-100 characters of [A-Za-z0-9_-], got ${JSON.stringify(prefix)}`);
  }
  if (!options.store && !options.storeFactory) rules.push("a slice needs a store or a storeFactory");
  try {
    parseCoordinatorConfig({
      ...pickTunables(options),
      drainDeadlineMs,
      job: options.job,
      instance: `${PREFIX.test(prefix) ? prefix : "fn"}-0000000000`,
      fingerprint: "checked-at-join",
    });
  } catch (e) {
    if (!(e instanceof SplitleaseError)) throw e;
    rules.push(e.message.replace(/^Invalid coordinator config: /, ""));
  }
  if (rules.length) throw new SplitleaseError("INVALID_CONFIG", `Invalid slice config: ${rules.join("; ")}`);
  return { budgetMs, marginMs, drainDeadlineMs, opTimeoutMs, minBudgetMs };
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
 * const r = await runSlice({ store, source, job: "demo", budgetMs: 10_000, drainDeadlineMs: 2000 });
 * console.log(r.outcome, r.completed);
 * ```
 */
export async function runSlice<D>(
  options: SliceOptions<D>,
  budgetMs: number = options.budgetMs ?? 30_000,
): Promise<SliceResult> {
  const issue = durationIssue("budgetMs", budgetMs);
  if (issue) throw new SplitleaseError("INVALID_ARGUMENT", `runSlice: ${issue}`);
  const { drainDeadlineMs, marginMs } = checkSliceOptions(options, budgetMs, "runSlice");
  const clock = options.clock ?? systemClock;
  const started = clock.now();
  const instance = `${options.instancePrefix ?? "fn"}-${nonce()}`;
  const log = options.logger ?? jsonLogger({ base: { instance } });
  const ownsStore = !options.store;
  const store = options.store ?? (options.storeFactory ? await options.storeFactory() : undefined);
  if (!store) throw new SplitleaseError("INVALID_CONFIG", "a slice needs a store or a storeFactory");
  let timer: unknown = null;
  try {
    const tunables = pickTunables(options);
    const join = options.join ?? ((o: JoinOptions) => SplitCoordinator.join(o));
    let coordinator: Coordinator;
    try {
      coordinator = await join({
        ...tunables,
        drainDeadlineMs,
        store,
        job: options.job,
        instance,
        fingerprint: options.source.fingerprint(),
        planner: (ctx) => options.source.plan(ctx),
        clock,
        logger: log,
        runtime: options.runtime ?? "serverless",
      });
    } catch (e) {
      log("error", "join failed", { event: "startupFailed", error: e });
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
        error: e instanceof Error ? e.message : String(e),
      };
    }
    const worker = startWorker({
      coordinator,
      source: options.source,
      maxInFlight: options.maxInFlight,
      logger: log,
      clock,
      stalledIsFatal: options.stalledIsFatal,
      abortGraceMs: options.abortGraceMs ?? 1000,
      commitIntervalMs: options.commitIntervalMs,
      statusIntervalMs: 0,
    });
    const workMs = Math.max(0, budgetMs - marginMs - (clock.now() - started));
    timer = clock.setTimeout(() => {
      timer = null;
      void worker.shutdown({
        reason: "budget",
        deadlineMs: marginMs - 500 > drainDeadlineMs ? marginMs - 500 : marginMs,
      });
    }, workMs);
    const outcome = await worker.done;
    const result = resultOf(instance, started, clock, outcome);
    log("info", "slice finished", { event: "slice", ...result });
    return result;
  } finally {
    if (timer !== null) clock.clearTimeout(timer);
    if (ownsStore) await store.close().catch(() => {});
  }
}

/**
 * A fetch handler for request-driven platforms (functions, edge workers,
 * cron-triggered containers): every `GET` or `POST` runs one
 * {@linkcode runSlice} and answers its {@linkcode SliceResult} as JSON (200;
 * 500 on `error`; 409 on `stalled`). The budget may be lowered per request
 * with the `x-splitlease-budget-ms` header or `?budgetMs=` (400 below the
 * smallest budget the options allow).
 *
 * @throws {SplitleaseError} `INVALID_CONFIG` at creation, naming every broken
 * rule, when the options cannot work (a budget too small for
 * `marginMs + opTimeoutMs`, `drainDeadlineMs` below `opTimeoutMs`, ...).
 *
 * @example
 * ```ts
 * import { createSliceHandler } from "@splitlease/splitlease/serverless";
 * import { MemoryStore, type SplitSource } from "@splitlease/splitlease";
 * declare const source: SplitSource;
 * const handler = createSliceHandler({ store: new MemoryStore(), source, job: "demo", budgetMs: 25_000 });
 * // serve it with the platform's HTTP server, or: export default { fetch: handler }
 * ```
 */
export function createSliceHandler<D>(options: SliceOptions<D>): (request: Request) => Promise<Response> {
  const { budgetMs: maxBudget, minBudgetMs } = checkSliceOptions(options, undefined, "createSliceHandler");
  const json = (status: number, body: unknown) =>
    new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json; charset=utf-8" } });
  return async (request: Request): Promise<Response> => {
    if (request.method !== "GET" && request.method !== "POST") {
      const r = json(405, { error: `method ${request.method} not allowed` });
      r.headers.set("allow", "GET, POST");
      return r;
    }
    if (options.token !== undefined) {
      const auth = request.headers.get("authorization") ?? "";
      const m = /^Bearer\s+(.+)$/i.exec(auth.trim());
      if (!m || !timingSafeEqual(m[1], options.token)) return json(401, { error: "missing or invalid bearer token" });
    }
    const raw = request.headers.get("x-splitlease-budget-ms") ?? new URL(request.url).searchParams.get("budgetMs");
    let budget = maxBudget;
    if (raw !== null) {
      const n = Number(raw);
      if (!Number.isInteger(n) || n <= 0) {
        return json(400, { error: `budget must be a positive integer (ms), got ${JSON.stringify(raw)}` });
      }
      if (n < minBudgetMs) {
        return json(400, {
          error: `budget must be at least marginMs + opTimeoutMs (${minBudgetMs} ms) for these options, got ${n}`,
        });
      }
      budget = Math.min(n, maxBudget);
    }
    try {
      const result = await runSlice(options, budget);
      return json(result.outcome === "error" ? 500 : result.outcome === "stalled" ? 409 : 200, result);
    } catch (e) {
      if (e instanceof SplitleaseError && (e.code === "INVALID_ARGUMENT" || e.code === "INVALID_CONFIG")) {
        return json(400, { error: e.message });
      }
      return json(500, { outcome: "error", error: e instanceof Error ? e.message : String(e) });
    }
  };
}
