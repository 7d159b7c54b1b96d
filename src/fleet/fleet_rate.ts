/**
 * The job-wide rate of a fleet view, from what the split records hold: the
 * completion time of every completed split (the end of its last tenancy,
 * `tenancies`) and the start of the earliest tenancy any record names (when
 * the job began running, as far as the records know). Nothing here depends
 * on who reads or since when: a page opened now shows the same rate, ETA
 * and sparkline as one open for an hour. Records written before tenancies
 * existed count as completed without a time (`untimed`).
 *
 * @module
 */
import type { SplitRecord, SplitStatus } from "../records.ts";
import { permanentlyFailed } from "../records/transitions.ts";
import type { FleetRate, FleetSummary } from "./fleet_figures.ts";

/** The window the rate and ETA are measured over (or since the job began, if shorter). */
export const RATE_WINDOW_MS = 5 * 60_000;
/**
 * The sparkline: completions in 60 buckets over the job's life so far, at
 * least one minute and at most the last ten (buckets of 1 to 10 s).
 */
export const SPARK_BUCKETS = 60, SPARK_MIN_MS = 60_000, SPARK_MAX_MS = 10 * 60_000;
/** Completed splits a view lists as recent at most. */
export const RECENT_LISTED = 10;

/** When a split completed (its last tenancy's end), or `null` (not completed, or no time recorded). */
export function completedAt(r: SplitRecord): number | null {
  if (r.status !== "completed") return null;
  const last = r.tenancies?.[r.tenancies.length - 1];
  return last?.end === "completed" && last.to !== undefined ? last.to : null;
}

/** Who completed a split (its last tenancy's owner), or `null`. */
export function completedBy(r: SplitRecord): string | null {
  return completedAt(r) === null ? null : r.tenancies![r.tenancies!.length - 1].owner;
}

/** The fraction of a split done by its source's estimate (0-1), 1 when completed, else `null`. */
export function fractionDone(r: SplitRecord): number | null {
  if (r.status === "completed") return 1;
  const e = r.progress?.estimate;
  return e ? Math.min(1, Math.max(0, 1 - e.left / e.total)) : null;
}

/**
 * What the job-wide figures of a fleet view read of one split (its counts,
 * rate, ETA and result summary): folded from a record by
 * {@linkcode splitFacts}, the same for a full read (`fleet_view.ts`) and
 * for the live index (`fleet_index.ts`), which keeps these in columns
 * instead of the records.
 *
 * @example
 * ```ts ignore
 * const f = splitFacts(record);
 * if (f.completedAt !== null) console.log("completed by", f.completedBy);
 * ```
 */
export interface SplitFacts {
  /** Lifecycle state. */
  status: SplitStatus;
  /** Its owner as `instance/session`, or `null` (only a runnable split's counts as its load). */
  owner: string | null;
  /** Relative cost. */
  weight: number;
  /** Quarantined by a permanent failure. */
  permanent: boolean;
  /** Fraction done by its estimate (runnable splits; `null` without one). */
  fraction: number | null;
  /** When it completed (its last tenancy's end), or `null`. */
  completedAt: number | null;
  /** Who held the completing tenancy, or `null`. */
  completedBy: string | null;
  /** The earliest tenancy start it names, or `null`. */
  started: number | null;
  /** Runs that ended failed (or, before tenancies were kept, its failure reports). */
  failures: number;
  /** Runs whose owner was judged dead or fenced. */
  lost: number;
  /** Runs that followed a failed or lost run. */
  retries: number;
  /** Cuts of its remaining work. */
  cuts: number;
  /** Records its owners reported, or `undefined`. */
  records: number | undefined;
}

/** The {@linkcode SplitFacts} of one readable split record (its live one: progress from its progress record). */
export function splitFacts(r: SplitRecord, into?: SplitFacts): SplitFacts {
  const f = into ?? ({} as SplitFacts);
  const tenancies = r.tenancies ?? [];
  let started: number | null = null, failures = 0, lost = 0, retries = 0;
  for (let i = 0; i < tenancies.length; i++) {
    const t = tenancies[i];
    if (started === null || t.from < started) started = t.from;
    if (t.end === "failed") failures++;
    if (t.end === "lost") lost++;
    const before = i > 0 ? tenancies[i - 1].end : undefined;
    if (before === "failed" || before === "lost") retries++;
  }
  // Records from before tenancies were kept: their failure reports.
  if (tenancies.length === 0) failures += r.failures?.length ?? 0;
  f.status = r.status;
  f.owner = r.owner ? r.owner.instance + "/" + r.owner.session : null;
  f.weight = r.weight;
  f.permanent = permanentlyFailed(r);
  f.fraction = r.status === "runnable" ? fractionDone(r) : null;
  f.completedAt = completedAt(r);
  f.completedBy = f.completedAt === null ? null : tenancies[tenancies.length - 1].owner;
  f.started = started;
  f.failures = failures;
  f.lost = lost;
  f.retries = retries;
  f.cuts = r.cuts ?? 0;
  f.records = r.records;
  return f;
}

/**
 * When the runnable work should be done: `remaining` weight at
 * `weightPerMs` from `now` (see {@linkcode FleetRate.eta}).
 *
 * @example
 * ```ts ignore
 * etaOf(Date.now(), 10, 0, 10, 0.001).inMs; // 10000
 * ```
 */
export function etaOf(now: number, runnable: number, quarantined: number, remaining: number, weightPerMs: number): FleetRate["eta"] {
  // Quarantined splits behind runnable work: the job stalls when that work is done.
  const thenStalled = runnable > 0 && quarantined > 0;
  if (runnable === 0) return { state: quarantined > 0 ? "stalled" : "done", at: null, inMs: null, thenStalled };
  if (weightPerMs > 0) {
    const inMs = Math.round(remaining / weightPerMs);
    return { state: "estimated", at: now + inMs, inMs, thenStalled };
  }
  return { state: "unknown", at: null, inMs: null, thenStalled };
}

/** What {@linkcode RateFold.of} makes a fold from (see there). */
export interface RateParts {
  started: number | null;
  last: number | null;
  timed: number;
  untimed: number;
  remaining: number;
  partial: number;
  totals: { records: number; splitsWithRecords: number; retries: number; failures: number; lost: number; cuts: number };
  /** Completions of at least the last ten minutes (older ones count for nothing here). */
  lately: Iterable<{ at: number; weight: number; by: string }>;
  /** The most recent completions, newest first (equal times by id), at most {@linkcode RECENT_LISTED}. */
  recent: { id: string; at: number }[];
}

/**
 * Folds split facts into the job-wide rate; `finish` gives the view's
 * part. Add splits in id order: equal completion times keep that order
 * among the recent ones.
 */
export class RateFold {
  readonly #now: number;
  #started: number | null = null;
  #inWindow = 0;
  #weightInWindow = 0;
  #timed = 0;
  #untimed = 0;
  #remaining = 0;
  #partial = 0;
  readonly #times: number[] = []; // completions within the sparkline's longest span
  readonly #byMember = new Map<string, number>();
  #last: number | null = null;
  readonly #totals = { records: 0, splitsWithRecords: 0, retries: 0, failures: 0, lost: 0, cuts: 0 };
  /** The most recent completions, newest first (`rec`: the record, when the caller gave it). */
  readonly recent: { id: string; at: number; rec?: SplitRecord }[] = [];

  constructor(now: number) {
    this.#now = now;
  }

  /** Counts one readable split, by its facts (`rec`: its record, kept with it when it is one of the recent completions). */
  add(id: string, f: SplitFacts, rec?: SplitRecord): void {
    if (f.started !== null && (this.#started === null || f.started < this.#started)) this.#started = f.started;
    const t = this.#totals;
    t.failures += f.failures;
    t.lost += f.lost;
    t.retries += f.retries;
    t.cuts += f.cuts;
    if (f.records !== undefined) {
      t.records += f.records;
      t.splitsWithRecords++;
    }
    if (f.status === "runnable") {
      const x = f.fraction ?? 0;
      this.#remaining += f.weight * (1 - x);
      this.#partial += f.weight * x;
    }
    if (f.status !== "completed") return;
    const at = f.completedAt;
    if (at === null) {
      this.#untimed++;
      return;
    }
    this.#timed++;
    if (this.#last === null || at > this.#last) this.#last = at;
    this.#lately(at, f.weight, f.completedBy!);
    if (this.recent.length < RECENT_LISTED || at > this.recent[this.recent.length - 1].at) {
      let i = this.recent.findIndex((x) => at > x.at);
      if (i < 0) i = this.recent.length;
      this.recent.splice(i, 0, rec ? { id, at, rec } : { id, at });
      if (this.recent.length > RECENT_LISTED) this.recent.pop();
    }
  }

  /** Counts a completion into the window, the members' rates and the sparkline, by its age. */
  #lately(at: number, weight: number, by: string): void {
    const age = this.#now - at;
    if (age <= RATE_WINDOW_MS) {
      this.#inWindow++;
      this.#weightInWindow += weight;
      this.#byMember.set(by, (this.#byMember.get(by) ?? 0) + 1);
    }
    if (age < SPARK_MAX_MS) this.#times.push(age);
  }

  /**
   * A fold made from sums kept elsewhere (the live index's): what `add`
   * would have summed over every split, the completions of the last ten
   * minutes (the window, the members' rates and the sparkline are counted
   * from them here) and the recent ones, newest first.
   */
  static of(now: number, p: RateParts): RateFold {
    const r = new RateFold(now);
    r.#started = p.started;
    r.#last = p.last;
    r.#timed = p.timed;
    r.#untimed = p.untimed;
    r.#remaining = p.remaining;
    r.#partial = p.partial;
    Object.assign(r.#totals, p.totals);
    for (const c of p.lately) r.#lately(c.at, c.weight, c.by);
    r.recent.push(...p.recent);
    return r;
  }

  /** Splits this member completed within the rate window, per minute (`null` when the window is empty). */
  memberPerMinute(instance: string, windowMs: number): number {
    return windowMs > 0 ? ((this.#byMember.get(instance) ?? 0) * 60_000) / windowMs : 0;
  }

  /** The measuring window: the rate window, or the time since the job began if that is shorter. */
  windowMs(): number {
    return this.#started === null ? 0 : Math.max(0, Math.min(RATE_WINDOW_MS, this.#now - this.#started));
  }

  /** The view's rate, ETA and sparkline. */
  finish(runnable: number, quarantined: number): FleetRate {
    const windowMs = this.windowMs();
    const perMinute = windowMs > 0 ? (this.#inWindow * 60_000) / windowMs : null;
    const weightPerMs = windowMs > 0 ? this.#weightInWindow / windowMs : 0;
    const eta = etaOf(this.#now, runnable, quarantined, this.#remaining, weightPerMs);
    return {
      windowMs,
      startedAt: this.#started,
      completedInWindow: this.#inWindow,
      weightInWindow: this.#weightInWindow,
      perMinute,
      timed: this.#timed,
      untimed: this.#untimed,
      remainingWeight: this.#remaining,
      partialWeight: this.#partial,
      eta,
      spark: this.#spark(),
    };
  }

  /** What the job did: the totals, and the rate over the whole run (first start to last completion). */
  summary(): FleetSummary {
    const tookMs = this.#started !== null && this.#last !== null ? Math.max(0, this.#last - this.#started) : null;
    const t = this.#totals;
    return {
      ...t,
      startedAt: this.#started,
      lastCompletedAt: this.#last,
      tookMs,
      perMinute: tookMs ? (this.#timed * 60_000) / tookMs : null,
      recordsPerSecond: tookMs && t.records > 0 ? (t.records * 1000) / tookMs : null,
    };
  }

  #spark(): FleetRate["spark"] {
    const life = this.#started === null ? 0 : this.#now - this.#started;
    const span = Math.min(SPARK_MAX_MS, Math.max(SPARK_MIN_MS, life));
    const bucketMs = Math.ceil(span / SPARK_BUCKETS / 1000) * 1000;
    const counts: number[] = new Array(SPARK_BUCKETS).fill(0);
    for (const age of this.#times) {
      const b = Math.floor(Math.max(0, age) / bucketMs);
      if (b < SPARK_BUCKETS) counts[SPARK_BUCKETS - 1 - b]++;
    }
    return { bucketMs, counts };
  }
}
