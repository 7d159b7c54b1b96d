/**
 * The embedded in-memory store: a faithful model of a NATS JetStream KV
 * bucket with history 1.
 *
 * @module
 */
import { SplitleaseError } from "../errors.ts";
import { Channel } from "../util/channel.ts";
import { assertValidFilter, assertValidKey, matchesFilter } from "./keys.ts";
import { assertValidWrite } from "./write_checks.ts";
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
  /** Revision of the last put or delete handed to this watcher. */
  last: number;
}


/**
 * Options of {@linkcode MemoryStore}.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { type MemoryStoreOptions } from "@splitlease/splitlease/store";
 * const options: MemoryStoreOptions = { maxValueBytes: 1024 };
 * const store = new MemoryStore(options);
 * ```
 */
export interface MemoryStoreOptions {
  /** Value size limit in bytes (default {@linkcode MAX_VALUE_BYTES}). */
  maxValueBytes?: number;
  /**
   * Resolve operations on a macrotask boundary (default `true`). Writes still
   * apply at once and in call order; only their promises wait, together,
   * for the next turn of the event loop, so that many coordinators sharing
   * one store in one process cannot starve timers (heartbeats) by running on
   * promise callbacks alone. Tests that drive a manual clock pass `false`
   * (operations then resolve as microtasks, deterministically).
   */
  yieldToTimers?: boolean;
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
  #yield: boolean;
  #pending: (() => void)[] = [];
  #port: MessageChannel | undefined;

  /** Creates an empty store. */
  constructor(options: MemoryStoreOptions = {}) {
    this.#maxValueBytes = options.maxValueBytes ?? MAX_VALUE_BYTES;
    this.#yield = options.yieldToTimers ?? true;
  }

  /** Resolves `value` now (microtask) or at the next shared macrotask boundary. */
  #deliver<T>(value: T): Promise<T> {
    if (!this.#yield) return Promise.resolve(value);
    return new Promise<T>((resolve) => {
      this.#pending.push(() => resolve(value));
      if (this.#port) return;
      // One message per turn for every operation of that turn; the channel is
      // closed once idle so an idle store keeps no process alive.
      const port = (this.#port = new MessageChannel());
      port.port1.onmessage = () => {
        const due = this.#pending.splice(0);
        for (const f of due) f();
        if (this.#pending.length > 0) port.port2.postMessage(null);
        else {
          port.port1.close();
          port.port2.close();
          if (this.#port === port) this.#port = undefined;
        }
      };
      port.port2.postMessage(null);
    });
  }

  /** The last revision written anywhere in the store (0 when empty). */
  get revision(): number {
    return this.#revision;
  }

  // deno-lint-ignore require-await -- async so a bad key or a closed store rejects instead of throwing
  async create(key: string, value: string): Promise<WriteResult> {
    this.#checkWrite("create", key, value);
    const slot = this.#slots.get(key);
    if (slot && slot.value !== null) return this.#deliver<WriteResult>({ ok: false, conflict: true });
    return this.#deliver<WriteResult>({ ok: true, revision: this.#put(key, value) });
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
      return this.#deliver<WriteResult>({ ok: false, conflict: true });
    }
    return this.#deliver<WriteResult>({ ok: true, revision: this.#put(key, value) });
  }

  // deno-lint-ignore require-await -- async so a bad key or a closed store rejects instead of throwing
  async delete(key: string, revision?: number): Promise<DeleteResult> {
    this.#checkOpen("delete");
    assertValidKey(key);
    const slot = this.#slots.get(key);
    if (!slot || slot.value === null) return this.#deliver<DeleteResult>({ ok: true });
    if (revision !== undefined && slot.revision !== revision) {
      return this.#deliver<DeleteResult>({ ok: false, conflict: true });
    }
    const rev = ++this.#revision;
    this.#slots.set(key, { value: null, revision: rev });
    this.#emit(key, { type: "delete", key, revision: rev });
    return this.#deliver<DeleteResult>({ ok: true });
  }

  // deno-lint-ignore require-await -- async so a bad key or a closed store rejects instead of throwing
  async get(key: string): Promise<StoreEntry | undefined> {
    this.#checkOpen("get");
    assertValidKey(key);
    const slot = this.#slots.get(key);
    if (!slot || slot.value === null) return this.#deliver(undefined);
    return this.#deliver<StoreEntry | undefined>({ key, value: slot.value, revision: slot.revision });
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
    return this.#deliver(out);
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
    const watcher: Watcher = { filter, channel, last: snapshot.length ? snapshot[snapshot.length - 1].revision : 0 };
    this.#watchers.add(watcher);
    const stop = (): Promise<void> => {
      this.#watchers.delete(watcher);
      channel.close();
      return Promise.resolve();
    };
    return {
      stop,
      position: () => this.#deliver(watcher.last),
      [Symbol.asyncIterator]: () => channel[Symbol.asyncIterator](),
      [Symbol.asyncDispose]: stop,
    };
  }

  // deno-lint-ignore require-await -- async so a bad key or a closed store rejects instead of throwing
  async close(): Promise<void> {
    this.#closed = true;
    for (const w of this.#watchers) w.channel.close();
    this.#watchers.clear();
    for (const f of this.#pending.splice(0)) f();
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
      if (!matchesFilter(w.filter, key)) continue;
      if (event.type === "put" || event.type === "delete") w.last = event.revision;
      w.channel.push(event);
    }
  }

  #checkOpen(op: string): void {
    if (this.#closed) {
      throw new SplitleaseError("CLOSED", `Store operation "${op}" failed: the store is closed`);
    }
  }

  #checkWrite(op: string, key: string, value: string): void {
    this.#checkOpen(op);
    assertValidWrite(key, value, this.#maxValueBytes);
  }
}
