/**
 * A sharded job's one outcome from its shards' (pure; docs/DESIGN.md,
 * "Sharded jobs"): the job is complete when every shard is, stalled when
 * every shard has an outcome and one stalled (naming the shards), failed
 * when a shard's planning failed; until every shard has one there is none.
 *
 * @module
 */
import type { CoordinationEvent } from "./types.ts";

/** A shard's outcome event, as its coordinator announced it. */
export type ShardOutcome = Extract<CoordinationEvent, { type: "allComplete" | "stalled" | "planFailed" }>;

/** The job's outcome: its event, and the shards it names (the stalled ones, or the one whose planning failed). */
export interface JobOutcomeOfShards {
  event: ShardOutcome;
  /** Shards that stalled (a stall) or whose planning failed; empty when complete. */
  shards: number[];
}

/**
 * The outcome of a job of `count` shards, from each shard's last outcome
 * (`undefined`: none yet, or withdrawn by `reopened`); `undefined` while a
 * shard has none. A failed plan decides at once: that shard never plans
 * its part, so the job cannot complete.
 *
 * @example
 * ```ts
 * import { jobOutcomeOfShards } from "./shard_outcome.ts";
 * const done = jobOutcomeOfShards([{ type: "allComplete", completed: 3 }, { type: "allComplete", completed: 4 }]);
 * console.log(done?.event); // { type: "allComplete", completed: 7 }
 * ```
 */
export function jobOutcomeOfShards(outcomes: readonly (ShardOutcome | undefined)[]): JobOutcomeOfShards | undefined {
  const failed = outcomes.findIndex((o) => o?.type === "planFailed");
  if (failed >= 0) return { event: outcomes[failed]!, shards: [failed] };
  if (outcomes.some((o) => o === undefined)) return undefined;
  let completed = 0, cancelled = 0, quarantined = 0, permanent = 0;
  const stalled: number[] = [];
  outcomes.forEach((o, i) => {
    if (o!.type === "planFailed") return;
    completed += o!.completed ?? 0;
    cancelled += o!.cancelled ?? 0;
    if (o!.type === "stalled") {
      stalled.push(i);
      quarantined += o!.quarantined;
      permanent += o!.permanent ?? 0;
    }
  });
  const skipped = { ...(cancelled > 0 ? { cancelled } : {}) };
  if (stalled.length === 0) return { event: { type: "allComplete", completed, ...skipped }, shards: [] };
  return { event: { type: "stalled", completed, quarantined, ...skipped, ...(permanent > 0 ? { permanent } : {}) }, shards: stalled };
}
