/**
 * What a user implements to run work under splitlease: a planner plus
 * per-split processing ({@linkcode SplitSource}), and the per-tenancy handle
 * the driver hands it ({@linkcode Lane}).
 *
 * @module
 */
import type { Json, SplitProgress } from "../records.ts";
import type { PlanContext, PlanResult, SplitSpec } from "../coordinator/types.ts";
import type { TransactionWork } from "../store/store.ts";

/**
 * A source of work: plans splits (on the leader only) and processes one split
 * per {@linkcode Lane}.
 *
 * `run(lane)` is one tenancy of one split. It should resume from
 * `lane.progress`, `commit` progress as it goes, and end in one of three ways:
 *
 * - `await lane.complete(progress)` then return: the split is done;
 * - `await lane.fail(reason)` (or throw): a failed attempt (poison report);
 *   a failure that will not go away (`throw new PermanentFailure(…)`, or
 *   `lane.fail(reason, { permanent: true })`) quarantines the split at once;
 * - return after `lane.revokeSignal` fired: the driver commits the tail and
 *   releases the split to its new owner (zero replay).
 *
 * When `lane.signal` fires the split is lost: stop at once, commits are
 * rejected. Returning without completing, failing or being revoked releases
 * the split (it will be offered again).
 *
 * @example
 * ```ts
 * import type { SplitSource } from "@splitlease/splitlease";
 * const source: SplitSource<{ from: number; to: number }> = {
 *   fingerprint: () => "ranges-v1",
 *   plan: () => Promise.resolve({
 *     finality: "final",
 *     splits: [{ id: "r0", descriptor: { from: 0, to: 100 } }],
 *   }),
 *   async run(lane) {
 *     let at = typeof lane.progress?.watermark === "number" ? lane.progress.watermark : lane.descriptor.from;
 *     while (at < lane.descriptor.to) {
 *       if (lane.signal.aborted || lane.revokeSignal.aborted) return;
 *       at += 10; // process records [at - 10, at)
 *       await lane.commit({ watermark: at });
 *     }
 *     await lane.complete({ watermark: at });
 *   },
 * };
 * ```
 */
export interface SplitSource<D = Json> {
  /**
   * Config-derived identity of the job (what is planned and how). Replicas
   * with another fingerprint refuse to join.
   */
  fingerprint(): string;
  /** Enumerates the splits. Runs on the leader only. */
  plan(ctx: PlanContext): Promise<PlanResult>;
  /** Processes one tenancy of one split. */
  run(lane: Lane<D>): Promise<void>;
  /**
   * Optional zod schema of the descriptor. A descriptor that fails it is
   * reported as poison (`fail` with the issues) and never reaches `run`.
   */
  descriptorSchema?: DescriptorSchema<D>;
  /**
   * Optional: cuts a running lane's remaining work so idle lanes can take
   * part of it (dynamic work rebalancing: the leader asks when lanes are
   * idle and no other split is left to start; docs/DESIGN.md,
   * "Stragglers"). Called between two of `run`'s awaits while it runs.
   * Return `undefined` to decline. Otherwise return the descriptor the
   * lane keeps and the residual work as new splits: from the call on, `run`
   * must process nothing outside `keep`, and `keep` must cover everything
   * up to the lane's last committed or accepted progress and whatever
   * `run` has started (cut at or after the position it has reached, never
   * before; `lane.progress` is only what was committed or accepted, so a
   * source that runs ahead of its commits tracks its own position).
   * `lane.descriptor` reads `keep` from the moment `split` returns it.
   * Descriptors must each fit in 2048 bytes of JSON (and pass
   * `descriptorSchema`), 1 to 16 residuals; an answer that does not is not
   * written, and the split is handed back with its committed progress, so
   * its next tenancy runs all its remaining work. Weights: the leader ranks
   * running splits by weight × the fraction left by their last committed
   * `estimate`, so give the kept split the weight of its whole kept range
   * (what it has done included) and keep committing estimates. Residuals are charged nothing, name their
   * parent and may be cut again.
   *
   * @example
   * ```ts
   * import type { SplitSource } from "@splitlease/splitlease";
   * type Range = { from: number; to: number };
   * const split: SplitSource<Range>["split"] = (lane, { parts }) => {
   *   const at = Number(lane.progress?.watermark ?? lane.descriptor.from); // processed up to here
   *   const step = Math.floor((lane.descriptor.to - at) / parts);
   *   if (step < 100) return undefined; // too little left to be worth it
   *   const cuts = Array.from({ length: parts - 1 }, (_, i) => at + step * (i + 1));
   *   return {
   *     keep: { from: lane.descriptor.from, to: cuts[0] },
   *     residuals: cuts.map((from, i) => ({ descriptor: { from, to: cuts[i + 1] ?? lane.descriptor.to } })),
   *   };
   * };
   * ```
   */
  split?(lane: Lane<D>, request: SplitRequest): SplitAnswer<D> | undefined;
  /**
   * Whether `run` stops intake when `revokeSignal` fires (default `true`).
   * `false`: revocations are declined and the split is released forcibly
   * (its uncommitted tail replays under the new owner).
   */
  stopsIntakeOnRevoke?: boolean;
}

/**
 * What the leader asks of {@linkcode SplitSource.split}: cut the remaining
 * work into `parts` pieces (the kept one included), each about `fraction`
 * of it. A hint: the source may cut fewer (at least one residual).
 *
 * @example
 * ```ts
 * import type { SplitRequest } from "@splitlease/splitlease";
 * const r: SplitRequest = { parts: 4, fraction: 0.25 };
 * ```
 */
export interface SplitRequest {
  /** Pieces wanted, the kept one included (2 to 17). */
  readonly parts: number;
  /** The share of the remaining work each piece would ideally get (`1 / parts`). */
  readonly fraction: number;
}

/**
 * A source's answer to {@linkcode SplitSource.split}: the descriptor the
 * lane keeps and the residual work (1 to 16 new splits).
 *
 * @example
 * ```ts
 * import type { SplitAnswer } from "@splitlease/splitlease";
 * const a: SplitAnswer<{ from: number; to: number }> = {
 *   keep: { from: 0, to: 500 },
 *   residuals: [{ descriptor: { from: 500, to: 1000 }, weight: 500 }],
 * };
 * ```
 */
export interface SplitAnswer<D = Json> {
  /** What the lane keeps. */
  keep: D;
  /** The kept split's weight (default: the split's weight shared evenly with the residuals). */
  weight?: number;
  /** The residual work, each a new split. */
  residuals: { descriptor: D; weight?: number }[];
}

/**
 * A descriptor schema: anything with zod's `safeParse` (every zod v4 schema
 * fits), so a source can validate its descriptors.
  *
  * @example
  * ```ts
  * import type { DescriptorSchema } from "@splitlease/splitlease/host";
  * const schema: DescriptorSchema<{ from: number }> = {
  *   safeParse: (d) =>
  *     typeof (d as { from?: unknown })?.from === "number"
  *       ? { success: true, data: d as { from: number } }
  *       : { success: false, error: { issues: [{ path: ["from"], message: "expected a number" }] } },
  * };
  * ```
 */
export interface DescriptorSchema<D> {
  /** Validates `data`: the typed value, or the issues found. */
  safeParse(data: unknown):
    | { success: true; data: D }
    | { success: false; error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] } };
}

/**
 * Options of {@linkcode Lane.commit}.
 *
 * @example
 * ```ts
 * import type { Lane } from "@splitlease/splitlease";
 * import type { LaneCommitOptions } from "@splitlease/splitlease/host";
 * declare const lane: Lane;
 * const options: LaneCommitOptions = { records: 500 };
 * await lane.commit({ watermark: 500 }, options);
 * // The sink in the store's database: the rows and the progress in one transaction.
 * await lane.commit({ watermark: 1000 }, {
 *   records: 500,
 *   transaction: async (sql) => {
 *     await sql`insert into sink select * from source where id > 500 and id <= 1000`;
 *   },
 * });
 * ```
 */
export interface LaneCommitOptions {
  /** Records covered by this commit (summed into `recordsCommitted`). */
  records?: number;
  /**
   * The source's own writes for this progress, committed in ONE transaction
   * with it on the store's database (PostgresStore, when the sink is the
   * same database): the commit is written at once (no commit interval),
   * `transaction` runs inside it with the store's transaction handle
   * (`PgTransaction`), and the promise resolves once both committed. A lane
   * that lost its split gets `FencedError` and its writes roll back with the
   * refused commit: exactly once, without a fenced sink. An outage
   * (`StoreUnavailableError`) means both landed or neither; the split's
   * next tenancy resumes from whichever is durable. `transaction` may run
   * more than once (each run its own transaction); give each transactional
   * commit a progress of its own (a new watermark), by which a commit whose
   * answer was lost is recognised as landed. `INVALID_CONFIG` on a store
   * without transactions (NatsStore, MemoryStore).
   */
  transaction?: TransactionWork;
}

/**
 * The fencing token of one tenancy: the split id and its epoch. Every
 * ownership change of a split moves its epoch up, so for one split a later
 * tenancy always carries a higher epoch. A split cut from a running one
 * (README, "Stragglers") names its planned ancestor's id, and its epochs
 * start past the epoch its parent was cut at: every tenancy of the parent
 * from before the cut (the only ones that may have run its range) carries
 * a lower epoch under the same id. A sink that stores the token with
 * what it writes, and refuses a write whose epoch is below the stored one for
 * the same split, can never be overwritten by a paused process that resumes
 * after its split moved on (a "fenced sink"; see `examples/pg_range`).
 *
 * @example
 * ```ts
 * import type { FencingToken, Lane } from "@splitlease/splitlease";
 * declare const lane: Lane;
 * const { splitId, epoch }: FencingToken = lane.fencingToken;
 * // insert ... (split_id, epoch) values ($splitId, $epoch)
 * //   on conflict (id) do update set ... where sink.epoch <= excluded.epoch
 * console.log(splitId, epoch);
 * ```
 */
export interface FencingToken {
  /** The split the tenancy holds. */
  readonly splitId: string;
  /** Its epoch: higher for every later tenancy of the same split. */
  readonly epoch: number;
}

/**
 * One tenancy of one split, handed to {@linkcode SplitSource.run}.
 *
 * @example
 * ```ts
 * import type { Lane } from "@splitlease/splitlease";
 * async function run(lane: Lane<{ key: string }>): Promise<void> {
 *   console.log(lane.splitId, lane.epoch, lane.descriptor.key, lane.progress);
 *   await lane.complete({ watermark: 1 });
 * }
 * ```
 */
export interface Lane<D = Json> {
  /** Unique id of this tenancy (fresh for every `gained`). */
  readonly id: string;
  /** The split this lane runs (the same across the split's tenancies, unlike `id`). */
  readonly splitId: string;
  /** The split as planned (id, raw descriptor, weight). */
  readonly spec: SplitSpec;
  /**
   * The descriptor, validated by `descriptorSchema` when there is one; once
   * the lane's remaining work was cut ({@linkcode SplitSource.split}), what
   * it keeps.
   */
  readonly descriptor: D;
  /** The fencing epoch of this tenancy (also in {@linkcode Lane.fencingToken}). */
  readonly epoch: number;
  /**
   * The fencing token to store with every external write of this tenancy
   * (split id and epoch): a sink that refuses writes older than the stored
   * token keeps a resumed zombie from overwriting a newer owner's rows.
   */
  readonly fencingToken: FencingToken;
  /** Progress to resume from: the last committed (or accepted) progress. */
  readonly progress: SplitProgress | undefined;
  /** Aborted when the split is lost (fenced, expired, starved, revoked, shutdown). */
  readonly signal: AbortSignal;
  /** Aborted when the split should be handed over: stop intake, return. */
  readonly revokeSignal: AbortSignal;
  /**
   * The span of this tenancy (`splitlease.tenancy`) when an OpenTelemetry
   * SDK is registered, else `undefined`. `run()` executes inside it, so with
   * a context manager registered the spans a source starts nest under it
   * already; without one, parent them explicitly
   * (`trace.setSpan(context.active(), lane.span)`). docs/OPERATIONS.md,
   * "Tracing".
   *
   * @example
   * ```ts
   * import { context, trace } from "@opentelemetry/api";
   * import type { Lane } from "@splitlease/splitlease";
   * declare const lane: Lane;
   * const parent = lane.span ? trace.setSpan(context.active(), lane.span) : context.active();
   * const span = trace.getTracer("my-source").startSpan("read batch", {}, parent);
   * span.end();
   * ```
   */
  // Named through the module's type, not a type import: `deno doc --lint` counts an imported `Span` as a private type of this package.
  readonly span?: NonNullable<ReturnType<(typeof import("@opentelemetry/api"))["trace"]["getActiveSpan"]>>;
  /**
   * The W3C `traceparent` of this tenancy's span
   * (`00-<trace id>-<span id>-<flags>`), for the systems the source calls
   * (an HTTP header, a message attribute); `undefined` without an SDK.
   *
   * @example
   * ```ts
   * import type { Lane } from "@splitlease/splitlease";
   * declare const lane: Lane;
   * const headers: Record<string, string> = lane.traceparent ? { traceparent: lane.traceparent } : {};
   * await fetch("https://api.example.com/rows?from=0", { headers });
   * ```
   */
  readonly traceparent?: string;
  /**
   * Commits progress (fenced by the epoch). With no commit interval the
   * promise resolves once the progress is durable; with one it resolves once
   * accepted, and the driver writes the newest accepted progress at most
   * once per interval and always before releasing or completing.
   *
   * @throws {FencedError} when the lane was lost (nothing written).
   * @throws {SplitleaseError} (`INVALID_ARGUMENT`) when the watermark regresses.
   */
  commit(progress: SplitProgress, options?: LaneCommitOptions): Promise<void>;
  /** Writes any accepted but unwritten progress now. */
  flush(): Promise<void>;
  /**
   * Terminal commit: marks the split completed (with `progress`, or the last
   * accepted progress); with `options.transaction`, in one transaction with
   * the source's last writes.
   */
  complete(progress?: SplitProgress, options?: LaneCommitOptions): Promise<void>;
  /**
   * Reports the split as poison for this attempt (quarantined at the cap).
   * Given an error, its `Name: message` is the reason and the first frames
   * of its stack join the split's failure history. With `{ permanent: true }`
   * — or given a `PermanentFailure` (any error with `permanent: true`) — the
   * failure will not go away: the split is quarantined at once, with no
   * retry and no backoff, until an operator requeues or cancels it.
   */
  fail(reason: string | Error, options?: LaneFailOptions): Promise<void>;
}

/**
 * Options of {@linkcode Lane.fail}.
 *
 * @example
 * ```ts
 * import type { Lane } from "@splitlease/splitlease";
 * import type { LaneFailOptions } from "@splitlease/splitlease/admin";
 * declare const lane: Lane;
 * const options: LaneFailOptions = { permanent: true };
 * await lane.fail("row 7: schema violation (column id is text)", options);
 * ```
 */
export interface LaneFailOptions {
  /** The failure will not go away: quarantine the split now instead of retrying it up to `maxAttempts`. */
  permanent?: boolean;
}
