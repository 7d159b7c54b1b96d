/**
 * The planner's contract: the function a leader runs to list a job's
 * splits, the context it is handed and what it returns. Apart from the
 * coordinator's API: a source implements it, and the leader's planning reads
 * nothing else of this kind.
 *
 * @module
 */
import type { Json } from "../records.ts";

/**
 * A split produced by a planner.
 *
 * @example
 * ```ts
 * import type { PlannedSplit } from "@splitlease/splitlease";
 * const s: PlannedSplit = { id: "range-0000", descriptor: { from: 0, to: 1000 }, weight: 1000 };
 * ```
 */
export interface PlannedSplit {
  /** Deterministic id (see `splitIdFrom`). */
  id: string;
  /** Opaque JSON descriptor. */
  descriptor: Json;
  /** Weight > 0 (default 1). */
  weight?: number;
}

/**
 * What a planner run returns.
 *
 * @example
 * ```ts
 * import type { PlanResult } from "@splitlease/splitlease";
 * const r: PlanResult = { splits: [{ id: "a", descriptor: { file: "a.ndjson" } }], finality: "final" };
 * ```
 */
export interface PlanResult {
  /** The splits of this run (new and already known ones alike). */
  splits: Iterable<PlannedSplit> | AsyncIterable<PlannedSplit>;
  /** `final`: the enumeration is complete; `open`: plan again later. */
  finality: "open" | "final";
  /** Cursor handed to the next run of a discovery planner. */
  cursor?: Json;
  /**
   * `true`: this run is one part of a listing that goes on (an object
   * store's page of keys, a table's range of ids), and the planner is called
   * again at once with this run's `cursor`, not after `replanIntervalMs`.
   * Only with `finality: "open"`; the last part says `"final"`. A plan
   * returned in parts of, say, 50,000 splits is published part by part: the
   * first splits are dealt while the rest is listed, a new leader goes on
   * from the last published cursor, and the leader never holds more than one
   * part of the listing (a million splits returned at once are the leader's
   * memory high-water mark: docs/OPERATIONS.md, "The leader of a large
   * job"). Heaviest first then holds within each part.
   */
  more?: boolean;
}

/**
 * Context handed to a planner run.
 *
 * @example
 * ```ts
 * import type { PlanContext, PlanResult } from "@splitlease/splitlease";
 * async function plan(ctx: PlanContext): Promise<PlanResult> {
 *   const seen = (ctx.cursor as string[] | undefined) ?? [];
 *   return { splits: [], finality: "open", cursor: seen };
 * }
 * ```
 */
export interface PlanContext {
  /** Cursor returned by the previous published run, if any. */
  cursor?: Json;
  /** The term of the leader that runs this planner (a plan it publishes carries it; a newer leader's plan replaces it). */
  term: number;
  /** Aborted when this instance stops leading. */
  signal: AbortSignal;
  /**
   * Of a sharded job (`shards: K`): the shard this run plans. Each shard's
   * leader runs the planner and keeps the splits `shardOf(id, count)` routes
   * to its shard; a planner that can list only its part (a key range, a
   * hash of its inputs) may return only those. Absent: an unsharded job.
   */
  shard?: { index: number; count: number };
}

/**
 * A planner: runs on the leader only.
 *
 * @example
 * ```ts
 * import type { Planner } from "@splitlease/splitlease";
 * const planner: Planner = () => Promise.resolve({ splits: [{ id: "only", descriptor: null }], finality: "final" });
 * ```
 */
export type Planner = (ctx: PlanContext) => Promise<PlanResult>;
