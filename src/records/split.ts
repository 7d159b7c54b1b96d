/**
 * The records of one split: `split.<split>` (epoch, status, owner, attempts,
 * progress, failures and a small descriptor) and `spec.<split>` (a descriptor
 * too large to live inline).
 *
 * @module
 */
import * as z from "zod";
import { count, id, json, type Json, v2 } from "./layout.ts";

/**
 * Largest descriptor (JSON text, UTF-8 bytes) kept inside the split record;
 * larger ones go to `spec.<split>`.
 *
 * @example
 * ```ts
 * import { INLINE_DESCRIPTOR_BYTES } from "../records.ts";
 * console.log(INLINE_DESCRIPTOR_BYTES); // 2048
 * ```
 */
export const INLINE_DESCRIPTOR_BYTES = 2048;

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
 * import { FAILURE_HISTORY } from "../records.ts";
 * console.log(FAILURE_HISTORY); // 5
 * ```
 */
export const FAILURE_HISTORY = 5;

/**
 * Longest failure message kept in the history (characters).
 *
 * @example
 * ```ts
 * import { FAILURE_MESSAGE_CHARS } from "../records.ts";
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
