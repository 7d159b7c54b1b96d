/**
 * Cutting a running split's remaining work (dynamic work rebalancing,
 * docs/DESIGN.md "Stragglers"): the pure record transitions. A cut is one
 * CAS on the split record at its owner's epoch that shrinks its descriptor
 * and records the residual splits; their records are created from that
 * record, create-if-absent, by whoever sees it first. Residual ids are
 * derived from the parent's id and the residual's descriptor, so a cut
 * retried after a maybe-landed write names the same splits.
 *
 * @module
 */
import { SplitleaseError } from "../errors.ts";
import {
  INLINE_DESCRIPTOR_BYTES,
  type Json,
  MAX_RESIDUALS,
  type Residual,
  type SplitProgress,
  type SplitRecord,
} from "../records.ts";
import type { SplitSpec } from "./types.ts";
import { seedRecord } from "../records/transitions.ts";

/** What the owner's source decided: the descriptor it keeps and the residuals. */
export interface Cut {
  /** The descriptor the owner keeps (inline in the record from now on). */
  keep: Json;
  /** The kept split's weight. */
  weight: number;
  /** The residual splits (1 to {@linkcode MAX_RESIDUALS}). */
  residuals: Residual[];
}

const encoder = new TextEncoder();

/** 64-bit FNV-1a of `s` as 16 hex digits (two 32-bit lanes with different offsets). */
function hash64(s: string): string {
  let a = 0x811c9dc5, b = 0x050c5d1f;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193) ^ (a >>> 7);
  }
  return (a >>> 0).toString(16).padStart(8, "0") + (b >>> 0).toString(16).padStart(8, "0");
}

/**
 * The id of a residual cut from `parent` with `descriptor`: the parent's id
 * (its first 100 characters) and a 64-bit hash of both, at most 117
 * characters however often a lineage is cut.
 */
export function residualId(parent: string, descriptor: Json): string {
  return `${parent.slice(0, 100)}-${hash64(`${parent}\u0000${JSON.stringify(descriptor)}`)}`;
}

/** Bytes of a descriptor's JSON text. */
function bytes(d: Json): number {
  return encoder.encode(JSON.stringify(d)).byteLength;
}

/**
 * Builds a cut from a source's answer, or says what is wrong with it: the
 * kept and residual descriptors must each fit inline, 1 to
 * {@linkcode MAX_RESIDUALS} residuals, weights positive (default: the
 * split's weight shared evenly).
 */
export function makeCut(
  splitId: string,
  weight: number,
  answer: { keep: Json; weight?: number; residuals: readonly { descriptor: Json; weight?: number }[] },
): Cut {
  const n = answer.residuals?.length ?? 0;
  if (n < 1 || n > MAX_RESIDUALS) {
    throw new SplitleaseError("INVALID_ARGUMENT", `A cut of split "${splitId}" must make 1 to ${MAX_RESIDUALS} residuals, not ${n}`);
  }
  const share = weight / (n + 1);
  const check = (what: string, d: Json, w: number | undefined): number => {
    if (d === undefined) throw new SplitleaseError("INVALID_ARGUMENT", `The ${what} of a cut of split "${splitId}" has no descriptor`);
    const size = bytes(d);
    if (size > INLINE_DESCRIPTOR_BYTES) {
      throw new SplitleaseError(
        "INVALID_ARGUMENT",
        `The ${what} of a cut of split "${splitId}" is ${size} bytes of JSON; at most ${INLINE_DESCRIPTOR_BYTES} are allowed`,
      );
    }
    const out = w ?? share;
    if (!(typeof out === "number" && out > 0 && Number.isFinite(out))) {
      throw new SplitleaseError("INVALID_ARGUMENT", `The ${what} of a cut of split "${splitId}" has an invalid weight: ${w}`);
    }
    return out;
  };
  const keptWeight = check("kept descriptor", answer.keep, answer.weight);
  const residuals: Residual[] = [];
  const ids = new Set<string>();
  answer.residuals.forEach((r, i) => {
    const w = check(`residual ${i}`, r.descriptor, r.weight);
    const id = residualId(splitId, r.descriptor);
    if (ids.has(id)) throw new SplitleaseError("INVALID_ARGUMENT", `A cut of split "${splitId}" names the same residual twice`);
    ids.add(id);
    residuals.push({ id, descriptor: r.descriptor, weight: w });
  });
  return { keep: answer.keep, weight: keptWeight, residuals };
}

/**
 * The record with the cut applied: the kept descriptor inline (a spec
 * record no longer applies), the kept weight, one more cut, the residuals
 * listed; the progress estimate is dropped (the source's next commit
 * estimates the kept work). Applying it again over a record that already
 * lists its residuals changes nothing (a retry after our own write landed).
 */
export function cutRecord(r: SplitRecord, cut: Cut): SplitRecord {
  const listed = new Set((r.residuals ?? []).map((x) => x.id));
  if (cut.residuals.every((x) => listed.has(x.id))) return r;
  // Each residual starts past the epoch the cut is written at (see `Residual.epoch`).
  const added = cut.residuals.filter((x) => !listed.has(x.id)).map((x) => ({ ...x, epoch: r.epoch + 1 }));
  const next: SplitRecord = {
    ...r,
    descriptor: cut.keep,
    weight: cut.weight,
    cuts: (r.cuts ?? 0) + 1,
    residuals: [...(r.residuals ?? []), ...added],
  };
  delete next.spec;
  if (r.progress?.estimate) {
    const { estimate: _, ...rest } = r.progress;
    next.progress = rest as SplitProgress;
  }
  return next;
}

/** The record without the residuals in `existing` (their records exist: nothing left to create). */
export function pruneResiduals(r: SplitRecord, existing: ReadonlySet<string>): SplitRecord {
  if (!r.residuals || !r.residuals.some((x) => existing.has(x.id))) return r;
  const left = r.residuals.filter((x) => !existing.has(x.id));
  const next: SplitRecord = { ...r, residuals: left };
  if (left.length === 0) delete next.residuals;
  return next;
}

/**
 * The record a residual starts with: free, inline, its parent and its
 * lineage's root named, at the epoch its listing gives (past the parent's
 * epoch at the cut).
 */
export function residualRecord(parentId: string, parent: SplitRecord | undefined, r: Residual): SplitRecord {
  // Nobody held it below its first epoch: its first tenancy starts without fencing its progress record.
  const epoch = r.epoch ?? 0;
  return { ...seedRecord(r.weight, r.descriptor), epoch, closed: epoch + 1, parent: parentId, root: parent?.root ?? parentId };
}

/**
 * The spec a tenancy runs from `record`: a cut record carries the kept
 * descriptor inline, which replaces the planned one (a tenancy resumed
 * after its own cut landed runs only what the cut kept).
 */
export function specOf(spec: SplitSpec, record: SplitRecord): SplitSpec {
  if (record.cuts === undefined || record.descriptor === undefined) return spec;
  return { ...spec, descriptor: record.descriptor, weight: record.weight };
}
