/**
 * Local-directory backend of the object-store source: keys are paths
 * relative to the directory (`/`-separated), the ETag is `size-mtimeMs`, and
 * reads stream a file from a byte offset. Uses `node:fs/promises`, which
 * Deno, Bun and Node all provide.
 *
 * @module
 */
import { open, readdir, stat } from "node:fs/promises";
import { isAbsolute, join, resolve } from "node:path";
import { type ObjectBackend, ObjectChangedError, type ObjectEntry } from "./source.ts";

/** Options of {@linkcode directoryBackend}. */
export interface DirectoryBackendOptions {
  /** The directory to list (recursively). */
  dir: string;
  /** Only keys (relative paths) starting with this prefix. */
  prefix?: string;
  /** Read buffer size in bytes (default 64 KiB). */
  chunkBytes?: number;
}

/** The ETag of a file: its size and modification time, so an overwrite is a new version. */
export function fileEtag(size: number, mtimeMs: number): string {
  return `${size}-${Math.trunc(mtimeMs)}`;
}

/**
 * A backend over a local directory. Throws at once when `dir` is missing,
 * not absolute-resolvable or not a directory (checked again at listing time).
 */
export function directoryBackend(options: DirectoryBackendOptions): ObjectBackend {
  if (!options || typeof options.dir !== "string" || options.dir.trim() === "") {
    throw new TypeError("directory backend: `dir` is required (the directory holding the ndjson files)");
  }
  const root = isAbsolute(options.dir) ? options.dir : resolve(options.dir);
  const prefix = options.prefix ?? "";
  const chunkBytes = options.chunkBytes ?? 64 * 1024;
  if (!Number.isInteger(chunkBytes) || chunkBytes < 1) {
    throw new TypeError(`directory backend: chunkBytes must be an integer >= 1 (got ${options.chunkBytes})`);
  }
  const pathOf = (key: string) => join(root, ...key.split("/"));
  const probe = async (): Promise<void> => {
    let st;
    try {
      st = await stat(root);
    } catch (e) {
      throw new Error(`directory backend: cannot read directory ${root}: ${(e as Error).message}`);
    }
    if (!st.isDirectory()) throw new Error(`directory backend: ${root} is not a directory`);
  };

  return {
    describe: `dir:${root}${prefix ? `|${prefix}` : ""}`,
    probe,
    async *list(signal?: AbortSignal): AsyncIterable<ObjectEntry> {
      await probe();
      const walk = async function* (rel: string): AsyncGenerator<ObjectEntry> {
        signal?.throwIfAborted();
        const entries = await readdir(rel ? pathOf(rel) : root, { withFileTypes: true });
        entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
        for (const ent of entries) {
          const key = rel ? `${rel}/${ent.name}` : ent.name;
          if (ent.isDirectory()) {
            // Descend only where the prefix can still match.
            if (prefix.startsWith(key + "/") || key.startsWith(prefix) || (key + "/").startsWith(prefix)) {
              yield* walk(key);
            }
          } else if (ent.isFile() && key.startsWith(prefix)) {
            const s = await stat(pathOf(key));
            yield { key, size: s.size, etag: fileEtag(s.size, s.mtimeMs) };
          }
        }
      };
      yield* walk("");
    },
    async *read(entry: ObjectEntry, offset: number, signal: AbortSignal): AsyncIterable<Uint8Array> {
      if (entry.key.split("/").some((p) => p === ".." || p === "." || p === "")) {
        throw new Error(`directory backend: refusing key ${JSON.stringify(entry.key)}`);
      }
      const path = pathOf(entry.key);
      let handle;
      try {
        handle = await open(path, "r");
      } catch (e) {
        if ((e as { code?: string }).code === "ENOENT") throw new ObjectChangedError(entry.key, "file is gone");
        throw e;
      }
      try {
        const s = await handle.stat();
        const etag = fileEtag(s.size, s.mtimeMs);
        if (etag !== entry.etag) throw new ObjectChangedError(entry.key, `etag ${etag}, planned ${entry.etag}`);
        let pos = offset;
        while (pos < entry.size) {
          signal.throwIfAborted();
          const want = Math.min(chunkBytes, entry.size - pos);
          const buf = new Uint8Array(want);
          const { bytesRead } = await handle.read(buf, 0, want, pos);
          if (bytesRead === 0) throw new ObjectChangedError(entry.key, `file ended at byte ${pos} of ${entry.size}`);
          pos += bytesRead;
          yield bytesRead === want ? buf : buf.subarray(0, bytesRead);
        }
      } finally {
        await handle.close();
      }
    },
  };
}
