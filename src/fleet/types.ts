/**
 * Types of the fleet view: what {@linkcode buildFleetView} (`fleet_view.ts`)
 * and `readFleet` return, a shard's line in it, and the snapshot of records
 * it is built from. Its parts are typed in files of their own: the query
 * (`fleet_query.ts`), members (`fleet_member.ts`), splits (`fleet_split.ts`),
 * counts, rate and summary (`fleet_figures.ts`).
 *
 * @module
 */
import type { JobOutcome, JobRun } from "../records.ts";
import type { StoreEntry } from "../store/store.ts";
import type { FleetCounts, FleetRate, FleetSummary } from "./fleet_figures.ts";
import type { FleetMember } from "./fleet_member.ts";
import type { FleetState } from "./fleet_query.ts";
import type { FleetSplit } from "./fleet_split.ts";
import type { JobResult } from "./job_result.ts";

/**
 * What {@linkcode readFleet} and `GET /fleet` return.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { readFleet, type FleetView } from "@splitlease/splitlease/admin";
 * const view: FleetView = await readFleet(new MemoryStore(), { state: "quarantined" });
 * console.log(view.counts.quarantined, view.splits.map((s) => s.id));
 * ```
 */
export interface FleetView {
  /** Wall-clock time of the read (ms since the epoch). */
  at: number;
  /**
   * What its figures come from: `records` (the job's records: a full read,
   * or a live index of them), or `beat` (a summary of a large job: the
   * outcome, else the leader's last beat, and the member records; no split
   * is listed, and what only the split records know — the recent
   * completions, the sparkline, the result's records, retries and
   * failures — is empty; see `readFleetSummary`).
   */
  basis: "records" | "beat";
  /** The job's fingerprint, or `null` before the first worker joined. */
  fingerprint: string | null;
  /** The leader as its record names it, or `null`. */
  leader: { instance: string; term: number; beat: number } | null;
  /**
   * The plan, or `null` before the first leader: `outcome` is the outcome's
   * kind, `result` where the job stands with the whole outcome record and
   * what it skipped (the `result` of `splitlease status --json` and `wait --json`).
   */
  plan:
    | {
      term: number;
      finality: "open" | "final";
      generation: number;
      planned: number;
      outcome: JobOutcome["kind"] | null;
      result: JobResult;
      /** The job's run (its generation): 1, then one more per rerun. */
      run: number;
      /** The runs before this one, oldest first: each one's outcome and what it did. */
      history: JobRun[];
    }
    | null;
  /**
   * Who judged liveness: this view's server, the leader (`here`, by its own
   * judgement), or the view itself (`clock`: each member's lease against
   * the time of its last beat, on this view's clock; `leader` names the
   * leader its record names, for reference).
   */
  liveness: { judgedBy: "here"; by: string } | { judgedBy: "clock"; leader: string | null };
  /** Every member record, by instance id. */
  members: FleetMember[];
  /** Job-wide counts. */
  counts: FleetCounts;
  /** Job-wide rate and ETA (from completion times in the records). */
  rate: FleetRate;
  /** What the job did so far: records, retries, failures, cuts, how long it took and at what rate. */
  summary: FleetSummary;
  /** The most recently completed splits (at most 10), newest first, whatever the filter. */
  recent: FleetSplit[];
  /** One page of the splits that match the query, by id. */
  splits: FleetSplit[];
  /** The page: its query, the number of matching splits, and the cursor of the next page (`null`: last page). */
  page: {
    limit: number;
    after: string | null;
    state: FleetState[] | null;
    owner: string | null;
    match: string | null;
    matched: number;
    next: string | null;
  };
  /** Unreadable records (the first 20 by key; `counts.invalid` counts the split records) and their problem. */
  invalid: { key: string; message: string }[];
  /**
   * Of a sharded job (docs/OPERATIONS.md, "Sharding a job"): each shard's
   * own line. The fields above are the job's, folded from every shard's
   * (counts summed, members merged by instance, the page of splits taken
   * across shards by id, `leader` the leader of shard 0). Absent for an
   * unsharded job, and for one shard named directly (`<job>--shard<i>`).
   */
  shards?: FleetShard[];
}

/**
 * One shard of a sharded job as a fleet view shows it ({@linkcode FleetView.shards}).
 *
 * @example
 * ```ts
 * import type { FleetShard } from "@splitlease/splitlease/admin";
 * const line = (s: FleetShard) => `shard ${s.index} (${s.job}): ${s.state}, leader ${s.leader?.instance ?? "none"}, ${s.counts.completed} completed`;
 * ```
 */
export interface FleetShard {
  /** Which shard (0 .. count - 1). */
  index: number;
  /** The job name its records are under (`shardJob`: the job itself for shard 0, `<job>--shard<index>` for the others). */
  job: string;
  /** What its figures come from (`records` or `beat`, as {@linkcode FleetView.basis}). */
  basis: FleetView["basis"];
  /** Its leader, or `null`. */
  leader: FleetView["leader"];
  /** Where the shard stands (its plan record's {@linkcode JobResult} state; `new` without one). */
  state: JobResult["state"];
  /** Its outcome record, or `null`. */
  outcome: JobResult["outcome"];
  /** Splits its plan planned (0 without a plan). */
  planned: number;
  /** Its split counts. */
  counts: FleetCounts;
  /** Its member records. */
  members: number;
}

/**
 * A snapshot of a job's records, as {@linkcode readFleetSnapshot} reads it.
 *
 * @example
 * ```ts
 * import { buildFleetView } from "./fleet_view.ts";
 * const empty: FleetSnapshot = { job: undefined, plan: undefined, leader: undefined, members: [], splits: [], at: 0 };
 * console.log(buildFleetView(empty).counts.total); // 0
 * ```
 */
export interface FleetSnapshot {
  /** The `job` record entry. */
  job: StoreEntry | undefined;
  /** The `plan` record entry. */
  plan: StoreEntry | undefined;
  /** The `leader` record entry. */
  leader: StoreEntry | undefined;
  /** Every `member.` entry. */
  members: readonly StoreEntry[];
  /** Every `split.` entry (any order; a listing gives key order). */
  splits: Iterable<StoreEntry>;
  /** Every `prog.` entry: the position each running split's tenancies committed (absent in snapshots taken before they existed). */
  progs?: Iterable<StoreEntry>;
  /** Every `page.` entry: the plan's splits, those not dealt yet having no record of their own. */
  pages?: Iterable<StoreEntry>;
  /** Wall-clock time of the read. */
  at: number;
}
