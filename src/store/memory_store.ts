/**
 * The embedded in-memory store: a faithful model of a NATS JetStream KV
 * bucket with history 1.
 *
 * @module
 */
import { SplitleaseError, ValueTooLargeError } from "../errors.ts";
import { Channel } from "../util/channel.ts";
import { assertValidFilter, assertValidKey, matchesFilter } from "./keys.ts";
import {
  type DeleteResult,
  type KeyFilter,
  MAX_VALUE_BYTES,
  type Store,
  type StoreEntry,
  type Watch,
  type WatchEvent,
  type WriteResult,
} from "./store.ts";

interface Slot {
  /** `null` is a delete marker (tombstone), as NATS keeps with history 1. */
  value: string | null;
  revision: number;
}

interface Watcher {
  filter: KeyFilter;
  channel: Channel<WatchEvent>;
}

const encoder = new TextEncoder();

/**
 * Options of {@linkcode MemoryStore}.
 *
 * @example
 * ```ts
 * import { MemoryStore, type MemoryStoreOptions } from "@splitlease/splitlease";
 * const options: MemoryStoreOptions = { maxValueBytes: 1024 };
 * const store = new MemoryStore(options);
 * ```
 */
export interface MemoryStoreOptions {
  /** Value size limit in bytes (default {@linkcode MAX_VALUE_BYTES}). */
  maxValueBytes?: number;
}

/**
 * In-memory {@linkcode Store} modelling NATS KV: one revision sequence for
 * the whole bucket, create allowed after a delete, delete markers visible to
 * watchers (as `delete` events) and to `update` (a CAS at the marker's
 * revision succeeds, as on NATS). Many coordinators in one process may share
 * one instance.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * const store = new MemoryStore();
 * const a = await store.create("k", "1");
 * const b = await store.create("k", "2");
 * console.log(a.ok, b.ok); // true false
 * await store.close();
 * ```
 */
export class MemoryStore implements Store {
  #slots = new Map<string, Slot>();
  #watchers = new Set<Watcher>();
  #revision = 0;
  #closed = false;
  #maxValueBytes: number;

  /** Creates an empty store. */
  constructor(options: MemoryStoreOptions = {}) {
    this.#maxValueBytes = options.maxValueBytes ?? MAX_VALUE_BYTES;
  }

  /** The last revision written anywhere in the store (0 when empty). */
  get revision(): number {
    return this.#revision;
  }

  // deno-lint-ignore require-await -- async so a bad key or a closed store rejects instead of throwing
  async create(key: string, value: string): Promise<WriteResult> {
    this.#checkWrite("create", key, value);
    const slot = this.#slots.get(key);
    if (slot && slot.value !== null) return { ok: false, conflict: true };
    return { ok: true, revision: this.#put(key, value) };
  }

  // deno-lint-ignore require-await -- async so a bad key or a closed store rejects instead of throwing
  async update(key: string, value: string, revision: number): Promise<WriteResult> {
    this.#checkWrite("update", key, value);
    if (!Number.isInteger(revision) || revision <= 0) {
      throw new SplitleaseError(
        "INVALID_ARGUMENT",
        `Update of key "${key}" needs a positive integer revision, got ${revision}`,
      );
    }
    const slot = this.#slots.get(key);
    if (!slot || slot.revision !== revision) {
      return { ok: false, conflict: true };
    }
    return { ok: true, revision: this.#put(key, value) };
  }

  // deno-lint-ignore require-await -- async so a bad key or a closed store rejects instead of throwing
  async delete(key: string, revision?: number): Promise<DeleteResult> {
    this.#checkOpen("delete");
    assertValidKey(key);
    const slot = this.#slots.get(key);
    if (!slot || slot.value === null) return { ok: true };
    if (revision !== undefined && slot.revision !== revision) {
      return { ok: false, conflict: true };
    }
    const rev = ++this.#revision;
    this.#slots.set(key, { value: null, revision: rev });
    this.#emit(key, { type: "delete", key, revision: rev });
    return { ok: true };
  }

  // deno-lint-ignore require-await -- async so a bad key or a closed store rejects instead of throwing
  async get(key: string): Promise<StoreEntry | undefined> {
    this.#checkOpen("get");
    assertValidKey(key);
    const slot = this.#slots.get(key);
    if (!slot || slot.value === null) return undefined;
    return { key, value: slot.value, revision: slot.revision };
  }

  // deno-lint-ignore require-await -- async so a bad key or a closed store rejects instead of throwing
  async list(filter: KeyFilter): Promise<StoreEntry[]> {
    this.#checkOpen("list");
    assertValidFilter(filter);
    const out: StoreEntry[] = [];
    for (const [key, slot] of this.#slots) {
      if (slot.value !== null && matchesFilter(filter, key)) {
        out.push({ key, value: slot.value, revision: slot.revision });
      }
    }
    out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return out;
  }

  watch(filter: KeyFilter): Watch {
    this.#checkOpen("watch");
    assertValidFilter(filter);
    const channel = new Channel<WatchEvent>();
    const snapshot: StoreEntry[] = [];
    for (const [key, slot] of this.#slots) {
      if (slot.value !== null && matchesFilter(filter, key)) {
        snapshot.push({ key, value: slot.value, revision: slot.revision });
      }
    }
    // NATS replays a watch in stream order, i.e. by revision.
    snapshot.sort((a, b) => a.revision - b.revision);
    for (const e of snapshot) channel.push({ type: "put", ...e });
    channel.push({ type: "ready" });
    const watcher: Watcher = { filter, channel };
    this.#watchers.add(watcher);
    const stop = (): Promise<void> => {
      this.#watchers.delete(watcher);
      channel.close();
      return Promise.resolve();
    };
    return {
      stop,
      [Symbol.asyncIterator]: () => channel[Symbol.asyncIterator](),
      [Symbol.asyncDispose]: stop,
    };
  }

  // deno-lint-ignore require-await -- async so a bad key or a closed store rejects instead of throwing
  async close(): Promise<void> {
    this.#closed = true;
    for (const w of this.#watchers) w.channel.close();
    this.#watchers.clear();
  }

  /** Closes the store (for `await using`). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #put(key: string, value: string): number {
    const rev = ++this.#revision;
    this.#slots.set(key, { value, revision: rev });
    this.#emit(key, { type: "put", key, value, revision: rev });
    return rev;
  }

  #emit(key: string, event: WatchEvent): void {
    for (const w of this.#watchers) {
      if (matchesFilter(w.filter, key)) w.channel.push(event);
    }
  }

  #checkOpen(op: string): void {
    if (this.#closed) {
      throw new SplitleaseError("CLOSED", `Store operation "${op}" failed: the store is closed`);
    }
  }

  #checkWrite(op: string, key: string, value: string): void {
    this.#checkOpen(op);
    assertValidKey(key);
    if (typeof value !== "string") {
      throw new SplitleaseError("INVALID_ARGUMENT", `Value for key "${key}" must be a string`);
    }
    // Cheap bound first: a UTF-8 byte is at most 3 per UTF-16 unit here.
    if (value.length * 3 > this.#maxValueBytes) {
      const size = encoder.encode(value).byteLength;
      if (size > this.#maxValueBytes) throw new ValueTooLargeError(key, size, this.#maxValueBytes);
    }
  }
}
