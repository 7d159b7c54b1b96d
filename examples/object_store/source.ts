/**
 * Object-store backfill source: a planner lists a prefix of a bucket (or a
 * local directory) and bin-packs the objects into splits by bytes; workers
 * stream newline-delimited records out of each split's objects, hand every
 * record to a sink, and commit `{watermark, state: {object, offset},
 * estimate}` at a bounded cadence so a takeover resumes mid-object.
 *
 * A running split's remaining bytes can be cut for idle workers
 * (`split`, see {@linkcode objectStoreSource}): a cut piece of an object is a
 * byte range `[from, to)` of it that owns the lines starting in it (see
 * {@linkcode SplitObject}), so pieces cut anywhere, even mid-line, share no
 * line and miss none.
 *
 * The backend (S3 via `./s3.ts`, a directory via `./dir.ts`) is behind the
 * small {@linkcode ObjectBackend} interface; this file uses Web standards only.
 *
 * @module
 */
import { z } from "zod";
import { FencedError, type Lane, type PlanResult, type SplitProgress, type SplitSource, type SplitEstimate, splitIdFrom } from "../../mod.ts";

/** One object of a listing (and of a split descriptor). */
export type ObjectEntry = {
  /** Key relative to the bucket (S3) or to the directory (local). */
  key: string;
  /** Size in bytes. */
  size: number;
  /** Version tag: the S3 ETag, or `size-mtimeMs` for files. */
  etag: string;
};

/**
 * One object of a split descriptor: the whole object, or, once a running
 * split was cut, the lines of it that start in bytes `[from, to)` (`from`
 * defaults to 0, `to` to `size`). A line starts at byte 0 or right after a
 * `\n`. A range owns exactly the lines starting in it: it reads the line
 * it is in at `to` to that line's end, and one starting at `from > 0` skips
 * the line that began before `from` (its range before owns it). Ranges cut
 * at any byte therefore share no line and miss none.
 */
export type SplitObject = ObjectEntry & {
  /** First byte of the range (default 0). */
  from?: number;
  /** End of the range, exclusive (default `size`). */
  to?: number;
};

/** The descriptor of a split: the objects it covers, in key order. */
export type ObjectSplit = {
  objects: SplitObject[];
};

/** Zod schema of {@linkcode ObjectSplit}: a descriptor that fails it is poison. */
export const descriptorSchema: z.ZodType<ObjectSplit> = z.object({
  objects: z.array(
    z.object({
      key: z.string().min(1),
      size: z.number().int().nonnegative(),
      etag: z.string().min(1),
      from: z.number().int().nonnegative().optional(),
      to: z.number().int().positive().optional(),
    }).strict().refine(
      (o) => (o.from === undefined && o.to === undefined) || ((o.from ?? 0) < (o.to ?? o.size) && (o.to ?? o.size) <= o.size),
      { message: "a byte range must satisfy 0 <= from < to <= size" },
    ),
  ).min(1),
}).strict();

/** Schema of the resume state kept in `progress.state`. */
const stateSchema = z.object({
  object: z.number().int().nonnegative(),
  offset: z.number().int().nonnegative(),
}).strict();

/** Where a lane stands: object index within the split and byte offset within that object. */
export type ResumeState = z.infer<typeof stateSchema>;

/** Raised by a backend when an object no longer matches the ETag it was planned with. */
export class ObjectChangedError extends Error {
  /** The object's key. */
  readonly key: string;
  constructor(key: string, detail: string) {
    super(`object ${JSON.stringify(key)} changed since it was planned (${detail}); it is new work for a new plan`);
    this.name = "ObjectChangedError";
    this.key = key;
  }
}

/** What the source needs from a storage backend. */
export interface ObjectBackend {
  /** Stable identity for the job fingerprint, e.g. `s3://bucket/prefix` or `dir:/data`. */
  readonly describe: string;
  /**
   * Checks the configuration against the store (directory exists, bucket
   * and credentials work); throws naming the problem. Call it at startup.
   */
  probe(signal?: AbortSignal): Promise<void>;
  /** Every object under the configured prefix (any order). */
  list(signal?: AbortSignal): AsyncIterable<ObjectEntry>;
  /**
   * The bytes of `entry` from `offset` to its end. Throws
   * {@linkcode ObjectChangedError} when the object no longer matches `entry.etag`.
   */
  read(entry: ObjectEntry, offset: number, signal: AbortSignal): AsyncIterable<Uint8Array>;
}

/** One record handed to the sink. */
export interface ObjectRecord {
  /** Split the record belongs to. */
  splitId: string;
  /** Object key. */
  key: string;
  /** Object version it was read from. */
  etag: string;
  /** Byte offset of the record's first byte in the object: `(key, etag, offset)` identifies a record. */
  offset: number;
  /** The record's text, without its line ending. */
  line: string;
}

/**
 * Receives records. `write` is awaited (backpressure); `flush`, when given,
 * is awaited before every progress commit so nothing committed is still
 * buffered (at-least-once: a record reaches the sink before its commit).
 */
export interface RecordSink {
  write(record: ObjectRecord): void | Promise<void>;
  flush?(): void | Promise<void>;
}

/** Options of {@linkcode objectStoreSource}. */
export interface ObjectStoreSourceOptions {
  /** Where the objects live. */
  backend: ObjectBackend;
  /** Where records go: a sink, or a function called with each record. */
  sink: RecordSink | ((record: ObjectRecord) => void | Promise<void>);
  /** Target split size in bytes (default 8 MiB). An object at or above it gets a split of its own. */
  targetSplitBytes?: number;
  /** Most objects in one split (bounds the descriptor size; default 1000). */
  maxObjectsPerSplit?: number;
  /** Commit after this many records (default 500)… */
  commitEveryRecords?: number;
  /** …or after this many ms since the last commit, whichever comes first (default 1000). */
  commitEveryMs?: number;
  /**
   * Least bytes of a piece when a running split is cut for idle workers
   * (default 1 MiB): a cut makes fewer pieces than asked rather than
   * smaller ones, and none when less than twice this is left.
   */
  minCutBytes?: number;
  /** Called on recoverable trouble (a commit that failed during a store outage, a cut that cannot be written). */
  onWarning?: (message: string, fields: Record<string, unknown>) => void;
}

const DEFAULT_TARGET = 8 * 1024 * 1024;
const DEFAULT_MIN_CUT = 1024 * 1024;
/** Most bytes of JSON a kept or residual descriptor may have (the coordinator's inline limit). */
const MAX_CUT_DESCRIPTOR_BYTES = 2048;

function positiveInt(name: string, v: number | undefined, dflt: number): number {
  const n = v ?? dflt;
  if (!Number.isInteger(n) || n < 1) throw new TypeError(`object store source: ${name} must be an integer >= 1 (got ${v})`);
  return n;
}

/** A planned split, before it is handed to the coordinator. */
export interface PackedSplit {
  id: string;
  descriptor: ObjectSplit;
  weight: number;
}

/**
 * Bin-packs a listing into splits, deterministically: objects sorted by key,
 * then filled in order into bins of at most `targetSplitBytes` (and at most
 * `maxObjectsPerSplit` objects); an object at or above the target gets a bin
 * of its own. The id hashes the keys and ETags, so an overwritten object
 * makes a new split (new work) while an unchanged listing replans to the same ids.
 */
export async function packObjects(
  listing: Iterable<ObjectEntry>,
  targetSplitBytes = DEFAULT_TARGET,
  maxObjectsPerSplit = 1000,
): Promise<PackedSplit[]> {
  positiveInt("targetSplitBytes", targetSplitBytes, DEFAULT_TARGET);
  positiveInt("maxObjectsPerSplit", maxObjectsPerSplit, 1000);
  const sorted = [...listing].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i].key === sorted[i - 1].key) throw new Error(`listing has key ${JSON.stringify(sorted[i].key)} twice`);
  }
  const bins: ObjectEntry[][] = [];
  let bin: ObjectEntry[] = [];
  let binBytes = 0;
  const close = () => {
    if (bin.length) bins.push(bin);
    bin = [];
    binBytes = 0;
  };
  for (const o of sorted) {
    if (o.size >= targetSplitBytes) {
      close();
      bins.push([o]);
      continue;
    }
    if (bin.length >= maxObjectsPerSplit || (bin.length > 0 && binBytes + o.size > targetSplitBytes)) close();
    bin.push({ key: o.key, size: o.size, etag: o.etag });
    binBytes += o.size;
  }
  close();
  return await Promise.all(bins.map(async (objects) => ({
    id: await splitIdFrom(["objstore-v1", ...objects.flatMap((o) => [o.key, o.etag])]),
    descriptor: { objects },
    // Weight is bytes; an all-empty split still costs something (weights must be > 0).
    weight: Math.max(1, objects.reduce((s, o) => s + o.size, 0)),
  })));
}

function resumeFrom(progress: SplitProgress | undefined, objects: SplitObject[]): ResumeState {
  if (!progress?.state) return { object: 0, offset: objects[0]?.from ?? 0 };
  const r = stateSchema.safeParse(progress.state);
  if (!r.success) throw new Error(`unreadable resume state ${JSON.stringify(progress.state)}: ${r.error.message}`);
  const s = r.data;
  if (s.object > objects.length || (s.object < objects.length && s.offset > objects[s.object].size)) {
    throw new Error(`resume state ${JSON.stringify(s)} is outside the split (${objects.length} objects)`);
  }
  return s;
}

/**
 * Monotonic position of `state` within the split: bytes before it (whole
 * objects, so a cut, which keeps the objects before the position as they
 * are, never moves it).
 */
function positionOf(objects: SplitObject[], state: ResumeState): number {
  let p = 0;
  for (let i = 0; i < state.object && i < objects.length; i++) p += objects[i].size;
  return p + state.offset;
}

const startOf = (o: SplitObject): number => o.from ?? 0;
const endOf = (o: SplitObject): number => o.to ?? o.size;

/**
 * Bytes of the split's ranges, and bytes of them not yet read at `state`
 * (the estimate a commit carries; `undefined` for a split of empty objects).
 */
export function estimateOf(objects: SplitObject[], state: ResumeState): SplitEstimate | undefined {
  let total = 0;
  let left = 0;
  objects.forEach((o, i) => {
    const bytes = Math.max(0, endOf(o) - startOf(o));
    total += bytes;
    if (i > state.object) left += bytes;
    else if (i === state.object) left += Math.max(0, endOf(o) - Math.max(startOf(o), state.offset));
  });
  return total > 0 ? { left: Math.min(left, total), total, unit: "bytes" } : undefined;
}

/**
 * Cuts the bytes of `objects` left at `at` into at most `parts` pieces of at
 * least `minBytes` each (fewer when too little is left, `undefined` when
 * not even two): the descriptor the lane keeps (every object before the
 * first cut, unchanged, so the lane's progress still points where it
 * did), and one descriptor per further piece. Every cut lies after `at`
 * (so the line being read there stays with the lane); a cut inside an
 * object ends the kept range there and starts the next one there, both
 * under the line rule of {@linkcode SplitObject}. Pure.
 *
 * @example
 * ```ts
 * import { cutRemaining } from "./source.ts";
 * const cut = cutRemaining([{ key: "big", size: 1000, etag: "e" }], { object: 0, offset: 100 }, 3, 200);
 * // keep: big [0, 400); residuals: big [400, 700), big [700, 1000)
 * console.log(cut?.keep, cut?.residuals.map((r) => r.descriptor));
 * ```
 */
export function cutRemaining(
  objects: SplitObject[],
  at: ResumeState,
  parts: number,
  minBytes: number,
): { keep: ObjectSplit; weight: number; residuals: { descriptor: ObjectSplit; weight: number }[] } | undefined {
  // The bytes left, as [lo, hi) segments of objects at and after the position.
  const segs: { i: number; lo: number; hi: number; before: number }[] = [];
  let left = 0;
  for (let i = at.object; i < objects.length; i++) {
    const lo = i === at.object ? Math.max(startOf(objects[i]), at.offset) : startOf(objects[i]);
    const hi = endOf(objects[i]);
    if (hi <= lo) continue;
    segs.push({ i, lo, hi, before: left });
    left += hi - lo;
  }
  const n = Math.min(Math.floor(parts), Math.floor(left / Math.max(1, minBytes)));
  if (!(n >= 2)) return undefined;
  const step = Math.floor(left / n);
  // A cut is a place between two bytes: object `i` at byte `offset`
  // (`offset` at the object's range start: the cut is before the object).
  const cuts: { i: number; offset: number; whole: boolean }[] = [];
  for (let k = 1; k < n; k++) {
    const t = k * step; // 0 < t < left: strictly after the position
    const s = segs.find((x) => t < x.before + (x.hi - x.lo))!;
    const offset = s.lo + (t - s.before);
    cuts.push({ i: s.i, offset, whole: t === s.before });
  }
  const bytesOf = (d: SplitObject[]) => Math.max(1, d.reduce((b, o) => b + Math.max(0, endOf(o) - startOf(o)), 0));
  // The piece from cut `a` (undefined: the split's start) to cut `b` (undefined: its end).
  const piece = (a: (typeof cuts)[number] | undefined, b: (typeof cuts)[number] | undefined): SplitObject[] => {
    const first = a ? a.i : 0;
    const last = b ? (b.whole ? b.i - 1 : b.i) : objects.length - 1;
    const out: SplitObject[] = [];
    for (let i = first; i <= last; i++) {
      const o = { ...objects[i] };
      if (a && i === a.i && !a.whole) o.from = a.offset;
      if (b && i === b.i && !b.whole) o.to = b.offset;
      out.push(o);
    }
    return out;
  };
  const keep = piece(undefined, cuts[0]);
  const residuals = cuts.map((c, k) => piece(c, cuts[k + 1]));
  return {
    keep: { objects: keep },
    weight: bytesOf(keep),
    residuals: residuals.map((objects) => ({ descriptor: { objects }, weight: bytesOf(objects) })),
  };
}

const NL = 0x0a;

/**
 * Splits a byte stream into newline-delimited records, tracking each
 * record's byte offset. Empty lines are skipped (not records); a final line
 * without a newline is a record. `\r\n` endings are accepted.
 */
export async function* ndjsonRecords(
  chunks: AsyncIterable<Uint8Array>,
  startOffset: number,
): AsyncGenerator<{ offset: number; end: number; line: string }> {
  const decoder = new TextDecoder();
  let carry: Uint8Array = new Uint8Array(0);
  let carryStart = startOffset; // offset of carry[0]
  for await (const chunk of chunks) {
    let buf: Uint8Array;
    if (carry.length) {
      buf = new Uint8Array(carry.length + chunk.length);
      buf.set(carry);
      buf.set(chunk, carry.length);
    } else buf = chunk;
    let from = 0;
    for (;;) {
      const nl = buf.indexOf(NL, from);
      if (nl < 0) break;
      const end = nl > from && buf[nl - 1] === 0x0d ? nl - 1 : nl;
      if (end > from) {
        yield { offset: carryStart + from, end: carryStart + nl + 1, line: decoder.decode(buf.subarray(from, end)) };
      }
      from = nl + 1;
    }
    carry = buf.slice(from);
    carryStart += from;
  }
  if (carry.length) {
    const end = carry[carry.length - 1] === 0x0d ? carry.length - 1 : carry.length;
    if (end > 0) yield { offset: carryStart, end: carryStart + carry.length, line: decoder.decode(carry.subarray(0, end)) };
  }
}

/**
 * The object-store backfill {@linkcode SplitSource}: a final plan of
 * byte-packed splits; each lane streams its objects' records into the sink,
 * commits at a bounded cadence (with an estimate of the bytes left), stops
 * at once on `lane.signal` and at a record boundary (committing the tail) on
 * `lane.revokeSignal`.
 *
 * `split` cuts a running lane's bytes left into pieces of at least
 * `minCutBytes` ({@linkcode cutRemaining}), after the position the lane has
 * read to (its last committed or accepted position, or further: the record
 * `run` is writing stays with the lane). `run` reads `lane.descriptor`
 * again before every record, so it stops where the kept range ends. A cut
 * whose descriptors would not fit the coordinator's 2048 bytes of JSON (a
 * split of many objects) is declined.
 */
export function objectStoreSource(options: ObjectStoreSourceOptions): SplitSource<ObjectSplit> {
  const { backend } = options;
  if (!backend) throw new TypeError("object store source: a backend (S3 bucket or directory) is required");
  if (!options.sink) throw new TypeError("object store source: a sink is required");
  const target = positiveInt("targetSplitBytes", options.targetSplitBytes, DEFAULT_TARGET);
  const maxObjects = positiveInt("maxObjectsPerSplit", options.maxObjectsPerSplit, 1000);
  const everyRecords = positiveInt("commitEveryRecords", options.commitEveryRecords, 500);
  const everyMs = positiveInt("commitEveryMs", options.commitEveryMs, 1000);
  const minCut = positiveInt("minCutBytes", options.minCutBytes, DEFAULT_MIN_CUT);
  const sink: RecordSink = typeof options.sink === "function" ? { write: options.sink } : options.sink;
  const warn = options.onWarning ?? (() => {});
  /** Running lanes (by lane id): where each has read to, the record it is writing included. */
  const reading = new Map<string, () => ResumeState>();
  const encoder = new TextEncoder();

  return {
    fingerprint: () => `objstore-v1|${backend.describe}|${target}|${maxObjects}`,
    descriptorSchema,
    async plan(ctx): Promise<PlanResult> {
      const listing: ObjectEntry[] = [];
      for await (const o of backend.list(ctx.signal)) listing.push(o);
      const splits = await packObjects(listing, target, maxObjects);
      return { finality: "final", splits };
    },
    split(lane, { parts }) {
      const objects = lane.descriptor.objects;
      let at: ResumeState;
      try {
        at = reading.get(lane.id)?.() ?? resumeFrom(lane.progress, objects);
      } catch {
        return undefined; // unreadable progress: run fails the split, nothing to cut
      }
      const cut = cutRemaining(objects, at, parts, minCut);
      if (!cut) return undefined;
      const sizes = [cut.keep, ...cut.residuals.map((r) => r.descriptor)].map((d) => encoder.encode(JSON.stringify(d)).byteLength);
      if (sizes.some((b) => b > MAX_CUT_DESCRIPTOR_BYTES)) {
        warn("cut declined: a piece's descriptor is over 2048 bytes of JSON (too many objects)", {
          splitId: lane.splitId,
          bytes: Math.max(...sizes),
        });
        return undefined;
      }
      return cut;
    },
    async run(lane: Lane<ObjectSplit>): Promise<void> {
      // lane.descriptor is read again at every step: a cut shrinks it.
      const objectsNow = () => lane.descriptor.objects;
      let state = resumeFrom(lane.progress, objectsNow());
      let pending = 0;
      let lastCommit = Date.now();
      /** Byte offset of the record being written, if one is: it stays with the lane whatever is cut. */
      let writing: number | undefined;
      reading.set(lane.id, () => (writing === undefined ? state : { object: state.object, offset: writing }));

      const progress = (): SplitProgress => {
        const estimate = estimateOf(objectsNow(), state);
        return { watermark: positionOf(objectsNow(), state), state: { ...state }, ...(estimate ? { estimate } : {}) };
      };

      /** Commits the current position; false when the lane is gone. */
      const commit = async (): Promise<boolean> => {
        await sink.flush?.();
        const records = pending;
        try {
          await lane.commit(progress(), { records });
          pending = 0;
          lastCommit = Date.now();
          return true;
        } catch (e) {
          if (e instanceof FencedError || lane.signal.aborted) return false;
          // A store outage: the driver keeps the progress for its next write; so do we.
          warn("progress commit failed; retrying at the next cadence", { splitId: lane.splitId, error: String(e) });
          lastCommit = Date.now();
          return true;
        }
      };

      try {
        while (state.object < objectsNow().length) {
          const entry = objectsNow()[state.object];
          // Where this object's unread lines start: a range start not read yet
          // may be mid-line (read from the byte before it and skip to the next
          // line start); a committed offset is a line start.
          const start = Math.max(state.offset, startOf(entry));
          if (start < endOf(entry)) {
            const readAt = start === startOf(entry) && start > 0 ? start - 1 : start;
            let records: AsyncGenerator<{ offset: number; end: number; line: string }> | undefined;
            try {
              records = ndjsonRecords(backend.read(entry, readAt, lane.signal), readAt);
              for await (const rec of records) {
                if (lane.signal.aborted) return;
                if (rec.offset < start) continue; // the line that began before the range: not ours
                // Lines starting at or after the range's end (cut meanwhile, perhaps) are not ours.
                if (rec.offset >= endOf(objectsNow()[state.object])) break;
                writing = rec.offset;
                try {
                  await sink.write({ splitId: lane.splitId, key: entry.key, etag: entry.etag, offset: rec.offset, line: rec.line });
                } finally {
                  writing = undefined;
                }
                if (lane.signal.aborted) return; // lost mid-write: commit nothing
                state = { object: state.object, offset: rec.end };
                pending++;
                if (lane.revokeSignal.aborted) {
                  // Stop intake at this record boundary, commit the tail, hand over.
                  await commit();
                  return;
                }
                if (pending >= everyRecords || Date.now() - lastCommit >= everyMs) {
                  if (!(await commit())) return;
                }
              }
            } catch (e) {
              if (lane.signal.aborted) return;
              if (e instanceof ObjectChangedError) {
                await lane.fail(e.message);
                return;
              }
              throw e;
            } finally {
              await records?.return(undefined);
            }
            // Fully read (trailing blank lines are not records); backends check the length.
          }
          const next = objectsNow()[state.object + 1];
          state = { object: state.object + 1, offset: next ? startOf(next) : 0 };
          if (lane.revokeSignal.aborted) {
            await commit();
            return;
          }
        }
        if (lane.signal.aborted) return;
        await sink.flush?.();
        await lane.complete(progress(), { records: pending });
      } finally {
        reading.delete(lane.id);
      }
    },
  };
}
