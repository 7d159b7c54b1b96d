/**
 * What a coordinator tells its worker: the events of its stream (a split
 * gained, lost, asked back or asked to be cut; the job's outcome, pause and
 * resume), and the split a `gained` event carries. Apart from the
 * `Coordinator` interface (types.ts) because the runtime's lanes and the
 * coordinator's channel read them without the rest of its API.
 *
 * @module
 */
import type { Json, SplitProgress } from "../records.ts";

/**
 * A split as a worker receives it: id, descriptor and weight.
 *
 * @example
 * ```ts
 * import type { SplitSpec } from "@splitlease/splitlease/host";
 * const spec: SplitSpec = { id: "a", descriptor: { file: "a.ndjson" }, weight: 1 };
 * ```
 */
export interface SplitSpec {
  /** Deterministic split id (1–128 of `[A-Za-z0-9_-]`). */
  id: string;
  /** Everything a worker needs to process the split (opaque JSON). */
  descriptor: Json;
  /** Relative cost (bytes, rows); default 1. */
  weight: number;
  /**
   * For a split cut from a running one (README, "Stragglers"): the planned
   * split its lineage comes from, whose id its fencing token names.
   */
  root?: string;
}

/**
 * Why a split was lost.
 *
 * @example
 * ```ts
 * import type { LostReason } from "@splitlease/splitlease/host";
 * const reason: LostReason = "expired"; // taken over after our lease lapsed
 * ```
 */
export type LostReason = "fenced" | "expired" | "starved" | "revoked";

/**
 * An ownership or job-state change (docs/DESIGN.md, "Events"). Per split, `gained`
 * precedes `lost`, and a re-gained split carries a higher epoch.
  *
  * @example
  * ```ts
  * import type { CoordinationEvent } from "@splitlease/splitlease";
  * function onEvent(ev: CoordinationEvent): void {
  *   if (ev.type === "gained") console.log("start", ev.split.id, "at epoch", ev.epoch);
  *   else if (ev.type === "lost") console.log("stop", ev.splitId, ev.reason);
  * }
  * ```
 */
export type CoordinationEvent =
  /**
   * `kind`: how the split came (`claim`, `grant`, `takeover`, `reclaim`,
   * `handoff`, `resume`; the label of `acquisitions_total`); `attempts`: the
   * non-graceful ends charged to it so far.
   */
  | { type: "gained"; split: SplitSpec; epoch: number; progress?: SplitProgress; kind?: string; attempts?: number }
  | { type: "lost"; splitId: string; reason: LostReason }
  | { type: "revokeRequested"; splitId: string }
  /**
   * The leader asks for the remaining work of a held split to be cut into
   * `parts` pieces (lanes are idle and nothing else is left to start):
   * answer with {@linkcode Coordinator.split}, or ignore it to decline.
   */
  | { type: "splitRequested"; splitId: string; epoch: number; parts: number }
  /** `permanent`: quarantined at once by a permanent failure, not at `maxAttempts`. */
  | { type: "quarantined"; splitId: string; attempts: number; permanent?: boolean }
  /**
   * The job is complete: `completed` splits, and `cancelled` ones skipped
   * for good (absent when none; both absent from coordinators that do not
   * count them).
   */
  | { type: "allComplete"; completed?: number; cancelled?: number }
  /** Only quarantined splits are left (`permanent` of them by permanent failures); `cancelled` skipped for good. Absent counts are 0. */
  | { type: "stalled"; completed: number; quarantined: number; cancelled?: number; permanent?: number }
  /**
   * An operator paused the job (`splitlease pause`): this member hands back
   * the `handingBack` splits it holds (each gets `revokeRequested`) and
   * takes nothing new until `resumed`.
   */
  | { type: "paused"; handingBack: number }
  /** The pause was lifted: this member takes work again. */
  | { type: "resumed" }
  /** The outcome announced before (`allComplete` or `stalled`) was withdrawn: an operator requeued or cancelled a split, and the job runs (or is judged) again. */
  | { type: "reopened"; was: "allComplete" | "stalled" }
  | { type: "planFailed"; error: string; attempts: number };
