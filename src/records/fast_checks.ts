/**
 * Hand-written checks of the hot records (split, member, assignment, leader),
 * the twins of their schemas: a record is decoded on every watch event and
 * zod costs several times more, so `decodeRecord` runs these first and zod
 * only explains a value they refused. (Every member decodes each leader
 * beat; zod's first parse of a record carrying job counts compiled the
 * counts' schema, 5.9 ms of CPU measured in the middle of a hand-back.)
 *
 * @module
 */
import type { z } from "zod";
import { ID_RE } from "./layout.ts";
import { type AssignRecord, AssignRecordSchema } from "./assign.ts";
import { type MemberRecord, MemberRecordSchema } from "./member.ts";
import { type LeaderRecord, LeaderRecordSchema, QUARANTINED_IDS_PUBLISHED } from "./job.ts";
import { type ProgRecord, ProgRecordSchema } from "./prog.ts";
import { PAGE_SPLITS, type PageRecord, PageRecordSchema } from "./page.ts";
import { MAX_RESIDUALS } from "./residual.ts";
import { type SplitRecord, SplitRecordSchema } from "./split.ts";
import { estimateProblem } from "./split_progress.ts";
import { SPLIT_RUN_HISTORY } from "./split_run.ts";
import { TENANCY_ENDS } from "./split_tenancy.ts";

type Obj = Record<string, unknown>;
/** Whether `x` is a plain object (not null, not an array). */
export const isObj = (x: unknown): x is Obj => typeof x === "object" && x !== null && !Array.isArray(x);
const isCount = (x: unknown): x is number => typeof x === "number" && Number.isInteger(x) && x >= 0;
const isOwner = (x: unknown): boolean =>
  isObj(x) && typeof x.instance === "string" && ID_RE.test(x.instance) && typeof x.session === "string" &&
  x.session.length > 0;

/** Whether `x` is a valid split record (the hand-written twin of {@linkcode SplitRecordSchema}). */
export function isSplitRecord(x: unknown): x is SplitRecord {
  if (!isObj(x) || x.v !== 2 || !isCount(x.epoch) || !isCount(x.attempts)) return false;
  const s = x.status;
  if (s !== "runnable" && s !== "completed" && s !== "quarantined" && s !== "cancelled") return false;
  if (x.owner !== null && !isOwner(x.owner)) return false;
  const w = x.weight;
  if (typeof w !== "number" || !(w > 0) || !Number.isFinite(w)) return false;
  if (x.progress !== null && !isProgress(x.progress)) return false;
  if (x.spec !== undefined && x.spec !== true) return false;
  if (x.lastFailure !== undefined && typeof x.lastFailure !== "string") return false;
  if (x.failures !== undefined && !(Array.isArray(x.failures) && x.failures.every(isFailure))) return false;
  if (x.tenancies !== undefined && !(Array.isArray(x.tenancies) && x.tenancies.every(isTenancy))) return false;
  if (x.parent !== undefined && !(typeof x.parent === "string" && ID_RE.test(x.parent))) return false;
  if (x.root !== undefined && !(typeof x.root === "string" && ID_RE.test(x.root))) return false;
  if (x.cuts !== undefined && !isCount(x.cuts)) return false;
  if (x.records !== undefined && !isCount(x.records)) return false;
  if (x.closed !== undefined && !isCount(x.closed)) return false;
  if (x.prog !== undefined && !isCount(x.prog)) return false;
  if (x.residuals !== undefined) {
    if (!Array.isArray(x.residuals) || x.residuals.length > 4 * MAX_RESIDUALS || !x.residuals.every(isResidual)) return false;
  }
  if (x.run !== undefined && !isRun(x.run)) return false;
  if (x.runs !== undefined && !(Array.isArray(x.runs) && x.runs.length <= SPLIT_RUN_HISTORY && x.runs.every(isSplitRun))) return false;
  return true;
}

const isRun = (n: unknown): boolean => isCount(n) && n >= 1;
const STATUSES = new Set<unknown>(["runnable", "completed", "quarantined", "cancelled"]);
const isSplitRun = (r: unknown): boolean =>
  isObj(r) && isRun(r.run) && STATUSES.has(r.status) && isCount(r.epoch) && isCount(r.attempts) &&
  (r.records === undefined || isCount(r.records)) && (r.completedAt === undefined || isTime(r.completedAt)) &&
  (r.lastFailure === undefined || typeof r.lastFailure === "string") && (r.permanent === undefined || r.permanent === true);

/** A residual's descriptor is any JSON: the slow path (zod) checks it. */
const isResidual = (r: unknown): boolean =>
  isObj(r) && typeof r.id === "string" && ID_RE.test(r.id) && r.descriptor !== undefined && typeof r.weight === "number" &&
  r.weight > 0 && Number.isFinite(r.weight) && isJsonish(r.descriptor) && (r.epoch === undefined || isCount(r.epoch));
const isJsonish = (d: unknown): boolean =>
  d === null || typeof d === "string" || typeof d === "boolean" || (typeof d === "number" && Number.isFinite(d)) ||
  (Array.isArray(d) ? d.every(isJsonish) : isObj(d) && Object.values(d).every(isJsonish));

const ENDS = new Set<unknown>(TENANCY_ENDS);
const isTime = (t: unknown): boolean => typeof t === "number" && Number.isFinite(t);
const isTenancy = (t: unknown): boolean =>
  isObj(t) && isCount(t.epoch) && typeof t.owner === "string" && ID_RE.test(t.owner) && isTime(t.from) &&
  (t.to === undefined || isTime(t.to)) && (t.end === undefined || ENDS.has(t.end));

const isFailure = (f: unknown): boolean =>
  isObj(f) && typeof f.at === "number" && Number.isFinite(f.at) && typeof f.worker === "string" &&
  typeof f.message === "string" && (f.stack === undefined || typeof f.stack === "string") &&
  (f.permanent === undefined || f.permanent === true);

/** Whether `x` is a valid progress record (the hand-written twin of {@linkcode ProgRecordSchema}). */
export function isProgRecord(x: unknown): x is ProgRecord {
  if (!isObj(x) || x.v !== 2 || !isCount(x.epoch) || (x.owner !== null && !isOwner(x.owner))) return false;
  if (x.progress !== null && !isProgress(x.progress)) return false;
  return (x.records === undefined || isCount(x.records)) && (x.cuts === undefined || isCount(x.cuts));
}

/** Whether `x` is a valid page record (the hand-written twin of {@linkcode PageRecordSchema}): a new leader decodes every page of the plan. */
export function isPageRecord(x: unknown): x is PageRecord {
  if (!isObj(x) || x.v !== 2 || !isCount(x.term) || !Array.isArray(x.splits) || x.splits.length > PAGE_SPLITS) return false;
  for (const e of x.splits) {
    if (!isObj(e) || typeof e.id !== "string" || !ID_RE.test(e.id)) return false;
    if (e.weight !== undefined && !(typeof e.weight === "number" && e.weight > 0 && Number.isFinite(e.weight))) return false;
    if (e.spec !== undefined && e.spec !== true) return false;
  }
  return true;
}

/** Whether `p` is a valid split progress (its watermark and estimate; a parsed state is JSON by construction). */
function isProgress(p: unknown): boolean {
  if (!isObj(p)) return false;
  const wm = p.watermark;
  if (wm !== undefined && typeof wm !== "string" && !(typeof wm === "number" && Number.isFinite(wm))) return false;
  return p.estimate === undefined || estimateProblem(p.estimate) === null;
}

function isMemberRecord(x: unknown): x is MemberRecord {
  return isObj(x) && x.v === 2 && typeof x.session === "string" && x.session.length > 0 && isCount(x.maxInFlight) &&
    typeof x.runtime === "string" && typeof x.version === "string" && isCount(x.beat) &&
    (x.draining === undefined || typeof x.draining === "boolean") &&
    (x.planner === undefined || typeof x.planner === "boolean") && (x.held === undefined || isCount(x.held)) &&
    (x.seen === undefined || isCount(x.seen)) && (x.took === undefined || (typeof x.took === "string" && x.took.length > 0)) &&
    (x.at === undefined || isTime(x.at)) && (x.splittable === undefined || x.splittable === true) &&
    (x.lease === undefined || (Number.isInteger(x.lease) && (x.lease as number) >= 1)) && (x.away === undefined || isCount(x.away)) &&
    (x.est === undefined || (Array.isArray(x.est) && x.est.every(isEstimateEntry)));
}

const isEstimateEntry = (e: unknown): boolean =>
  Array.isArray(e) && e.length === 3 && typeof e[0] === "string" && ID_RE.test(e[0]) && typeof e[1] === "number" &&
  Number.isFinite(e[1]) && e[1] >= 0 && typeof e[2] === "number" && Number.isFinite(e[2]) && e[2] > 0;

const WHY = new Set(["takeover", "reclaim", "handoff"]);
const isEntry = (x: unknown): boolean =>
  isObj(x) && typeof x.id === "string" && ID_RE.test(x.id) && isCount(x.epoch) && isCount(x.rev) &&
  (x.page === undefined || isCount(x.page)) && (x.rec === undefined ? x.rev > 0 || x.page !== undefined : isSplitRecord(x.rec)) && (x.why === undefined || WHY.has(x.why as string)) &&
  (x.spare === undefined || x.spare === true);

const isCut = (c: unknown): boolean =>
  isObj(c) && typeof c.id === "string" && ID_RE.test(c.id) && isCount(c.epoch) && isCount(c.ask) &&
  Number.isInteger(c.parts) && (c.parts as number) >= 2 && (c.parts as number) <= MAX_RESIDUALS + 1;

function isAssignRecord(x: unknown): x is AssignRecord {
  if (!isObj(x) || x.v !== 2 || !isCount(x.term) || !isCount(x.seq)) return false;
  if (typeof x.session !== "string" || x.session.length === 0) return false;
  const { offers, grants, revokes, drops, cuts } = x;
  if (!Array.isArray(offers) || !Array.isArray(grants) || !Array.isArray(revokes) || !Array.isArray(drops)) return false;
  if (cuts !== undefined && !(Array.isArray(cuts) && cuts.every(isCut))) return false;
  return offers.every(isEntry) && grants.every(isEntry) &&
    revokes.every((r) => isObj(r) && typeof r.id === "string" && ID_RE.test(r.id) && isCount(r.epoch) && (r.to === undefined || isOwner(r.to))) &&
    drops.every((d) =>
      isObj(d) && typeof d.id === "string" && ID_RE.test(d.id) && isCount(d.epoch) &&
      (d.reason === "fenced" || d.reason === "expired" || d.reason === "cancelled")
    );
}

const isId = (x: unknown): boolean => typeof x === "string" && ID_RE.test(x);
const isCounts = (c: unknown): boolean =>
  isObj(c) && isCount(c.members) && isCount(c.runnable) && isCount(c.unowned) && isCount(c.completed) &&
  isCount(c.quarantined) && isCount(c.cancelled) && (c.cut === undefined || isCount(c.cut)) &&
  (c.quarantinedIds === undefined ||
    (Array.isArray(c.quarantinedIds) && c.quarantinedIds.length <= QUARANTINED_IDS_PUBLISHED && c.quarantinedIds.every(isId))) &&
  (c.weight === undefined ||
    (isObj(c.weight) && isWeight(c.weight.total) && isWeight(c.weight.completed) && isWeight(c.weight.runnable) && isWeight(c.weight.left))) &&
  (c.rate === undefined ||
    (isObj(c.rate) && isFiniteNumber(c.rate.at) && isCount(c.rate.ms) && isCount(c.rate.n) && isWeight(c.rate.w) &&
      (c.rate.since === null || isFiniteNumber(c.rate.since))));
const isWeight = (x: unknown): boolean => typeof x === "number" && x >= 0 && Number.isFinite(x);
const isFiniteNumber = (x: unknown): boolean => typeof x === "number" && Number.isFinite(x);

function isLeaderRecord(x: unknown): x is LeaderRecord {
  return isObj(x) && x.v === 2 && isId(x.instance) && typeof x.session === "string" && x.session.length > 0 &&
    isCount(x.term) && isCount(x.beat) && (x.counts === undefined || isCounts(x.counts));
}

/** The fast check of each hot record's schema. */
export const FAST_CHECKS: ReadonlyMap<z.ZodType, (x: unknown) => boolean> = new Map<z.ZodType, (x: unknown) => boolean>([
  [SplitRecordSchema, isSplitRecord],
  [MemberRecordSchema, isMemberRecord],
  [AssignRecordSchema, isAssignRecord],
  [LeaderRecordSchema, isLeaderRecord],
  [ProgRecordSchema, isProgRecord],
  [PageRecordSchema, isPageRecord],
]);
