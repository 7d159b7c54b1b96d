/**
 * Zod schemas and codecs for every record of a job's bucket (DESIGN §4).
 * Every record carries `v: 1`; every read is validated, and a value that is
 * not JSON or does not match is an `InvalidRecordError` naming the key.
 *
 * @module
 */
import { z } from "zod";
import { InvalidRecordError } from "./errors.ts";
import { keys } from "./store/keys.ts";

const id: z.ZodString = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, "must be 1-128 characters of [A-Za-z0-9_-]");
const count: z.ZodNumber = z.number().int().nonnegative();

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
 * import type { JobRecord } from "@splitlease/splitlease";
 * const job: JobRecord = { v: 1, fingerprint: "backfill:s3://bucket/prefix", createdAt: Date.now() };
 * ```
 */
export interface JobRecord {
  /** Record format version. */
  v: 1;
  /** Planner-supplied, config-derived identity of the job. */
  fingerprint: string;
  /** Wall-clock creation time (informational only). */
  createdAt: number;
}

/** Schema of the `job` record. */
export const JobRecordSchema: z.ZodType<JobRecord> = z.object({
  v: z.literal(1),
  fingerprint: z.string().min(1),
  createdAt: z.number(),
});

/**
 * The `plan` record: leader term (the leader fence) and the published plan.
 *
 * @example
 * ```ts
 * import type { PlanRecord } from "@splitlease/splitlease";
 * const p: PlanRecord = { v: 1, term: 1, finality: "final", generation: 1, planned: 42 };
 * ```
 */
export interface PlanRecord {
  /** Record format version. */
  v: 1;
  /** Leader generation; a new leader bumps it (the leader fence). */
  term: number;
  /** `final`: the enumeration is complete; `open`: re-planned on an interval. */
  finality: "open" | "final";
  /** Number of publishes so far; 0 means no plan was published yet. */
  generation: number;
  /** Splits planned (recounted from a listing at publish). */
  planned: number;
  /** Planner cursor for discovery planners. */
  cursor?: Json;
  /** Wall-clock time of the last publish (informational only). */
  publishedAt?: number;
}

/** Schema of the `plan` record. */
export const PlanRecordSchema: z.ZodType<PlanRecord> = z.object({
  v: z.literal(1),
  term: count,
  finality: z.enum(["open", "final"]),
  /** Number of publishes so far; 0 means no plan was published yet. */
  generation: count,
  planned: count,
  cursor: json.optional(),
  publishedAt: z.number().optional(),
});

/**
 * The `leader` record: the current leader and its heartbeat counter.
 *
 * @example
 * ```ts
 * import type { LeaderRecord } from "@splitlease/splitlease";
 * const l: LeaderRecord = { v: 1, instance: "a", session: "s1", term: 2, beat: 10 };
 * ```
 */
export interface LeaderRecord {
  /** Record format version. */
  v: 1;
  /** Leader instance id. */
  instance: string;
  /** Leader process session nonce. */
  session: string;
  /** Term it won. */
  term: number;
  /** Heartbeat counter, bumped every beat. */
  beat: number;
}

/** Schema of the `leader` record. */
export const LeaderRecordSchema: z.ZodType<LeaderRecord> = z.object({
  v: z.literal(1),
  instance: id,
  session: z.string().min(1),
  term: count,
  beat: count,
});

/**
 * A `member.<instance>` record: one live worker and its heartbeat counter.
 *
 * @example
 * ```ts
 * import type { MemberRecord } from "@splitlease/splitlease";
 * const m: MemberRecord = { v: 1, session: "s1", maxInFlight: 8, runtime: "deno", version: "0.1.0", beat: 0 };
 * ```
 */
export interface MemberRecord {
  /** Record format version. */
  v: 1;
  /** Process session nonce (fresh per process). */
  session: string;
  /** Lanes this worker runs at most. */
  maxInFlight: number;
  /** Runtime name and version, e.g. `deno 2.9.6`. */
  runtime: string;
  /** splitlease version. */
  version: string;
  /** Heartbeat counter, bumped every beat. */
  beat: number;
  /** Set while the worker drains to leave; it claims nothing more. */
  draining?: boolean;
}

/** Schema of a `member.<instance>` record. */
export const MemberRecordSchema: z.ZodType<MemberRecord> = z.object({
  v: z.literal(1),
  session: z.string().min(1),
  maxInFlight: z.number().int().positive(),
  runtime: z.string(),
  version: z.string(),
  beat: count,
  draining: z.boolean().optional(),
});

/**
 * A `spec.<split>` record: the immutable descriptor and weight of a split.
 *
 * @example
 * ```ts
 * import type { SpecRecord } from "@splitlease/splitlease";
 * const spec: SpecRecord = { v: 1, descriptor: { from: 0, to: 1000 }, weight: 1000, term: 1 };
 * ```
 */
export interface SpecRecord {
  /** Record format version. */
  v: 1;
  /** Everything a worker needs to process the split. */
  descriptor: Json;
  /** Relative cost (bytes, rows); default 1. */
  weight: number;
  /** Plan term that created it. */
  term: number;
}

/** Schema of a `spec.<split>` record. */
export const SpecRecordSchema: z.ZodType<SpecRecord> = z.object({
  v: z.literal(1),
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
 * import type { Owner } from "@splitlease/splitlease";
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
 * A `split.<split>` record: epoch, status, owner, attempts and progress.
 *
 * @example
 * ```ts
 * import type { SplitRecord } from "@splitlease/splitlease";
 * const s: SplitRecord = {
 *   v: 1, epoch: 1, status: "runnable", owner: { instance: "a", session: "s1" },
 *   attempts: 0, weight: 1, progress: { watermark: 10 },
 * };
 * ```
 */
export interface SplitRecord {
  /** Record format version. */
  v: 1;
  /** Fencing token, bumped on every ownership change. */
  epoch: number;
  /** Lifecycle state. */
  status: "runnable" | "completed" | "quarantined";
  /** Current owner, or `null` when free. */
  owner: Owner | null;
  /** Non-graceful ends so far (takeovers, crash reclaims, explicit fails). */
  attempts: number;
  /** Copy of the spec's weight, so balancing never reads specs. */
  weight: number;
  /** Last committed progress, `null` before the first commit. */
  progress: SplitProgress | null;
  /** Instance the split is reserved for (a steal in progress). */
  reservedFor?: string | null;
  /** Reason of the last reported failure. */
  lastFailure?: string;
}

/** Schema of a `split.<split>` record. */
export const SplitRecordSchema: z.ZodType<SplitRecord> = z.object({
  v: z.literal(1),
  epoch: count,
  status: z.enum(["runnable", "completed", "quarantined"]),
  owner: OwnerSchema.nullable(),
  attempts: count,
  weight: z.number().positive().finite(),
  progress: ProgressSchema.nullable(),
  reservedFor: id.nullable().optional(),
  lastFailure: z.string().optional(),
});

/**
 * A `handoff.<split>` record: the leader asks `from` to give the split to `to`.
 *
 * @example
 * ```ts
 * import type { HandoffRecord } from "@splitlease/splitlease";
 * const h: HandoffRecord = { v: 1, from: { instance: "a", session: "s1" }, to: "b", term: 3, requestedAt: Date.now() };
 * ```
 */
export interface HandoffRecord {
  /** Record format version. */
  v: 1;
  /** The owner asked to give the split up. */
  from: Owner;
  /** The instance that should get it. */
  to: string;
  /** Leader term that decided the move. */
  term: number;
  /** Wall-clock time of the request (informational only). */
  requestedAt: number;
}

/** Schema of a `handoff.<split>` record. */
export const HandoffRecordSchema: z.ZodType<HandoffRecord> = z.object({
  v: z.literal(1),
  from: OwnerSchema,
  to: id,
  term: count,
  requestedAt: z.number(),
});

/**
 * Parses and validates the value stored at `key` with `schema`.
 *
 * @throws {InvalidRecordError} naming the key when the value is not JSON or
 * does not match.
 *
 * @example
 * ```ts
 * import { decodeRecord, PlanRecordSchema } from "./records.ts";
 * const plan = decodeRecord("plan", '{"v":1,"term":1,"finality":"open","generation":0,"planned":0}', PlanRecordSchema);
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
 * encodeRecord({ v: 1, fingerprint: "f", createdAt: 0 }); // '{"v":1,...}'
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
  if (key.startsWith(keys.handoffPrefix)) return HandoffRecordSchema;
  return undefined;
}
