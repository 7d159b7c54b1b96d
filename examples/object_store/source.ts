/**
 * Object-store backfill source: a planner lists a prefix of a bucket (or a
 * local directory) and bin-packs the objects into splits by bytes; workers
 * stream newline-delimited records out of each split's objects, hand every
 * record to a sink, and commit `{watermark, state: {object, offset}}` at a
 * bounded cadence so a takeover resumes mid-object.
 *
 * The backend (S3 via `./s3.ts`, a directory via `./dir.ts`) is behind the
 * small {@linkcode ObjectBackend} interface; this file uses Web standards only.
 *
 * @module
 */
import { z } from "zod";
import { FencedError, type Lane, type PlanResult, type SplitProgress, type SplitSource, splitIdFrom } from "../../mod.ts";

/** One object of a listing (and of a split descriptor). */
export type ObjectEntry = {
  /** Key relative to the bucket (S3) or to the directory (local). */
  key: string;
  /** Size in bytes. */
  size: number;
  /** Version tag: the S3 ETag, or `size-mtimeMs` for files. */
  etag: string;
};

/** The descriptor of a split: the objects it covers, in key order. */
export type ObjectSplit = {
  objects: ObjectEntry[];
};

/** Zod schema of {@linkcode ObjectSplit}: a descriptor that fails it is poison. */
export const descriptorSchema: z.ZodType<ObjectSplit> = z.object({
  objects: z.array(z.object({
    key: z.string().min(1),
    size: z.number().int().nonnegative(),
    etag: z.string().min(1),
  }).strict()).min(1),
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
  /** Called on recoverable trouble (a commit that failed during a store outage). */
  onWarning?: (message: string, fields: Record<string, unknown>) => void;
}

const DEFAULT_TARGET = 8 * 1024 * 1024;

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

function resumeFrom(progress: SplitProgress | undefined, objects: ObjectEntry[]): ResumeState {
  if (!progress?.state) return { object: 0, offset: 0 };
  const r = stateSchema.safeParse(progress.state);
  if (!r.success) throw new Error(`unreadable resume state ${JSON.stringify(progress.state)}: ${r.error.message}`);
  const s = r.data;
  if (s.object > objects.length || (s.object < objects.length && s.offset > objects[s.object].size)) {
    throw new Error(`resume state ${JSON.stringify(s)} is outside the split (${objects.length} objects)`);
  }
  return s;
}

/** Monotonic position of `state` within the split: bytes before it. */
function positionOf(objects: ObjectEntry[], state: ResumeState): number {
  let p = 0;
  for (let i = 0; i < state.object && i < objects.length; i++) p += objects[i].size;
  return p + state.offset;
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
 * commits at a bounded cadence, stops at once on `lane.signal` and at a
 * record boundary (committing the tail) on `lane.revokeSignal`.
 */
export function objectStoreSource(options: ObjectStoreSourceOptions): SplitSource<ObjectSplit> {
  const { backend } = options;
  if (!backend) throw new TypeError("object store source: a backend (S3 bucket or directory) is required");
  if (!options.sink) throw new TypeError("object store source: a sink is required");
  const target = positiveInt("targetSplitBytes", options.targetSplitBytes, DEFAULT_TARGET);
  const maxObjects = positiveInt("maxObjectsPerSplit", options.maxObjectsPerSplit, 1000);
  const everyRecords = positiveInt("commitEveryRecords", options.commitEveryRecords, 500);
  const everyMs = positiveInt("commitEveryMs", options.commitEveryMs, 1000);
  const sink: RecordSink = typeof options.sink === "function" ? { write: options.sink } : options.sink;
  const warn = options.onWarning ?? (() => {});

  return {
    fingerprint: () => `objstore-v1|${backend.describe}|${target}|${maxObjects}`,
    descriptorSchema,
    async plan(ctx): Promise<PlanResult> {
      const listing: ObjectEntry[] = [];
      for await (const o of backend.list(ctx.signal)) listing.push(o);
      const splits = await packObjects(listing, target, maxObjects);
      return { finality: "final", splits };
    },
    async run(lane: Lane<ObjectSplit>): Promise<void> {
      const objects = lane.descriptor.objects;
      let state = resumeFrom(lane.progress, objects);
      let pending = 0;
      let lastCommit = Date.now();

      /** Commits the current position; false when the lane is gone. */
      const commit = async (): Promise<boolean> => {
        await sink.flush?.();
        const records = pending;
        try {
          await lane.commit({ watermark: positionOf(objects, state), state: { ...state } }, { records });
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

      while (state.object < objects.length) {
        const entry = objects[state.object];
        if (state.offset < entry.size) {
          let records: AsyncGenerator<{ offset: number; end: number; line: string }> | undefined;
          try {
            records = ndjsonRecords(backend.read(entry, state.offset, lane.signal), state.offset);
            for await (const rec of records) {
              if (lane.signal.aborted) return;
              await sink.write({ splitId: lane.splitId, key: entry.key, etag: entry.etag, offset: rec.offset, line: rec.line });
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
        state = { object: state.object + 1, offset: 0 };
        if (lane.revokeSignal.aborted) {
          await commit();
          return;
        }
      }
      if (lane.signal.aborted) return;
      await sink.flush?.();
      await lane.complete({ watermark: positionOf(objects, state), state: { ...state } }, { records: pending });
    },
  };
}
