/**
 * The fleet view, pure part: turns a snapshot of a job's records (members,
 * plan, leader, split records) into what an operator reads — members with
 * their load, job-wide counts, and one page of splits filtered by state and
 * owner — without touching the store. Splits are folded in one pass, keeping
 * only the page, so 100k split records cost O(S) time and O(page) memory
 * beyond the listing itself. {@linkcode readFleet} (`read_fleet.ts`) reads
 * the snapshot.
 *
 * @module
 */
import {
  type JobOutcome,
  type LeaderRecord,
  LeaderRecordSchema,
  type MemberRecord,
  MemberRecordSchema,
  type PlanRecord,
  PlanRecordSchema,
  safeDecodeRecord,
  type SplitFailure,
  type SplitRecord,
  SplitRecordSchema,
  type SplitStatus,
} from "../records.ts";
import type { ZodType } from "zod";
import { SplitleaseError } from "../errors.ts";
import { isValidId, keys } from "../store/keys.ts";
import type { StoreEntry } from "../store/store.ts";

/** Every split status, in the order a fleet view lists them. */
const STATUSES: readonly SplitStatus[] = ["runnable", "completed", "quarantined", "cancelled"];
/** Default page size of {@linkcode FleetQuery.limit}. */
const DEFAULT_LIMIT = 100;
/** Largest page {@linkcode FleetQuery.limit} allows. */
const MAX_LIMIT = 1000;
/** Unreadable records named in a view at most (all are counted). */
const MAX_INVALID_LISTED = 20;

/**
 * Which splits a fleet view lists, and which page of them.
 *
 * @example
 * ```ts
 * import type { FleetQuery } from "@splitlease/splitlease";
 * const q: FleetQuery = { state: "quarantined", limit: 50 };
 * const next: FleetQuery = { ...q, after: "split-0049" }; // the page after
 * ```
 */
export interface FleetQuery {
  /** Only splits in this state (or these states). Default: every state. */
  state?: SplitStatus | readonly SplitStatus[];
  /** Only splits whose record names this instance as owner. */
  owner?: string;
  /** Cursor: only splits whose id sorts after this one (the `page.next` of the previous page). */
  after?: string;
  /** Splits per page: 1 to 1000, default 100. */
  limit?: number;
}

/**
 * How liveness is judged in a view: only the leader judges members (on its
 * own clock, from their heartbeats); elsewhere a view reports each member's
 * `beat` counter and says who judges.
 *
 * @example
 * ```ts
 * import type { FleetLiveness } from "@splitlease/splitlease";
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
 * import type { FleetMember } from "@splitlease/splitlease";
 * function line(m: FleetMember): string {
 *   return `${m.instance} ${m.owned}/${m.maxInFlight} ${m.alive === null ? `beat ${m.beat}` : m.alive ? "alive" : "dead"}`;
 * }
 * ```
 */
export interface FleetMember {
  /** Instance id. */
  instance: string;
  /** Process session nonce. */
  session: string;
  /** Runtime and version, e.g. `deno 2.9.6`. */
  runtime: string;
  /** splitlease version. */
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
  /** Alive as judged here (on the leader), or `null` where liveness is not judged (any other member, the CLI). */
  alive: boolean | null;
}

/**
 * A split as a fleet view shows it: state, owner, epoch, attempts, progress,
 * a bounded preview of its descriptor and its failure history.
 *
 * @example
 * ```ts
 * import type { FleetSplit } from "@splitlease/splitlease";
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
  /** Owner instance, or `null` when free. */
  owner: string | null;
  /** Fencing epoch (grows with every ownership change). */
  epoch: number;
  /** Non-graceful ends so far. */
  attempts: number;
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
}

/**
 * Job-wide split counts of a fleet view (every split, whatever the filter).
 *
 * @example
 * ```ts
 * import type { FleetCounts } from "@splitlease/splitlease";
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
  /** Runnable splits without an owner (the backlog). */
  unowned: number;
  /** Completed splits. */
  completed: number;
  /** Quarantined (poison) splits, parked until requeued. */
  quarantined: number;
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
 * import { MemoryStore, readFleet, type FleetView } from "@splitlease/splitlease";
 * const view: FleetView = await readFleet(new MemoryStore(), { state: "quarantined" });
 * console.log(view.counts.quarantined, view.splits.map((s) => s.id));
 * ```
 */
export interface FleetView {
  /** Wall-clock time of the read (ms since the epoch). */
  at: number;
  /** The job's fingerprint, or `null` before the first worker joined. */
  fingerprint: string | null;
  /** The leader as its record names it, or `null`. */
  leader: { instance: string; term: number; beat: number } | null;
  /** The plan, or `null` before the first leader. */
  plan:
    | { term: number; finality: "open" | "final"; generation: number; planned: number; outcome: JobOutcome["kind"] | null }
    | null;
  /** Who judged liveness: this view's server (the leader), or nobody here (see `FleetMember.alive`). */
  liveness: { judgedBy: "here"; by: string } | { judgedBy: "leader"; leader: string | null };
  /** Every member record, by instance id. */
  members: FleetMember[];
  /** Job-wide counts. */
  counts: FleetCounts;
  /** One page of the splits that match the query, by id. */
  splits: FleetSplit[];
  /** The page: its query, the number of matching splits, and the cursor of the next page (`null`: last page). */
  page: { limit: number; after: string | null; state: SplitStatus[] | null; owner: string | null; matched: number; next: string | null };
  /** Unreadable records (the first 20 by key; `counts.invalid` counts the split records) and their problem. */
  invalid: { key: string; message: string }[];
}

/**
 * A snapshot of a job's records, as {@linkcode readFleetSnapshot} reads it.
 *
 * @example
 * ```ts
 * import { buildFleetView, type FleetSnapshot } from "@splitlease/splitlease";
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
  /** Wall-clock time of the read. */
  at: number;
}

/**
 * Checks a query and applies its defaults; throws `INVALID_ARGUMENT` naming
 * the bad field and its value.
 *
 * @example
 * ```ts
 * import { normalizeFleetQuery } from "@splitlease/splitlease";
 * normalizeFleetQuery({ state: "quarantined" }); // { state: ["quarantined"], owner: null, after: null, limit: 100 }
 * ```
 */
export function normalizeFleetQuery(
  q: FleetQuery = {},
): { state: SplitStatus[] | null; owner: string | null; after: string | null; limit: number } {
  const bad = (what: string, value: unknown, rule: string) =>
    new SplitleaseError("INVALID_ARGUMENT", `Fleet query: ${what} ${JSON.stringify(value) ?? String(value)} ${rule}`);
  let state: SplitStatus[] | null = null;
  if (q.state !== undefined) {
    const list = typeof q.state === "string" ? [q.state] : [...q.state];
    for (const s of list) if (!STATUSES.includes(s)) throw bad("state", s, `is not one of ${STATUSES.join(", ")}`);
    state = STATUSES.filter((s) => list.includes(s));
  }
  if (q.owner !== undefined && !isValidId(q.owner)) throw bad("owner", q.owner, "is not an instance id (1-128 of [A-Za-z0-9_-])");
  if (q.after !== undefined && !isValidId(q.after)) throw bad("after", q.after, "is not a split id (1-128 of [A-Za-z0-9_-])");
  const limit = q.limit ?? DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw bad("limit", limit, `must be an integer from 1 to ${MAX_LIMIT}`);
  return { state, owner: q.owner ?? null, after: q.after ?? null, limit };
}

/**
 * A bounded JSON preview of `value`: its JSON text, cut to `max` characters
 * (the last one an ellipsis) — for descriptors and source state in views
 * and logs.
 *
 * @example
 * ```ts
 * import { jsonPreview } from "@splitlease/splitlease";
 * jsonPreview({ from: 0, to: 1000 }); // '{"from":0,"to":1000}'
 * jsonPreview("x".repeat(500), 20).length; // 20
 * ```
 */
export function jsonPreview(value: unknown, max = 160): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length <= max ? text : text.slice(0, Math.max(0, max - 1)) + "…";
}

function splitView(id: string, r: SplitRecord): FleetSplit {
  const p = r.progress;
  return {
    id,
    status: r.status,
    owner: r.owner?.instance ?? null,
    epoch: r.epoch,
    attempts: r.attempts,
    weight: r.weight,
    progress: p
      ? { watermark: p.watermark ?? null, state: p.state === undefined ? null : jsonPreview(p.state, 120) }
      : null,
    descriptor: r.spec ? null : r.descriptor === undefined ? null : jsonPreview(r.descriptor),
    spec: r.spec === true,
    lastFailure: r.lastFailure ?? null,
    failures: r.failures ?? [],
  };
}

/**
 * Builds a fleet view from a snapshot (pure: no store access). Liveness is
 * judged only when `liveness` is given — by the leader, from its own view;
 * otherwise each member shows its `beat` and `alive: null`.
 *
 * @example
 * ```ts
 * import { buildFleetView } from "@splitlease/splitlease";
 * const split = { key: "split.a", revision: 1, value: JSON.stringify({
 *   v: 2, epoch: 3, status: "quarantined", owner: null, attempts: 4, weight: 1, progress: null, descriptor: { file: "a" },
 * }) };
 * const view = buildFleetView(
 *   { job: undefined, plan: undefined, leader: undefined, members: [], splits: [split], at: Date.now() },
 *   { state: "quarantined" },
 * );
 * console.log(view.splits[0].descriptor); // {"file":"a"}
 * ```
 */
export function buildFleetView(snapshot: FleetSnapshot, query: FleetQuery = {}, liveness?: FleetLiveness): FleetView {
  const q = normalizeFleetQuery(query);
  const invalid: { key: string; message: string }[] = [];
  const decode = <T>(e: StoreEntry | undefined, schema: ZodType<T>): T | undefined => {
    if (!e) return undefined;
    const r = safeDecodeRecord(e.key, e.value, schema);
    if (r.ok) return r.value;
    invalid.push({ key: e.key, message: r.error.message });
    return undefined;
  };
  const plan = decode<PlanRecord>(snapshot.plan, PlanRecordSchema);
  const leader = decode<LeaderRecord>(snapshot.leader, LeaderRecordSchema);
  let fingerprint: string | null = null;
  if (snapshot.job) {
    try {
      const j = JSON.parse(snapshot.job.value) as { fingerprint?: unknown };
      if (typeof j.fingerprint === "string") fingerprint = j.fingerprint;
    } catch { /* an unreadable job record is the coordinator's to report */ }
  }
  const members = new Map<string, MemberRecord>();
  for (const e of snapshot.members) {
    const m = decode<MemberRecord>(e, MemberRecordSchema);
    if (m) members.set(e.key.slice(keys.memberPrefix.length), m);
  }

  const counts: FleetCounts = {
    total: 0, runnable: 0, owned: 0, unowned: 0, completed: 0, quarantined: 0, cancelled: 0, invalid: 0, weight: 0, completedWeight: 0,
  };
  const owned = new Map<string, number>(); // "instance/session" -> runnable splits it owns
  const page: { id: string; rec: SplitRecord }[] = []; // the `limit` smallest matching ids after the cursor, sorted
  let matched = 0, matchedAfter = 0;
  for (const e of snapshot.splits) {
    const id = e.key.slice(keys.splitPrefix.length);
    const r = safeDecodeRecord(e.key, e.value, SplitRecordSchema);
    if (!r.ok) {
      counts.invalid++;
      invalid.push({ key: e.key, message: r.error.message });
      continue;
    }
    const rec = r.value;
    counts.total++;
    counts[rec.status]++;
    counts.weight += rec.weight;
    if (rec.status === "completed") counts.completedWeight += rec.weight;
    if (rec.status === "runnable") {
      if (rec.owner) {
        counts.owned++;
        const k = rec.owner.instance + "/" + rec.owner.session;
        owned.set(k, (owned.get(k) ?? 0) + 1);
      } else counts.unowned++;
    }
    if (q.state && !q.state.includes(rec.status)) continue;
    if (q.owner !== null && rec.owner?.instance !== q.owner) continue;
    matched++;
    if (q.after !== null && id <= q.after) continue;
    matchedAfter++;
    if (page.length === q.limit && id >= page[page.length - 1].id) continue;
    // Sorted insert (a key-ordered listing always appends).
    let lo = 0, hi = page.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (page[mid].id < id) lo = mid + 1;
      else hi = mid;
    }
    page.splice(lo, 0, { id, rec });
    if (page.length > q.limit) page.pop();
  }
  invalid.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));

  const live = liveness ? new Set(liveness.liveMembers) : undefined;
  const memberViews: FleetMember[] = [...members].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([instance, m]) => ({
    instance,
    session: m.session,
    runtime: m.runtime,
    version: m.version,
    maxInFlight: m.maxInFlight,
    owned: owned.get(instance + "/" + m.session) ?? 0,
    held: m.held ?? null,
    beat: m.beat,
    draining: m.draining === true,
    planner: m.planner === true,
    leader: leader?.instance === instance && leader.session === m.session,
    alive: live ? live.has(instance) : null,
  }));

  return {
    at: snapshot.at,
    fingerprint,
    leader: leader ? { instance: leader.instance, term: leader.term, beat: leader.beat } : null,
    plan: plan
      ? {
        term: plan.term,
        finality: plan.finality,
        generation: plan.generation,
        planned: plan.planned,
        outcome: plan.outcome?.kind ?? null,
      }
      : null,
    liveness: liveness ? { judgedBy: "here", by: liveness.by } : { judgedBy: "leader", leader: leader?.instance ?? null },
    members: memberViews,
    counts,
    splits: page.map((p) => splitView(p.id, p.rec)),
    page: {
      limit: q.limit,
      after: q.after,
      state: q.state,
      owner: q.owner,
      matched,
      next: matchedAfter > q.limit ? page[page.length - 1].id : null,
    },
    invalid: invalid.slice(0, MAX_INVALID_LISTED),
  };
}
