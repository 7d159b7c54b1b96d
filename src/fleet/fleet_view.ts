/**
 * The fleet view, pure part: turns a snapshot of a job's records (members,
 * plan, leader, split records) into what an operator reads — members with
 * their load, job-wide counts, the rate and ETA from the completion times
 * the records hold (`fleet_rate.ts`), the recent completions, and one page
 * of splits filtered by state, owner and search text — without touching the
 * store. Splits are folded in one pass, keeping
 * only the page, so 100k split records cost O(S) time and O(page) memory
 * beyond the listing itself. {@linkcode readFleet} (`read_fleet.ts`) reads
 * the snapshot.
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
  liveSplitRecord,
  pagedRecord,
  type PageRecord,
  PageRecordSchema,
  type ProgRecord,
  ProgRecordSchema,
  safeDecodeRecord,
  type SplitRecord,
  SplitRecordSchema,
} from "../records.ts";
import type { ZodType } from "zod";
import { permanentlyFailed } from "../records/transitions.ts";
import { SplitleaseError } from "../errors.ts";
import { isValidId, keys } from "../store/keys.ts";
import type { StoreEntry } from "../store/store.ts";
import { completedAt, fractionDone, RateFold, type SplitFacts, splitFacts } from "./fleet_rate.ts";
import { countSplit, emptyCounts, fingerprintOf, livenessView, memberViews, planView } from "./view_parts.ts";
import type { FleetLiveness } from "./fleet_member.ts";
import type { FleetQuery, FleetState } from "./fleet_query.ts";
import type { FleetSplit } from "./fleet_split.ts";
import type { FleetSnapshot, FleetView } from "./types.ts";

/** Every state a query filters on, in the order a fleet view lists them (`owned` and `unclaimed` split `runnable`). */
export const FLEET_STATES: readonly FleetState[] = ["runnable", "owned", "unclaimed", "completed", "quarantined", "cancelled"];
/** Old words for states, still accepted: the CLI's `status` and the fleet page said running and waiting, `/fleet` unowned. */
export const FLEET_STATE_ALIASES: Readonly<Record<string, FleetState>> = { running: "owned", waiting: "unclaimed", unowned: "unclaimed" };
export { UI_INSTANCE_PREFIX } from "./view_parts.ts";
/** Default page size of {@linkcode FleetQuery.limit}. */
const DEFAULT_LIMIT = 100;
/** Largest page {@linkcode FleetQuery.limit} allows. */
const MAX_LIMIT = 1000;
/** Unreadable records named in a view at most (all are counted). */
const MAX_INVALID_LISTED = 20;
/** Longest {@linkcode FleetQuery.match}. */
const MAX_MATCH = 200;


/** A fleet query with its defaults applied (what {@linkcode normalizeFleetQuery} returns); `match` in lower case. */
export interface NormalizedFleetQuery {
  state: FleetState[] | null;
  owner: string | null;
  after: string | null;
  limit: number;
  match: string | null;
}

/**
 * Checks a query and applies its defaults; throws `INVALID_ARGUMENT` naming
 * the bad field and its value.
 *
 * @example
 * ```ts
 * normalizeFleetQuery({ state: "quarantined" }); // { state: ["quarantined"], owner: null, after: null, limit: 100 }
 * ```
 */
export function normalizeFleetQuery(q: FleetQuery = {}): NormalizedFleetQuery {
  const bad = (what: string, value: unknown, rule: string) =>
    new SplitleaseError("INVALID_ARGUMENT", `Fleet query: ${what} ${JSON.stringify(value) ?? String(value)} ${rule}`);
  let state: FleetState[] | null = null;
  if (q.state !== undefined) {
    const given: string[] = typeof q.state === "string" ? [q.state] : [...q.state];
    const list = given.map((s) => FLEET_STATE_ALIASES[s] ?? s);
    for (const [i, s] of list.entries()) {
      if (!FLEET_STATES.includes(s as FleetState)) throw bad("state", given[i], `is not one of ${FLEET_STATES.join(", ")}`);
    }
    state = FLEET_STATES.filter((s) => list.includes(s));
  }
  if (q.owner !== undefined && !isValidId(q.owner)) throw bad("owner", q.owner, "is not an instance id (1-128 of [A-Za-z0-9_-])");
  if (q.after !== undefined && !isValidId(q.after)) throw bad("after", q.after, "is not a split id (1-128 of [A-Za-z0-9_-])");
  const limit = q.limit ?? DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw bad("limit", limit, `must be an integer from 1 to ${MAX_LIMIT}`);
  if (q.match !== undefined && (typeof q.match !== "string" || q.match.length < 1 || q.match.length > MAX_MATCH)) {
    throw bad("match", q.match, `must be 1-${MAX_MATCH} characters`);
  }
  return { state, owner: q.owner ?? null, after: q.after ?? null, limit, match: q.match?.toLowerCase() ?? null };
}

/**
 * The `limit` of a fleet query given as text (a URL parameter): an integer
 * from 1 to 1000, else `INVALID_ARGUMENT` echoing the text as sent
 * (`limit "-1" must be …`, never the `null` of a number that failed to parse).
 */
export function parseFleetLimit(text: string): number {
  const n = /^\d{1,9}$/.test(text) ? Number(text) : NaN;
  if (!(n >= 1 && n <= MAX_LIMIT)) {
    throw new SplitleaseError("INVALID_ARGUMENT", `Fleet query: limit ${JSON.stringify(text)} must be an integer from 1 to ${MAX_LIMIT}`);
  }
  return n;
}

/**
 * A bounded JSON preview of `value`: its JSON text, cut to `max` characters
 * (the last one an ellipsis) — for descriptors and source state in views
 * and logs.
 *
 * @example
 * ```ts
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

/** The fleet view of one split record (also `GET /fleet/splits/:id`). */
export function splitView(id: string, r: SplitRecord): FleetSplit {
  const p = r.progress;
  const tenancies = r.tenancies ?? [];
  const open = tenancies[tenancies.length - 1];
  return {
    id,
    status: r.status,
    state: r.status !== "runnable" ? r.status : r.owner ? "owned" : "unclaimed",
    owner: r.owner?.instance ?? null,
    epoch: r.epoch,
    attempts: r.attempts,
    permanent: permanentlyFailed(r),
    weight: r.weight,
    progress: p
      ? { watermark: p.watermark ?? null, state: p.state === undefined ? null : jsonPreview(p.state, 120) }
      : null,
    descriptor: r.spec ? null : r.descriptor === undefined ? null : jsonPreview(r.descriptor),
    spec: r.spec === true,
    lastFailure: r.lastFailure ?? null,
    failures: r.failures ?? [],
    estimate: p?.estimate ?? null,
    fraction: fractionDone(r),
    since: r.status === "runnable" && r.owner && open && open.to === undefined && open.owner === r.owner.instance ? open.from : null,
    completedAt: completedAt(r),
    tenancies,
    parent: r.parent ?? null,
    cuts: r.cuts ?? 0,
    records: r.records ?? null,
    run: r.run ?? 1,
    runs: r.runs ?? [],
  };
}

/** Whether a split matches the search text (lower case): its id, owner or descriptor preview contains it. */
function matches(id: string, r: SplitRecord, text: string): boolean {
  if (id.toLowerCase().includes(text) || (r.owner?.instance.toLowerCase().includes(text) ?? false)) return true;
  return !r.spec && r.descriptor !== undefined && jsonPreview(r.descriptor).toLowerCase().includes(text);
}

/**
 * Builds a fleet view from a snapshot (pure: no store access). Members are
 * judged by the leader's rule (`member_liveness.ts`): with `liveness` (the
 * view is built on the leader) by the leader's own judgement, otherwise by
 * each member's lease against the time of its last beat, at the
 * snapshot's time.
 *
 * @example
 * ```ts
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
  const members = new Map<string, MemberRecord>();
  for (const e of snapshot.members) {
    const m = decode<MemberRecord>(e, MemberRecordSchema);
    if (m) members.set(e.key.slice(keys.memberPrefix.length), m);
  }

  const counts = emptyCounts();
  const owned = new Map<string, number>(); // "instance/session" -> runnable splits it owns
  const page: { id: string; rec: SplitRecord }[] = []; // the `limit` smallest matching ids after the cursor, sorted
  let matched = 0, matchedAfter = 0;
  const rate = new RateFold(snapshot.at);
  const progs = new Map<string, ProgRecord>();
  for (const e of snapshot.progs ?? []) {
    const p = decode<ProgRecord>(e, ProgRecordSchema);
    if (p) progs.set(e.key.slice(keys.progPrefix.length), p);
  }
  const seen = new Set<string>();
  const facts = {} as SplitFacts;
  const consider = (id: string, rec: SplitRecord): void => {
    splitFacts(rec, facts);
    countSplit(counts, owned, facts);
    rate.add(id, facts, rec);
    if (!queryMatches(q, id, rec)) return;
    matched++;
    if (q.after !== null && id <= q.after) return;
    matchedAfter++;
    if (page.length === q.limit && id >= page[page.length - 1].id) return;
    // Sorted insert (a key-ordered listing always appends).
    let lo = 0, hi = page.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (page[mid].id < id) lo = mid + 1;
      else hi = mid;
    }
    page.splice(lo, 0, { id, rec });
    if (page.length > q.limit) page.pop();
  };
  for (const e of snapshot.splits) {
    const id = e.key.slice(keys.splitPrefix.length);
    seen.add(id);
    const r = safeDecodeRecord(e.key, e.value, SplitRecordSchema);
    if (!r.ok) {
      counts.invalid++;
      invalid.push({ key: e.key, message: r.error.message });
      continue;
    }
    consider(id, liveSplitRecord(r.value, progs.get(id)));
  }
  // Planned splits not dealt yet have no record of their own: they are on the plan's published pages.
  const published = plan?.pages ?? 0;
  for (const e of snapshot.pages ?? []) {
    if (e.key >= keys.page(published)) continue; // a run that never published
    const p = decode<PageRecord>(e, PageRecordSchema);
    for (const x of p?.splits ?? []) if (!seen.has(x.id)) (seen.add(x.id), consider(x.id, pagedRecord(x, p!)));
  }
  counts.unowned = counts.unclaimed; // the deprecated name
  invalid.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const windowMs = rate.windowMs();
  return {
    at: snapshot.at,
    basis: "records",
    fingerprint: fingerprintOf(snapshot.job?.value),
    leader: leader ? { instance: leader.instance, term: leader.term, beat: leader.beat } : null,
    plan: planView(plan),
    liveness: livenessView(liveness, leader),
    members: memberViews(members, owned, (i) => rate.memberPerMinute(i, windowMs), leader, snapshot.at, liveness),
    counts,
    rate: rate.finish(counts.runnable, counts.quarantined),
    summary: rate.summary(),
    recent: rate.recent.map((x) => splitView(x.id, x.rec!)),
    splits: page.map((p) => splitView(p.id, p.rec)),
    page: pageOf(q, matched, matchedAfter > q.limit ? page[page.length - 1].id : null),
    invalid: invalid.slice(0, MAX_INVALID_LISTED),
  };
}

/** The `page` of a view: its query, how many splits match it, and the next page's cursor. */
export function pageOf(q: NormalizedFleetQuery, matched: number, next: string | null): FleetView["page"] {
  return { limit: q.limit, after: q.after, state: q.state, owner: q.owner, match: q.match, matched, next };
}

/** Whether a split (its live record) matches a query's state, owner and search text (not its cursor). */
export function queryMatches(q: NormalizedFleetQuery, id: string, rec: SplitRecord): boolean {
  if (q.state && !q.state.includes(rec.status) && !(rec.status === "runnable" && q.state.includes(rec.owner ? "owned" : "unclaimed"))) {
    return false;
  }
  if (q.owner !== null && rec.owner?.instance !== q.owner) return false;
  return q.match === null || matches(id, rec, q.match);
}
