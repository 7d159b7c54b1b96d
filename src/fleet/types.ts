/**
 * Types of the fleet view: the query, and what {@linkcode buildFleetView}
 * (`fleet_view.ts`) and `readFleet` return.
 *
 * @module
 */
import type { JobOutcome, JobRun, SplitEstimate, SplitFailure, SplitRun, SplitStatus, SplitTenancy } from "../records.ts";
import type { StoreEntry } from "../store/store.ts";
import type { MemberLiveness } from "./member_liveness.ts";
import type { JobResult } from "./job_result.ts";

/**
 * A state a fleet query filters on, in the one vocabulary of the CLI,
 * `/status`, `/fleet`, the fleet page and the metrics: a split's status
 * (`runnable`, `completed`, `quarantined`, `cancelled`), or one half of
 * `runnable`: `owned` (a member holds it) or `unclaimed` (no owner: the
 * backlog).
 *
 * @example
 * ```ts
 * import type { FleetState } from "@splitlease/splitlease/admin";
 * const backlog: FleetState = "unclaimed";
 * ```
 */
export type FleetState = SplitStatus | "owned" | "unclaimed";

/**
 * Which splits a fleet view lists, and which page of them.
 *
 * @example
 * ```ts
 * import type { FleetQuery } from "@splitlease/splitlease/admin";
 * const q: FleetQuery = { state: "quarantined", limit: 50 };
 * const next: FleetQuery = { ...q, after: "split-0049" }; // the page after
 * ```
 */
export interface FleetQuery {
  /**
   * Only splits in this state (or these states). Default: every state. The
   * old words of the CLI and the page are accepted too: `running` for
   * `owned`, `waiting` (and `unowned`) for `unclaimed`.
   */
  state?: FleetState | readonly FleetState[];
  /** Only splits whose record names this instance as owner. */
  owner?: string;
  /** Cursor: only splits whose id sorts after this one (the `page.next` of the previous page). */
  after?: string;
  /** Splits per page: 1 to 1000, default 100. */
  limit?: number;
  /** Only splits whose id, owner or descriptor preview contains this text (case-insensitive; 1-200 characters). */
  match?: string;
}

/**
 * The leader's judgement of members, for a view built on the leader (it
 * judges on its own clock, from their heartbeats' revisions); a view built
 * anywhere else judges each member by its lease against its own clock
 * (`src/fleet/member_liveness.ts`).
 *
 * @example
 * ```ts
 * import type { FleetLiveness } from "@splitlease/splitlease/admin";
 * const onLeader: FleetLiveness = { by: "pod-0", liveMembers: ["pod-0", "pod-1"] };
 * ```
 */
export interface FleetLiveness {
  /** The instance that judged (the leader serving the view). */
  by: string;
  /** The members it judges alive. */
  liveMembers: readonly string[];
}

/**
 * A member as a fleet view shows it.
 *
 * @example
 * ```ts
 * import type { FleetMember } from "@splitlease/splitlease/admin";
 * function line(m: FleetMember): string {
 *   return `${m.instance} ${m.owned}/${m.maxInFlight} ${m.alive === null ? `beat ${m.beat}` : m.alive ? "alive" : "dead"}`;
 * }
 * ```
 */
export interface FleetMember {
  /** The member's stable name (its `member.<instance>` record). */
  instance: string;
  /** Process session nonce. */
  session: string;
  /** Runtime and version, e.g. `deno 2.9.6`. */
  runtime: string;
  /** The splitlease version it runs (a mixed fleet shows during a rollout). */
  version: string;
  /** Lanes it runs at most (0: standby). */
  maxInFlight: number;
  /** Runnable splits whose record names this member (this session) as owner. */
  owned: number;
  /** Splits it reported holding on its last beat, if it reports them. */
  held: number | null;
  /** Its heartbeat counter: it grows every `leaseMs / 3` while the member lives. */
  beat: number;
  /** Draining to leave (it gets no new work). */
  draining: boolean;
  /** Runs a planner (preferred as leader). */
  planner: boolean;
  /** It is the leader named by the `leader` record. */
  leader: boolean;
  /** Not past its lease ({@linkcode FleetMember.liveness} `alive`), or `null` when its record carries no time to judge by. */
  alive: boolean | null;
  /**
   * Judged by the leader's rule (`src/fleet/member_liveness.ts`): `alive`,
   * `unresponsive` (past its lease: no heartbeat for `lease` ms; runnable
   * splits still name it, not taken over yet), `gone` (past its lease,
   * nothing names it), `unknown` (no time in its record). On the leader,
   * by the leader's own judgement; elsewhere by its `lease` against the
   * time of its last beat ({@linkcode FleetMember.lastBeatAt}).
   */
  liveness: MemberLiveness;
  /** The lease it is judged by (its record's, else two minutes for records that name none). */
  lease: number;
  /**
   * What it does: `working` (holds splits), `idle` (holds none), `standby`
   * (`maxInFlight: 0`), `draining` — by its last report while it is alive;
   * `unresponsive` or `gone` once it is past its lease (its last report is
   * no longer true).
   */
  activity: "working" | "idle" | "standby" | "draining" | "unresponsive" | "gone";
  /**
   * A `splitlease ui` process (an operator's shell serving the fleet page:
   * instance `splitlease-ui-…`, no lanes), not a worker of the fleet. It
   * may lead; pages offer no drain for it.
   */
  ui: boolean;
  /** Wall clock of its last beat as it wrote it (`null` in records from before it was written). */
  lastBeatAt: number | null;
  /** Splits it completed per minute over the view's rate window (from the records' completion times). */
  perMinute: number;
}

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

/**
 * The job-wide rate of a fleet view, from the completion times the split
 * records hold (not from the reader's own samples): splits completed per
 * minute over the last five minutes (or since the job's first tenancy, if
 * shorter), the ETA of the runnable work left at that rate (by weight, each
 * running split counted by the fraction its source estimates done) and a
 * sparkline of completions over the last ten minutes.
 *
 * @example
 * ```ts
 * import type { FleetRate } from "@splitlease/splitlease/admin";
 * const finishesAt = (r: FleetRate) => r.eta.state === "estimated" ? new Date(r.eta.at!).toISOString() : r.eta.state;
 * ```
 */
export interface FleetRate {
  /** The window measured (ms): five minutes, or since the job began if shorter; 0 before any tenancy. */
  windowMs: number;
  /** The earliest tenancy start any record names (the job began running), or `null`. */
  startedAt: number | null;
  /** Splits completed within the window. */
  completedInWindow: number;
  /** The weight of the splits completed within the window (what the rate in weight is computed from). */
  weightInWindow: number;
  /** Splits per minute over the window, or `null` when there is no window yet. */
  perMinute: number | null;
  /** Completed splits whose records hold a completion time. */
  timed: number;
  /** Completed splits whose records hold none (written before tenancies were recorded). */
  untimed: number;
  /** Weight of the runnable work left (running splits less the fraction their source estimates done). */
  remainingWeight: number;
  /** Weight the running splits' estimates count as done. */
  partialWeight: number;
  /**
   * When the runnable work should be done at this rate: `estimated`,
   * `unknown` (nothing completed in the window), `stalled` (only
   * quarantined splits left) or `done`. `thenStalled`: quarantined splits
   * wait behind the runnable work, so the job stalls when it is done unless
   * they are requeued or cancelled.
   */
  eta: { state: "estimated" | "unknown" | "stalled" | "done"; at: number | null; inMs: number | null; thenStalled: boolean };
  /** Completions per bucket (60 of `bucketMs`: the job's life, 1 to 10 minutes), oldest first, the last ending at the view's time. */
  spark: { bucketMs: number; counts: number[] };
}

/**
 * What a job did, from its split records: what its result summary shows
 * (the fleet page once it is done, `splitlease status`). Runs are counted
 * from each split's tenancy history (its last 8 tenancies), so a split that
 * ran more often than that counts its latest runs only. The times are the
 * writers' wall clocks, as in {@linkcode FleetRate}.
 *
 * @example
 * ```ts
 * import type { FleetSummary } from "@splitlease/splitlease/admin";
 * const line = (s: FleetSummary) => `${s.records} records, ${s.retries} retries, ${s.failures} failures, ${s.cuts} cuts`;
 * ```
 */
export interface FleetSummary {
  /** Records the split records count (what the owners reported with the commits that landed), over every split. */
  records: number;
  /** Splits whose records count any (a source that reports no records leaves this 0). */
  splitsWithRecords: number;
  /** Runs that followed a failed or lost run of the same split (the work retried). */
  retries: number;
  /** Runs that ended failed (a `run` that threw, a poison report). */
  failures: number;
  /** Runs whose owner was judged dead or fenced, the split taken over (`lost`). */
  lost: number;
  /** Cuts of running splits' remaining work (each made residual splits of its own). */
  cuts: number;
  /** When the first tenancy on record began, or `null`. */
  startedAt: number | null;
  /** When the latest split completed, or `null`: the job's end once it is done. */
  lastCompletedAt: number | null;
  /** From `startedAt` to `lastCompletedAt` (ms), or `null`: how long the job took, once done. */
  tookMs: number | null;
  /** Splits completed per minute over `tookMs`, or `null`. */
  perMinute: number | null;
  /** Records per second over `tookMs`, or `null` (no records or no time). */
  recordsPerSecond: number | null;
}

/**
 * Job-wide split counts of a fleet view (every split, whatever the filter).
 *
 * @example
 * ```ts
 * import type { FleetCounts } from "@splitlease/splitlease/admin";
 * const done = (c: FleetCounts) => c.completed + c.cancelled === c.total;
 * ```
 */
export interface FleetCounts {
  /** Readable split records. */
  total: number;
  /** Runnable splits, owned or not. */
  runnable: number;
  /** Runnable splits with an owner. */
  owned: number;
  /** Runnable splits without an owner (the backlog): the `unclaimed` of `/status` and the `splits_unclaimed` metric. */
  unclaimed: number;
  /** @deprecated The same as `unclaimed` (its old name), kept for readers of `/fleet`. */
  unowned: number;
  /** Completed splits. */
  completed: number;
  /** Quarantined (poison) splits, parked until requeued. */
  quarantined: number;
  /** Of the quarantined, those quarantined by a permanent failure (requeue them only once their input is fixed). */
  permanent: number;
  /** Cancelled splits (terminal, never run again). */
  cancelled: number;
  /** Unreadable split records. */
  invalid: number;
  /** Total weight of every readable split. */
  weight: number;
  /** Weight of the completed ones. */
  completedWeight: number;
}

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
