/**
 * A sink that appends each record's line to a file, batching writes and
 * writing the batch before every progress commit (so what is committed is
 * on disk). Uses `node:fs/promises` (Deno, Bun and Node).
 *
 * @module
 */
import { open } from "node:fs/promises";
import type { ObjectRecord, RecordSink } from "./source.ts";

/** A {@linkcode RecordSink} writing to a file; `close()` flushes and closes it. */
export interface FileSink extends RecordSink {
  /** Records written so far (flushed or buffered). */
  readonly count: number;
  /** Writes the buffered lines. */
  flush(): Promise<void>;
  /** Flushes and closes the file. */
  close(): Promise<void>;
}

/**
 * Opens `path` for appending. `format` turns a record into one line
 * (default: the record's own text).
 */
export async function fileSink(
  path: string,
  format: (r: ObjectRecord) => string = (r) => r.line,
  maxBufferedBytes = 256 * 1024,
): Promise<FileSink> {
  if (!path) throw new TypeError("file sink: a path is required");
  const handle = await open(path, "a");
  const enc = new TextEncoder();
  let parts: string[] = [];
  let bytes = 0;
  let count = 0;
  let chain: Promise<void> = Promise.resolve();
  const flush = (): Promise<void> => {
    if (parts.length === 0) return chain;
    const data = enc.encode(parts.join(""));
    parts = [];
    bytes = 0;
    chain = chain.then(async () => {
      let off = 0;
      while (off < data.length) off += (await handle.write(data, off, data.length - off)).bytesWritten;
    });
    return chain;
  };
  return {
    get count() {
      return count;
    },
    write(r: ObjectRecord) {
      const line = format(r) + "\n";
      parts.push(line);
      bytes += line.length;
      count++;
      if (bytes >= maxBufferedBytes) return flush();
    },
    flush,
    async close() {
      await flush();
      await handle.close();
    },
  };
}
