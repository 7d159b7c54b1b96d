/**
 * File tail under splitlease: an open (discovery) plan turns every new file
 * of a directory into a split; a worker tails its file, emits complete lines
 * only, commits the byte offset after the last emitted line as the
 * watermark, and completes the split once the file is sealed (a
 * `<name>.done` marker exists) and read to its end.
 *
 * The job is open: it never completes by itself. Workers run until they are
 * shut down (SIGTERM, `POST /drain`), which hands every held file over
 * cooperatively at a line boundary.
 *
 * @module
 */
import { open, readdir, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { z } from "zod";
import { FencedError, SplitleaseError, splitIdFrom } from "../../mod.ts";
import type { Json, PlanContext, PlannedSplit, PlanResult, Lane, SplitSource } from "../../mod.ts";

/** Configuration of {@linkcode fileTailSource}. */
export const FileTailConfigSchema = z.object({
  /** Directory watched for new files (not recursive). */
  dir: z.string().min(1),
  /** Only file names matching this regular expression become splits (default: every file). */
  include: z.string().refine((s) => {
    try {
      new RegExp(s);
      return true;
    } catch {
      return false;
    }
  }, "must be a valid regular expression").optional(),
  /** Suffix of the marker that seals a file: `<name><sealSuffix>` (default `.done`). */
  sealSuffix: z.string().min(1).default(".done"),
  /** How often a worker polls its file for growth, ms. */
  pollMs: z.number().int().min(5).max(60_000).default(250),
  /** Bytes read per read call. */
  readChunkBytes: z.number().int().min(16).max(16 * 1024 * 1024).default(64 * 1024),
  /** Lines per emitted batch (one sink call, one commit). */
  maxBatchLines: z.number().int().min(1).max(1_000_000).default(1000),
  /** A line longer than this fails the split (poison) instead of growing memory without bound. */
  maxLineBytes: z.number().int().min(1).default(1024 * 1024),
});

/** Input form of the config (defaults optional). */
export type FileTailConfigInput = z.input<typeof FileTailConfigSchema>;
/** Validated config. */
export type FileTailConfig = z.output<typeof FileTailConfigSchema>;

/** Validates a config; throws `INVALID_CONFIG` naming every broken rule. */
export function parseFileTailConfig(input: unknown): FileTailConfig {
  const r = FileTailConfigSchema.safeParse(input);
  if (!r.success) {
    const issues = r.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`);
    throw new SplitleaseError("INVALID_CONFIG", `invalid file_tail config: ${issues.join("; ")}`);
  }
  return r.data;
}

/** Descriptor of one file split. */
export const FileDescriptorSchema = z.object({
  v: z.literal(1),
  /** Absolute directory. */
  dir: z.string().min(1),
  /** File name inside `dir` (no path separators). */
  name: z.string().min(1).refine((n) => !n.includes("/") && !n.includes("\\") && n !== "." && n !== "..", {
    message: "must be a plain file name",
  }),
});

/** A file split's descriptor. */
export type FileDescriptor = z.output<typeof FileDescriptorSchema>;

/** The planner cursor: names already planned (and still present). */
export const TailCursorSchema = z.object({ v: z.literal(1), seen: z.array(z.string()) });

/** A framed line: its text (no newline, no trailing `\r`) and the byte offset where it starts. */
export interface FramedLine {
  /** Byte offset of the line's first byte in the file. */
  offset: number;
  /** The line, decoded as UTF-8. */
  text: string;
}

/** Thrown when a line exceeds `maxLineBytes`. */
export class LineTooLongError extends Error {
  /** Byte offset where the overlong line starts. */
  readonly offset: number;
  /** The limit it exceeds. */
  readonly limit: number;
  constructor(offset: number, limit: number) {
    super(`line at byte ${offset} exceeds maxLineBytes (${limit}) without a newline`);
    this.name = "LineTooLongError";
    this.offset = offset;
    this.limit = limit;
  }
}

const NL = 0x0a;
const CR = 0x0d;
const decoder = new TextDecoder();

/**
 * Splits a byte stream into complete lines across arbitrary chunk
 * boundaries (a multi-byte character or a `\r\n` may straddle two chunks).
 * `committed` is the offset just after the last complete line: what a
 * watermark may say has been emitted.
 */
export class LineFramer {
  #carry: Uint8Array = new Uint8Array(0);
  #base: number;
  #maxLineBytes: number;

  /** Starts framing at byte `offset` (a line boundary: 0 or a committed watermark). */
  constructor(offset = 0, maxLineBytes = 1024 * 1024) {
    this.#base = offset;
    this.#maxLineBytes = maxLineBytes;
  }

  /** Offset just after the last complete line. */
  get committed(): number {
    return this.#base;
  }

  /** Bytes of the incomplete line carried over. */
  get pending(): number {
    return this.#carry.length;
  }

  /** Offset of the next byte expected (`committed + pending`). */
  get position(): number {
    return this.#base + this.#carry.length;
  }

  /** Adds the next bytes; returns the lines they complete. */
  push(chunk: Uint8Array): FramedLine[] {
    let buf = chunk;
    if (this.#carry.length > 0) {
      buf = new Uint8Array(this.#carry.length + chunk.length);
      buf.set(this.#carry);
      buf.set(chunk, this.#carry.length);
    }
    const out: FramedLine[] = [];
    let start = 0;
    for (let i = buf.indexOf(NL); i >= 0; i = buf.indexOf(NL, start)) {
      out.push(this.#line(buf, start, i));
      start = i + 1;
    }
    this.#base += start;
    this.#carry = buf.slice(start);
    if (this.#carry.length > this.#maxLineBytes) throw new LineTooLongError(this.#base, this.#maxLineBytes);
    return out;
  }

  /** Ends the stream: the trailing line without a newline, if any. */
  flush(): FramedLine | undefined {
    if (this.#carry.length === 0) return undefined;
    const line = this.#line(this.#carry, 0, this.#carry.length);
    this.#base += this.#carry.length;
    this.#carry = new Uint8Array(0);
    return line;
  }

  #line(buf: Uint8Array, start: number, end: number): FramedLine {
    const stop = end > start && buf[end - 1] === CR ? end - 1 : end;
    return { offset: this.#base + start, text: decoder.decode(buf.subarray(start, stop)) };
  }
}

/** A batch of lines handed to the sink. */
export interface LineBatch {
  /** Split id of the file. */
  splitId: string;
  /** File name. */
  file: string;
  /** The lines, in file order. */
  lines: FramedLine[];
}

/** Where lines go. Must be durable when it resolves (the offset is committed next). */
export type LineSink = (batch: LineBatch) => Promise<void>;

/** The split id of a file: deterministic from the directory and the name. */
export function fileSplitId(dir: string, name: string): Promise<string> {
  return splitIdFrom(["file_tail", dir, name]);
}

/**
 * One discovery pass: lists `dir`, returns the files not in `cursor` as new
 * splits and the next cursor (names seen that still exist, plus the new
 * ones, so the cursor stays as small as the directory). Markers, hidden
 * files and non-matching names are skipped.
 */
export async function discover(
  config: FileTailConfig,
  cursor: Json | undefined,
): Promise<{ splits: PlannedSplit[]; cursor: { v: 1; seen: string[] } }> {
  const dir = resolve(config.dir);
  let seen: string[] = [];
  if (cursor !== undefined && cursor !== null) {
    const c = TailCursorSchema.safeParse(cursor);
    if (!c.success) {
      throw new SplitleaseError("INVALID_ARGUMENT", `file_tail: unreadable planner cursor ${JSON.stringify(cursor).slice(0, 200)}`);
    }
    seen = c.data.seen;
  }
  const include = config.include ? new RegExp(config.include) : undefined;
  const entries = await readdir(dir, { withFileTypes: true });
  const present = new Set<string>();
  for (const e of entries) {
    if (!e.isFile()) continue;
    const name = e.name;
    if (name.startsWith(".") || name.endsWith(config.sealSuffix)) continue;
    if (include && !include.test(name)) continue;
    present.add(name);
  }
  const known = new Set(seen);
  const fresh = [...present].filter((n) => !known.has(n)).sort();
  const splits: PlannedSplit[] = [];
  for (const name of fresh) {
    splits.push({ id: await fileSplitId(dir, name), descriptor: { v: 1, dir, name }, weight: 1 });
  }
  const next = [...seen.filter((n) => present.has(n)), ...fresh].sort();
  return { splits, cursor: { v: 1, seen: next } };
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (e) {
    if ((e as { code?: string }).code === "ENOENT") return false;
    throw e;
  }
}

function sleep(ms: number, signals: AbortSignal[]): Promise<void> {
  return new Promise((resolve) => {
    if (signals.some((s) => s.aborted)) return resolve();
    const done = () => {
      clearTimeout(t);
      for (const s of signals) s.removeEventListener("abort", done);
      resolve();
    };
    const t = setTimeout(done, ms);
    for (const s of signals) s.addEventListener("abort", done, { once: true });
  });
}

/**
 * Builds the file-tail source: an open plan re-run every `replanIntervalMs`
 * (a coordinator setting), one split per file, lines to `sink`.
 * Delivery is at least once: a takeover replays the lines emitted after the
 * last committed offset (at most one batch per lane).
 */
export function fileTailSource(input: FileTailConfigInput, sink: LineSink): SplitSource<FileDescriptor> {
  const config = parseFileTailConfig(input);
  const dir = resolve(config.dir);
  return {
    fingerprint: () => `file_tail:v1:${dir}:${config.include ?? "*"}:${config.sealSuffix}`,
    descriptorSchema: FileDescriptorSchema,
    async plan(ctx: PlanContext): Promise<PlanResult> {
      const { splits, cursor } = await discover(config, ctx.cursor);
      return { finality: "open", splits, cursor };
    },
    async run(lane) {
      await tail(lane, config, sink);
    },
  };
}

async function tail(lane: Lane<FileDescriptor>, config: FileTailConfig, sink: LineSink): Promise<void> {
  const { dir, name } = lane.descriptor;
  const path = join(dir, name);
  const marker = path + config.sealSuffix;
  const wm = lane.progress?.watermark;
  const start = typeof wm === "number" && wm >= 0 ? wm : 0;
  let fh;
  try {
    fh = await open(path, "r");
  } catch (e) {
    if ((e as { code?: string }).code === "ENOENT") {
      await lane.fail(`file ${path} no longer exists`);
      return;
    }
    throw e;
  }
  const framer = new LineFramer(start, config.maxLineBytes);
  const buf = new Uint8Array(config.readChunkBytes);
  // Emits `lines` in slices of at most maxBatchLines, each followed by a commit of
  // the offset right after its last line; false when the lane was lost meanwhile.
  const emit = async (lines: FramedLine[], final: boolean): Promise<boolean> => {
    for (let i = 0; i < lines.length || (i === 0 && final); i += config.maxBatchLines) {
      const slice = lines.slice(i, i + config.maxBatchLines);
      const end = i + config.maxBatchLines;
      const last = end >= lines.length;
      const watermark = last ? framer.committed : lines[end].offset;
      if (lane.signal.aborted) return false;
      if (slice.length > 0) await sink({ splitId: lane.splitId, file: name, lines: slice });
      try {
        if (final && last) await lane.complete({ watermark }, { records: slice.length });
        else await lane.commit({ watermark }, { records: slice.length });
      } catch (e) {
        if (e instanceof FencedError) return false;
        throw e;
      }
      if (last) break;
    }
    return true;
  };
  try {
    const size = (await fh.stat()).size;
    if (size < start) {
      await lane.fail(`file ${path} shrank to ${size} bytes below the committed offset ${start} (truncated or replaced)`);
      return;
    }
    for (;;) {
      if (lane.signal.aborted || lane.revokeSignal.aborted) return; // every emitted line is committed
      // The marker is checked before reading: a file sealed before this read is read to its end by it.
      const sealed = await exists(marker);
      let eof = false;
      let batch: FramedLine[] = [];
      while (!eof && batch.length < config.maxBatchLines) {
        const { bytesRead } = await fh.read(buf, 0, buf.length, framer.position);
        if (bytesRead === 0) eof = true;
        else batch = batch.concat(framer.push(buf.subarray(0, bytesRead)));
      }
      if (eof && sealed) {
        const last = framer.flush();
        if (last) batch.push(last);
        await emit(batch, true);
        return;
      }
      if (batch.length > 0 && !(await emit(batch, false))) return;
      if (eof) await sleep(config.pollMs, [lane.signal, lane.revokeSignal]);
    }
  } catch (e) {
    if (e instanceof LineTooLongError) {
      await lane.fail(`${path}: ${e.message}`);
      return;
    }
    throw e;
  } finally {
    await fh.close().catch(() => {});
  }
}
