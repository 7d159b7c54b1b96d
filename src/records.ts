/**
 * Records of a job's bucket, record layout 2 (docs/DESIGN.md, "Keys"). Every
 * record carries `v: 2`; every read is validated, and a value that is not
 * JSON or does not match is an `InvalidRecordError` naming the key. The hot
 * records (split, member, assignment) are checked by hand first — a record is
 * decoded on every watch event, and zod costs several times more — and zod
 * only explains a value the fast check refused.
 *
 * @module
 */
import { z } from "zod";
import { InvalidRecordError } from "./errors.ts";
import { keys } from "./store/keys.ts";

/**
 * The record layout this version reads and writes.
 *
 * @example
 * ```ts
 * import { RECORD_LAYOUT } from "./records.ts";
 * console.log(RECORD_LAYOUT); // 2
 * ```
 */
export const RECORD_LAYOUT = 2;

/**
 * Largest descriptor (JSON text, UTF-8 bytes) kept inside the split record;
 * larger ones go to `spec.<split>`.
 *
 * @example
 * ```ts
 * import { INLINE_DESCRIPTOR_BYTES } from "./records.ts";
 * console.log(INLINE_DESCRIPTOR_BYTES); // 2048
 * ```
 */
export const INLINE_DESCRIPTOR_BYTES = 2048;

const ID_RE = /^[A-Za-z0-9_-]{1,128}$/;
const id: z.ZodString = z.string().regex(ID_RE, "must be 1-128 characters of [A-Za-z0-9_-]");
const count: z.ZodNumber = z.number().int().nonnegative();
const v2 = z.literal(2);

/**
 * A JSON value (descriptor, progress state, planner cursor).
 *
 * @example
 * ```ts
 * import type { Json } from "@splitlease/splitlease";
 * const descriptor: Json = { objects: [{ key: "a.ndjson", size: 1024 }] };
 * ```
 */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

const json = z.json() as z.ZodType<Json>;

/**
 * The `job` record: which job this bucket belongs to.
 *
 * @example
 * ```ts
 * import type { JobRecord } from "@splitlease/splitlease/admin";
 * const job: JobRecord = { v: 2, fingerprint: "backfill:s3://bucket/prefix", createdAt: Date.now() };
 * ```
 */
export interface JobRecord {
  /** Record layout. */
  v: 2;
  /** Planner-supplied, config-derived identity of the job. */
  fingerprint: string;
  /** Wall-clock creation time (informational only). */
  createdAt: number;
}

/** Schema of the `job` record. */
export const JobRecordSchema: z.ZodType<JobRecord> = z.object({
  v: v2,
  fingerprint: z.string().min(1),
  createdAt: z.number(),
});

/**
 * How a bounded job ended, decided once by the leader (`plan.outcome`).
 *
 * @example
 * ```ts
 * import type { JobOutcome } from "@splitlease/splitlease/admin";
 * const o: JobOutcome = { kind: "stalled", completed: 9, quarantined: 1 };
 * ```
 */
export type JobOutcome =
  | { kind: "allComplete"; completed: number; cancelled?: number }
  | { kind: "stalled"; completed: number; quarantined: number; cancelled?: number }
  | { kind: "planFailed"; error: string; attempts: number; term: number };

/**
 * The `plan` record: leader term (the leader fence), the published plan and,
 * once decided, the job outcome.
 *
 * @example
 * ```ts
 * import type { PlanRecord } from "@splitlease/splitlease/admin";
 * const p: PlanRecord = { v: 2, term: 1, finality: "final", generation: 1, planned: 42 };
 * ```
 */
export interface PlanRecord {
  /** Record layout. */
  v: 2;
  /** Leader generation; a new leader bumps it (the leader fence). */
  term: number;
  /** `final`: the enumeration is complete; `open`: re-planned on an interval. */
  finality: "open" | "final";
  /** Number of publishes so far; 0 means no plan was published yet. */
  generation: number;
  /** Splits planned (counted from what was seeded). */
  planned: number;
  /** Planner cursor for discovery planners. */
  cursor?: Json;
  /** Wall-clock time of the last publish (informational only). */
  publishedAt?: number;
  /** The job outcome, written once by the leader after a confirming listing. */
  outcome?: JobOutcome;
}

const OutcomeSchema: z.ZodType<JobOutcome> = z.union([
  z.object({ kind: z.literal("allComplete"), completed: count, cancelled: count.optional() }),
  z.object({ kind: z.literal("stalled"), completed: count, quarantined: count, cancelled: count.optional() }),
  z.object({ kind: z.literal("planFailed"), error: z.string(), attempts: count, term: count }),
]);

/** Schema of the `plan` record. */
export const PlanRecordSchema: z.ZodType<PlanRecord> = z.object({
  v: v2,
  term: count,
  finality: z.enum(["open", "final"]),
  generation: count,
  planned: count,
  cursor: json.optional(),
  publishedAt: z.number().optional(),
  outcome: OutcomeSchema.optional(),
});

/**
 * Job-wide split counts as the leader sees them, carried on its heartbeat.
 *
 * @example
 * ```ts
 * import type { JobCounts } from "@splitlease/splitlease/admin";
 * const c: JobCounts = { members: 3, runnable: 10, unowned: 2, completed: 5, quarantined: 0, cancelled: 0 };
 * ```
 */
export interface JobCounts {
  /** Live members (standbys included). */
  members: number;
  /** Runnable splits (owned or not). */
  runnable: number;
  /** Runnable splits with no owner (the backlog). */
  unowned: number;
  /** Completed splits. */
  completed: number;
  /** Quarantined (poison) splits. */
  quarantined: number;
  /** Cancelled splits. */
  cancelled: number;
}

/**
 * The `leader` record: the current leader, its heartbeat counter and the job
 * counts it last saw.
 *
 * @example
 * ```ts
 * import type { LeaderRecord } from "@splitlease/splitlease/admin";
 * const l: LeaderRecord = { v: 2, instance: "a", session: "s1", term: 2, beat: 10 };
 * ```
 */
export interface LeaderRecord {
  /** Record layout. */
  v: 2;
  /** Leader instance id. */
  instance: string;
  /** Leader process session nonce. */
  session: string;
  /** Term it won. */
  term: number;
  /** Heartbeat counter, bumped every beat. */
  beat: number;
  /** Job counts as of this beat. */
  counts?: JobCounts;
}

const CountsSchema: z.ZodType<JobCounts> = z.object({
  members: count,
  runnable: count,
  unowned: count,
  completed: count,
  quarantined: count,
  cancelled: count,
});

/** Schema of the `leader` record. */
export const LeaderRecordSchema: z.ZodType<LeaderRecord> = z.object({
  v: v2,
  instance: id,
  session: z.string().min(1),
  term: count,
  beat: count,
  counts: CountsSchema.optional(),
});

/**
 * A `member.<instance>` record: one live worker and its heartbeat counter.
 *
 * @example
 * ```ts
 * import type { MemberRecord } from "@splitlease/splitlease/admin";
 * const m: MemberRecord = { v: 2, session: "s1", maxInFlight: 8, runtime: "deno", version: "0.2.0", beat: 0 };
 * ```
 */
export interface MemberRecord {
  /** Record layout. */
  v: 2;
  /** Process session nonce (fresh per process). */
  session: string;
  /** Lanes this worker runs at most (0: a standby that holds nothing). */
  maxInFlight: number;
  /** Runtime name and version, e.g. `deno 2.9.6`. */
  runtime: string;
  /** splitlease version. */
  version: string;
  /** Heartbeat counter, bumped every beat. */
  beat: number;
  /** Set while the worker drains to leave; it gets nothing more. */
  draining?: boolean;
  /** Whether it runs a planner (preferred as leader). */
  planner?: boolean;
  /** Splits it held (or was claiming) when it wrote this beat: the leader re-sends grants when it sees more. */
  held?: number;
  /**
   * Revision of the newest `assign.<instance>` record it has applied: every
   * grant listed there is known to it, so the leader stops listing them.
   */
  seen?: number;
}

/** Schema of a `member.<instance>` record. */
export const MemberRecordSchema: z.ZodType<MemberRecord> = z.object({
  v: v2,
  session: z.string().min(1),
  maxInFlight: count,
  runtime: z.string(),
  version: z.string(),
  beat: count,
  draining: z.boolean().optional(),
  planner: z.boolean().optional(),
  held: count.optional(),
  seen: count.optional(),
});

/**
 * A `spec.<split>` record: the immutable descriptor of a split whose
 * descriptor is too large to live in its split record.
 *
 * @example
 * ```ts
 * import type { SpecRecord } from "@splitlease/splitlease/admin";
 * const spec: SpecRecord = { v: 2, descriptor: { from: 0, to: 1000 }, weight: 1000, term: 1 };
 * ```
 */
export interface SpecRecord {
  /** Record layout. */
  v: 2;
  /** Everything a worker needs to process the split. */
  descriptor: Json;
  /** Relative cost (bytes, rows); default 1. */
  weight: number;
  /** Plan term that created it. */
  term: number;
}

/** Schema of a `spec.<split>` record. */
export const SpecRecordSchema: z.ZodType<SpecRecord> = z.object({
  v: v2,
  descriptor: json,
  weight: z.number().positive().finite(),
  term: count,
});

/**
 * Committed progress of a split: an ordered watermark and opaque state.
 *
 * @example
 * ```ts
 * import type { SplitProgress } from "@splitlease/splitlease";
 * const p: SplitProgress = { watermark: 1200, state: { object: 3, offset: 4096 } };
 * ```
 */
export interface SplitProgress {
  /** Ordered position (number or string); never regresses. */
  watermark?: number | string;
  /** Opaque source state to resume from. */
  state?: Json;
}

/** Schema of split progress. */
export const ProgressSchema: z.ZodType<SplitProgress> = z.object({
  watermark: z.union([z.number().finite(), z.string()]).optional(),
  state: json.optional(),
});

/**
 * The owner of a split: an instance id and its process session nonce.
 *
 * @example
 * ```ts
 * import type { Owner } from "@splitlease/splitlease/admin";
 * const owner: Owner = { instance: "pod-1", session: "k3j2h1g0" };
 * ```
 */
export interface Owner {
  /** Instance id. */
  instance: string;
  /** Process session nonce. */
  session: string;
}

/** Schema of an owner reference. */
export const OwnerSchema: z.ZodType<Owner> = z.object({ instance: id, session: z.string().min(1) });

/**
 * Lifecycle state of a split: `runnable` (owned or free), `completed`,
 * `quarantined` (poison, parked until requeued) or `cancelled` (by an
 * operator; never run again).
 *
 * @example
 * ```ts
 * import type { SplitStatus } from "@splitlease/splitlease/admin";
 * const s: SplitStatus = "runnable";
 * ```
 */
export type SplitStatus = "runnable" | "completed" | "quarantined" | "cancelled";

/**
 * A `split.<split>` record: epoch, status, owner, attempts, progress and
 * (when small) the descriptor.
 *
 * @example
 * ```ts
 * import type { SplitRecord } from "@splitlease/splitlease/admin";
 * const s: SplitRecord = {
 *   v: 2, epoch: 1, status: "runnable", owner: { instance: "a", session: "s1" },
 *   attempts: 0, weight: 1, progress: { watermark: 10 }, descriptor: { from: 0, to: 10 },
 * };
 * ```
 */
export interface SplitRecord {
  /** Record layout. */
  v: 2;
  /** Fencing token, bumped on every ownership change. */
  epoch: number;
  /** Lifecycle state. */
  status: SplitStatus;
  /** Current owner, or `null` when free. */
  owner: Owner | null;
  /** Non-graceful ends so far (takeovers, crash reclaims, explicit fails). */
  attempts: number;
  /** Relative cost, used for fair share and balancing. */
  weight: number;
  /** Last committed progress, `null` before the first commit. */
  progress: SplitProgress | null;
  /** The descriptor, when it is at most {@linkcode INLINE_DESCRIPTOR_BYTES}. */
  descriptor?: Json;
  /** Set when the descriptor lives in `spec.<split>` instead. */
  spec?: true;
  /** Reason of the last reported failure. */
  lastFailure?: string;
  /** The last {@linkcode FAILURE_HISTORY} reported failures, oldest first (bounded; absent before the first). */
  failures?: SplitFailure[];
}

/**
 * One reported failure of a split (a `fail()`, a throwing `run`, a bad
 * descriptor), as kept in {@linkcode SplitRecord.failures}.
 *
 * @example
 * ```ts
 * import type { SplitFailure } from "@splitlease/splitlease/admin";
 * const f: SplitFailure = { at: Date.now(), worker: "pod-1", message: "run threw: ECONNRESET" };
 * ```
 */
export interface SplitFailure {
  /** Wall-clock time of the report (ms since the epoch; informational only). */
  at: number;
  /** Instance id of the worker that reported it. */
  worker: string;
  /** What failed, cut to {@linkcode FAILURE_MESSAGE_CHARS} characters. */
  message: string;
}

/**
 * Failures kept per split record (the oldest is dropped first).
 *
 * @example
 * ```ts
 * import { FAILURE_HISTORY } from "./records.ts";
 * console.log(FAILURE_HISTORY); // 5
 * ```
 */
export const FAILURE_HISTORY = 5;

/**
 * Longest failure message kept in the history (characters).
 *
 * @example
 * ```ts
 * import { FAILURE_MESSAGE_CHARS } from "./records.ts";
 * console.log(FAILURE_MESSAGE_CHARS); // 300
 * ```
 */
export const FAILURE_MESSAGE_CHARS = 300;

const FailureSchema: z.ZodType<SplitFailure> = z.object({ at: z.number(), worker: z.string(), message: z.string() });

/** Schema of a `split.<split>` record. */
export const SplitRecordSchema: z.ZodType<SplitRecord> = z.object({
  v: v2,
  epoch: count,
  status: z.enum(["runnable", "completed", "quarantined", "cancelled"]),
  owner: OwnerSchema.nullable(),
  attempts: count,
  weight: z.number().positive().finite(),
  progress: ProgressSchema.nullable(),
  descriptor: json.optional(),
  spec: z.literal(true).optional(),
  lastFailure: z.string().optional(),
  failures: z.array(FailureSchema).optional(),
});

/**
 * One split in an assignment record: its id, the epoch and revision of the
 * split record the leader saw, and (space permitting) that record.
 *
 * @example
 * ```ts
 * import type { AssignEntry } from "@splitlease/splitlease/admin";
 * const e: AssignEntry = { id: "s1", epoch: 0, rev: 42 };
 * ```
 */
export interface AssignEntry {
  /** Split id. */
  id: string;
  /** Epoch of the split record at `rev`. */
  epoch: number;
  /** Revision of the split record the directive is about. */
  rev: number;
  /** The split record at `rev` (omitted when the assignment record would grow too large). */
  rec?: SplitRecord;
  /** Why it comes: `takeover` (its owner died), `reclaim` (its owner was our previous process), `handoff` (released or fenced to us). */
  why?: "takeover" | "reclaim" | "handoff";
}

/**
 * An `assign.<instance>` record: the leader's directives to one member
 * (docs/DESIGN.md, "How a split reaches a worker without races").
 *
 * @example
 * ```ts
 * import type { AssignRecord } from "@splitlease/splitlease/admin";
 * const a: AssignRecord = { v: 2, term: 3, session: "s1", seq: 7, offers: [], grants: [], revokes: [], drops: [] };
 * ```
 */
export interface AssignRecord {
  /** Record layout. */
  v: 2;
  /** Term of the leader that wrote it. */
  term: number;
  /** Session of the member it is addressed to. */
  session: string;
  /** Write counter within the term. */
  seq: number;
  /** Free splits reserved for the member: claim them (one CAS each) when a lane is free. */
  offers: AssignEntry[];
  /** Splits already opened for the member (epoch and owner written): start them without a write. */
  grants: AssignEntry[];
  /** Held splits the leader wants back; `to` is the successor to release them to. */
  revokes: { id: string; epoch: number; to?: Owner }[];
  /** Held splits whose record moved away from the member: stop them now. */
  drops: { id: string; epoch: number; reason: "fenced" | "expired" | "cancelled" }[];
}

const EntrySchema: z.ZodType<AssignEntry> = z.object({
  id,
  epoch: count,
  rev: z.number().int().positive(),
  rec: SplitRecordSchema.optional(),
  why: z.enum(["takeover", "reclaim", "handoff"]).optional(),
});

/** Schema of an `assign.<instance>` record. */
export const AssignRecordSchema: z.ZodType<AssignRecord> = z.object({
  v: v2,
  term: count,
  session: z.string().min(1),
  seq: count,
  offers: z.array(EntrySchema),
  grants: z.array(EntrySchema),
  revokes: z.array(z.object({ id, epoch: count, to: OwnerSchema.optional() })),
  drops: z.array(z.object({ id, epoch: count, reason: z.enum(["fenced", "expired", "cancelled"]) })),
});

// --- fast checks of the hot records ------------------------------------------------

type Obj = Record<string, unknown>;
const isObj = (x: unknown): x is Obj => typeof x === "object" && x !== null && !Array.isArray(x);
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
  const p = x.progress;
  if (p !== null) {
    if (!isObj(p)) return false;
    const wm = p.watermark;
    if (wm !== undefined && typeof wm !== "string" && !(typeof wm === "number" && Number.isFinite(wm))) return false;
  }
  if (x.spec !== undefined && x.spec !== true) return false;
  if (x.lastFailure !== undefined && typeof x.lastFailure !== "string") return false;
  if (x.failures !== undefined && !(Array.isArray(x.failures) && x.failures.every(isFailure))) return false;
  return true;
}

const isFailure = (f: unknown): boolean =>
  isObj(f) && typeof f.at === "number" && Number.isFinite(f.at) && typeof f.worker === "string" &&
  typeof f.message === "string";

function isMemberRecord(x: unknown): x is MemberRecord {
  return isObj(x) && x.v === 2 && typeof x.session === "string" && x.session.length > 0 && isCount(x.maxInFlight) &&
    typeof x.runtime === "string" && typeof x.version === "string" && isCount(x.beat) &&
    (x.draining === undefined || typeof x.draining === "boolean") &&
    (x.planner === undefined || typeof x.planner === "boolean") && (x.held === undefined || isCount(x.held)) &&
    (x.seen === undefined || isCount(x.seen));
}

const WHY = new Set(["takeover", "reclaim", "handoff"]);
const isEntry = (x: unknown): boolean =>
  isObj(x) && typeof x.id === "string" && ID_RE.test(x.id) && isCount(x.epoch) && isCount(x.rev) && x.rev > 0 &&
  (x.rec === undefined || isSplitRecord(x.rec)) && (x.why === undefined || WHY.has(x.why as string));

function isAssignRecord(x: unknown): x is AssignRecord {
  if (!isObj(x) || x.v !== 2 || !isCount(x.term) || !isCount(x.seq)) return false;
  if (typeof x.session !== "string" || x.session.length === 0) return false;
  const { offers, grants, revokes, drops } = x;
  if (!Array.isArray(offers) || !Array.isArray(grants) || !Array.isArray(revokes) || !Array.isArray(drops)) return false;
  return offers.every(isEntry) && grants.every(isEntry) &&
    revokes.every((r) => isObj(r) && typeof r.id === "string" && ID_RE.test(r.id) && isCount(r.epoch) && (r.to === undefined || isOwner(r.to))) &&
    drops.every((d) =>
      isObj(d) && typeof d.id === "string" && ID_RE.test(d.id) && isCount(d.epoch) &&
      (d.reason === "fenced" || d.reason === "expired" || d.reason === "cancelled")
    );
}

const FAST = new Map<z.ZodType, (x: unknown) => boolean>([
  [SplitRecordSchema, isSplitRecord],
  [MemberRecordSchema, isMemberRecord],
  [AssignRecordSchema, isAssignRecord],
]);

/**
 * Parses and validates the value stored at `key` with `schema`.
 *
 * @throws {InvalidRecordError} naming the key when the value is not JSON or
 * does not match.
 *
 * @example
 * ```ts
 * import { decodeRecord, PlanRecordSchema } from "./records.ts";
 * const plan = decodeRecord("plan", '{"v":2,"term":1,"finality":"open","generation":0,"planned":0}', PlanRecordSchema);
 * console.log(plan.term); // 1
 * ```
 */
export function decodeRecord<T>(key: string, value: string, schema: z.ZodType<T>): T {
  let json: unknown;
  try {
    json = JSON.parse(value);
  } catch (e) {
    throw new InvalidRecordError(key, `value is not JSON (${(e as Error).message})`, [], { cause: e });
  }
  const fast = FAST.get(schema);
  if (fast?.(json)) return json as T;
  if (isObj(json) && json.v !== 2 && typeof json.v === "number") {
    throw new InvalidRecordError(
      key,
      `record layout ${json.v} is not layout ${RECORD_LAYOUT} (written by another splitlease version)`,
      [],
    );
  }
  const r = schema.safeParse(json);
  if (!r.success) {
    throw new InvalidRecordError(
      key,
      "value does not match its schema",
      r.error.issues.map((i) => ({ path: i.path, message: i.message })),
    );
  }
  return r.data;
}

/**
 * Result-value variant of {@linkcode decodeRecord}.
 *
 * @example
 * ```ts
 * import { safeDecodeRecord, JobRecordSchema } from "./records.ts";
 * const r = safeDecodeRecord("job", "nope", JobRecordSchema);
 * console.log(r.ok); // false
 * ```
 */
export function safeDecodeRecord<T>(
  key: string,
  value: string,
  schema: z.ZodType<T>,
): { ok: true; value: T } | { ok: false; error: InvalidRecordError } {
  try {
    return { ok: true, value: decodeRecord(key, value, schema) };
  } catch (e) {
    if (e instanceof InvalidRecordError) return { ok: false, error: e };
    throw e;
  }
}

/**
 * Serializes a record as JSON text for the store.
 *
 * @example
 * ```ts
 * import { encodeRecord } from "./records.ts";
 * encodeRecord({ v: 2, fingerprint: "f", createdAt: 0 }); // '{"v":2,...}'
 * ```
 */
export function encodeRecord(record: object): string {
  return JSON.stringify(record);
}

/**
 * The schema that governs `key`, or `undefined` for a key outside the layout.
 *
 * @example
 * ```ts
 * import { schemaForKey, SplitRecordSchema } from "./records.ts";
 * schemaForKey("split.a") === SplitRecordSchema; // true
 * ```
 */
export function schemaForKey(key: string): z.ZodType | undefined {
  if (key === keys.job) return JobRecordSchema;
  if (key === keys.plan) return PlanRecordSchema;
  if (key === keys.leader) return LeaderRecordSchema;
  if (key.startsWith(keys.memberPrefix)) return MemberRecordSchema;
  if (key.startsWith(keys.specPrefix)) return SpecRecordSchema;
  if (key.startsWith(keys.splitPrefix)) return SplitRecordSchema;
  if (key.startsWith(keys.assignPrefix)) return AssignRecordSchema;
  return undefined;
}
