/**
 * The fleet view of a large job without its split records: the `job`,
 * `plan` and `leader` records and the member records — O(members) reads,
 * whatever the number of splits. The counts come from the job's outcome
 * once it has one, else from the leader's last beat (`JobCounts`: counts,
 * weights and the completion rate by the times in the split records);
 * each member's load is the number of splits it reported holding. What
 * only the split records know — the split lists, the recent completions,
 * the sparkline, the result's records, retries and failures, permanent
 * quarantines before the outcome, unreadable split records — is absent
 * (`basis: "beat"`). `splitlease status` and `wait` show this for a job
 * of more than {@linkcode FULL_READ_MAX_SPLITS} splits, and `/fleet` while
 * its live index is being built.
 *
 * @module
 */
import {
  type LeaderRecord,
  LeaderRecordSchema,
  type MemberRecord,
  MemberRecordSchema,
  type PlanRecord,
  PlanRecordSchema,
  safeDecodeRecord,
} from "../records.ts";
import { keys } from "../store/keys.ts";
import type { Store, StoreEntry } from "../store/store.ts";
import { etaOf, SPARK_BUCKETS, SPARK_MAX_MS, SPARK_MIN_MS } from "./fleet_rate.ts";
import { buildFleetView, normalizeFleetQuery, pageOf } from "./fleet_view.ts";
import { readFleetSnapshot } from "./read_fleet.ts";
import type { FleetLiveness } from "./fleet_member.ts";
import type { FleetQuery, FleetState } from "./fleet_query.ts";
import type { FleetView } from "./types.ts";
import { emptyCounts, fingerprintOf, livenessView, memberViews, planView } from "./view_parts.ts";

/**
 * Splits (planned, and cut from running ones) up to which `status`,
 * `wait` and `/fleet` read every record (a full read: about 0.3 s of CPU
 * per 10,000 splits on NATS); above it they read a summary
 * ({@linkcode readFleetSummary}) or, for `/fleet`, a live index.
 *
 * @example
 * ```ts
 * import { FULL_READ_MAX_SPLITS } from "@splitlease/splitlease/admin";
 * console.log(FULL_READ_MAX_SPLITS); // 10000
 * ```
 */
export const FULL_READ_MAX_SPLITS = 10_000;

/**
 * The records a summary is built from (see {@linkcode readFleetSummary}).
 *
 * @example
 * ```ts
 * import type { SummarySnapshot } from "@splitlease/splitlease/admin";
 * const empty: SummarySnapshot = { job: undefined, plan: undefined, leader: undefined, members: [], at: Date.now() };
 * ```
 */
export interface SummarySnapshot {
  /** The `job` record entry. */
  job: StoreEntry | undefined;
  /** The `plan` record entry. */
  plan: StoreEntry | undefined;
  /** The `leader` record entry. */
  leader: StoreEntry | undefined;
  /** Every `member.` entry. */
  members: readonly StoreEntry[];
  /** Wall-clock time of the read. */
  at: number;
}

/**
 * Reads what a summary is built from: the `job`, `plan` and `leader`
 * records and the member records (no split record, no page).
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { readSummarySnapshot } from "@splitlease/splitlease/admin";
 * const s = await readSummarySnapshot(new MemoryStore());
 * console.log(s.plan === undefined); // true
 * ```
 */
export async function readSummarySnapshot(store: Store, wallNow: () => number = Date.now): Promise<SummarySnapshot> {
  const at = wallNow();
  const [job, plan, leader, members] = await Promise.all([
    store.get(keys.job),
    store.get(keys.plan),
    store.get(keys.leader),
    store.list(keys.memberPrefix),
  ]);
  return { job, plan, leader, members, at };
}

/**
 * Splits a plan record counts (planned, and the residuals cut from running
 * ones that the leader's beat counts), or 0 without one: what decides
 * between a full read and a summary.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { readSummarySnapshot, splitsOf } from "@splitlease/splitlease/admin";
 * const large = splitsOf(await readSummarySnapshot(new MemoryStore())) > 10_000; // false
 * ```
 */
export function splitsOf(s: Pick<SummarySnapshot, "plan" | "leader">): number {
  const plan = s.plan ? safeDecodeRecord(s.plan.key, s.plan.value, PlanRecordSchema) : undefined;
  const leader = s.leader ? safeDecodeRecord(s.leader.key, s.leader.value, LeaderRecordSchema) : undefined;
  return (plan?.ok ? plan.value.planned : 0) + (leader?.ok ? leader.value.counts?.cut ?? 0 : 0);
}

/**
 * The summary of a job from its `job`, `plan`, `leader` and member records
 * (pure; see the module doc for what it holds and what it cannot).
 *
 * @example
 * ```ts
 * import { buildFleetSummary } from "@splitlease/splitlease/admin";
 * const v = buildFleetSummary({ job: undefined, plan: undefined, leader: undefined, members: [], at: Date.now() });
 * console.log(v.basis, v.counts.total); // "beat" 0
 * ```
 */
export function buildFleetSummary(s: SummarySnapshot, query: FleetQuery = {}, liveness?: FleetLiveness): FleetView {
  const q = normalizeFleetQuery(query);
  const invalid: { key: string; message: string }[] = [];
  const decode = <T>(e: StoreEntry | undefined, schema: Parameters<typeof safeDecodeRecord<T>>[2]): T | undefined => {
    if (!e) return undefined;
    const r = safeDecodeRecord(e.key, e.value, schema);
    if (r.ok) return r.value;
    invalid.push({ key: e.key, message: r.error.message });
    return undefined;
  };
  const plan = decode<PlanRecord>(s.plan, PlanRecordSchema);
  const leader = decode<LeaderRecord>(s.leader, LeaderRecordSchema);
  const members = new Map<string, MemberRecord>();
  const held = new Map<string, number>(); // "instance/session" -> splits it reported holding
  for (const e of s.members) {
    const m = decode<MemberRecord>(e, MemberRecordSchema);
    if (!m) continue;
    const instance = e.key.slice(keys.memberPrefix.length);
    members.set(instance, m);
    held.set(instance + "/" + m.session, m.held ?? 0);
  }
  const counts = emptyCounts();
  const c = leader?.counts;
  const o = plan?.outcome;
  if (o && o.kind !== "planFailed") {
    // A decided end counts from its record: every split is completed, cancelled or quarantined.
    counts.completed = o.completed;
    counts.quarantined = o.kind === "stalled" ? o.quarantined : 0;
    counts.permanent = o.kind === "stalled" ? o.permanent ?? 0 : 0;
    counts.cancelled = o.cancelled ?? 0;
  } else if (c) {
    counts.runnable = c.runnable;
    counts.unclaimed = c.unowned;
    counts.owned = Math.max(0, c.runnable - c.unowned);
    counts.completed = c.completed;
    counts.quarantined = c.quarantined;
    counts.cancelled = c.cancelled;
  }
  counts.total = counts.runnable + counts.completed + counts.quarantined + counts.cancelled;
  counts.unowned = counts.unclaimed;
  // Weights from the beat; a leader that publishes none (an older version) counts each split as 1.
  const w = c?.weight;
  const ended = o !== undefined && o.kind !== "planFailed";
  counts.weight = w && !ended ? w.total : counts.total;
  counts.completedWeight = w && !ended ? w.completed : counts.completed;
  const runnableWeight = w && !ended ? w.runnable : counts.runnable;
  const left = w && !ended ? Math.min(w.left, runnableWeight) : runnableWeight;

  const r = c?.rate;
  const windowMs = r?.ms ?? 0;
  const eta = etaOf(r?.at ?? s.at, counts.runnable, counts.quarantined, left, r && r.ms > 0 ? r.w / r.ms : 0);
  if (eta.at !== null) eta.inMs = Math.max(0, eta.at - s.at);
  const life = r?.since === null || r?.since === undefined ? 0 : s.at - r.since;
  const span = Math.min(SPARK_MAX_MS, Math.max(SPARK_MIN_MS, life));
  // Matching splits by the counts (a query by owner or text cannot be answered without the records).
  const has = (st: FleetState) => q.state === null || q.state.includes(st);
  const matched = q.owner !== null || q.match !== null ? 0 : (has("completed") ? counts.completed : 0) +
    (has("quarantined") ? counts.quarantined : 0) + (has("cancelled") ? counts.cancelled : 0) +
    (has("runnable") ? counts.runnable : (has("owned") ? counts.owned : 0) + (has("unclaimed") ? counts.unclaimed : 0));
  return {
    at: s.at,
    basis: "beat",
    fingerprint: fingerprintOf(s.job?.value),
    leader: leader ? { instance: leader.instance, term: leader.term, beat: leader.beat } : null,
    plan: planView(plan),
    liveness: livenessView(liveness, leader),
    members: memberViews(members, held, () => 0, leader, s.at, liveness),
    counts,
    rate: {
      windowMs,
      startedAt: r?.since ?? null,
      completedInWindow: r?.n ?? 0,
      weightInWindow: r?.w ?? 0,
      perMinute: r && r.ms > 0 ? (r.n * 60_000) / r.ms : null,
      timed: counts.completed,
      untimed: 0,
      remainingWeight: left,
      partialWeight: Math.max(0, runnableWeight - left),
      eta,
      // Only the records know when each split completed.
      spark: { bucketMs: Math.ceil(span / SPARK_BUCKETS / 1000) * 1000, counts: [] },
    },
    summary: {
      records: 0,
      splitsWithRecords: 0,
      retries: 0,
      failures: 0,
      lost: 0,
      cuts: 0,
      startedAt: r?.since ?? null,
      lastCompletedAt: null,
      tookMs: null,
      perMinute: null,
      recordsPerSecond: null,
    },
    recent: [],
    splits: [],
    page: pageOf(q, matched, null),
    invalid,
  };
}

/**
 * Reads the summary of a job: its `job`, `plan`, `leader` and member records
 * only (see the module doc), for a job too large to read every record of
 * at each look.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { readFleetSummary } from "@splitlease/splitlease/admin";
 * const v = await readFleetSummary(new MemoryStore());
 * console.log(v.counts.completed, v.rate.eta.state);
 * ```
 */
export async function readFleetSummary(
  store: Store,
  options: { liveness?: FleetLiveness; wallNow?: () => number } = {},
): Promise<FleetView> {
  return buildFleetSummary(await readSummarySnapshot(store, options.wallNow), {}, options.liveness);
}


/**
 * Options of {@linkcode readFleetOverview}.
 *
 * @example
 * ```ts
 * import type { OverviewOptions } from "@splitlease/splitlease/admin";
 * const o: OverviewOptions = { full: true };
 * ```
 */
export interface OverviewOptions {
  /** Read every record whatever the job's size (a full read: `splitlease status --full`). */
  full?: boolean;
  /** Splits above which the summary is read (default {@linkcode FULL_READ_MAX_SPLITS}). */
  fullReadMax?: number;
  /** Liveness as the leader judges it (on the leader). */
  liveness?: FleetLiveness;
  /** Wall clock (default `Date.now`). */
  wallNow?: () => number;
}

/**
 * What `splitlease status` and `wait` show of a job: a full read of its
 * records (`readFleet`, one split listed at most) while it has at most
 * {@linkcode FULL_READ_MAX_SPLITS} splits, else its summary
 * ({@linkcode buildFleetSummary}: `basis: "beat"`), which costs O(members)
 * reads whatever its size. The small records are read once either way.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { readFleetOverview } from "@splitlease/splitlease/admin";
 * const v = await readFleetOverview(new MemoryStore());
 * console.log(v.basis); // "records": an empty job is a small one
 * ```
 */
export async function readFleetOverview(store: Store, options: OverviewOptions = {}): Promise<FleetView> {
  const wallNow = options.wallNow ?? Date.now;
  if (!options.full) {
    const small = await readSummarySnapshot(store, wallNow);
    if (splitsOf(small) > (options.fullReadMax ?? FULL_READ_MAX_SPLITS)) return buildFleetSummary(small, { limit: 1 }, options.liveness);
  }
  return buildFleetView(await readFleetSnapshot(store, wallNow), { limit: 1 }, options.liveness);
}
