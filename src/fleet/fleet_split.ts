/**
 * A split as a fleet view lists it.
 *
 * @module
 */
import type { SplitEstimate, SplitFailure, SplitRun, SplitStatus, SplitTenancy } from "../records.ts";
import type { FleetState } from "./fleet_query.ts";

/**
 * A split as a fleet view shows it: state, owner, epoch, attempts, progress,
 * a bounded preview of its descriptor and its failure history.
 *
 * @example
 * ```ts
 * import type { FleetSplit } from "@splitlease/splitlease/admin";
 * function line(s: FleetSplit): string {
 *   return `${s.id} ${s.status} ${s.owner ?? "-"} @${s.progress?.watermark ?? "start"} ${s.descriptor ?? "(spec)"}`;
 * }
 * ```
 */
export interface FleetSplit {
  /** Split id. */
  id: string;
  /** Lifecycle state. */
  status: SplitStatus;
  /** Its state in the words of a query: `owned` or `unclaimed` for a runnable split, else its status. */
  state: Exclude<FleetState, "runnable">;
  /** Owner instance, or `null` when free. */
  owner: string | null;
  /** Fencing epoch (grows with every ownership change). */
  epoch: number;
  /** Non-graceful ends so far. */
  attempts: number;
  /** Quarantined by a permanent failure (its last failure says it will not go away): retrying it without a fix is pointless. */
  permanent: boolean;
  /** Relative cost. */
  weight: number;
  /** Last committed progress: the watermark and a bounded preview of the source state. */
  progress: { watermark: number | string | null; state: string | null } | null;
  /** Bounded JSON preview of the descriptor, or `null` when it lives in `spec.<id>`. */
  descriptor: string | null;
  /** The descriptor lives in `spec.<id>` (too large for the split record). */
  spec: boolean;
  /** Reason of the last failure, if any. */
  lastFailure: string | null;
  /** The last few failures, oldest first. */
  failures: SplitFailure[];
  /** The source's estimate of the work left, if it commits one. */
  estimate: SplitEstimate | null;
  /** Fraction done (0-1) by that estimate, 1 when completed, `null` when unknown. */
  fraction: number | null;
  /** When the current tenancy began (owned splits), or `null`. */
  since: number | null;
  /** When it completed, or `null`. */
  completedAt: number | null;
  /** The last few tenancies, oldest first (owner, epoch, from, to, how each ended). */
  tenancies: SplitTenancy[];
  /** The split it was cut from (README, "Stragglers"), or `null` when planned. */
  parent: string | null;
  /** How often its remaining work was cut. */
  cuts: number;
  /** Records its owners reported with the commits that landed, or `null` when none were reported. */
  records: number | null;
  /** The job's run this record belongs to (1 before any rerun). */
  run: number;
  /** What it did in the job's earlier runs, oldest first (the last few). */
  runs: SplitRun[];
}
