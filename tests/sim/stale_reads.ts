// Stale reads for the simulation's store adversary (issue 40, item 1): a
// store that serves `get` and `list` from a replica (a read replica, a
// follower, a cache in front) answers as of an older revision. Every answer
// is true of that revision — the value the key had then, or absent if it did
// not exist then — so the store keeps each key's history.
import { MemoryStore, type Store, StoreUnavailableError } from "../../mod.ts";
import { type Clock } from "../../testing.ts";
import { matchesFilter } from "../../src/store/keys.ts";
import type { DeleteResult, StoreEntry, Watch, WriteResult } from "../../store.ts";

/** How often, and how far back, reads are answered stale (see `SimConfig.staleReads`). */
export interface StaleReads {
  /** Probability that a `get` or `list` is answered from an older revision. */
  rate: number;
  /** Probability for reads of `member.*` records (default `rate`). */
  memberRate?: number;
  /** The answer is as of 1 to `depth` revisions (bucket-wide) before the store's newest. */
  depth: number;
}

/** A key's version: its value from `revision` on (`null`: deleted). */
interface Version {
  revision: number;
  value: string | null;
}

/** Versions kept per key besides its first (enough for any depth a run asks for). */
const KEPT = 256;

/**
 * A MemoryStore that remembers every key's recent versions, so a read can be
 * answered as of an older revision. Writes apply synchronously (inside the
 * call), so a moved revision right after the call means the write landed.
 */
export class HistoryStore extends MemoryStore {
  readonly #history = new Map<string, Version[]>();
  /** Keys some of whose versions were dropped (between the first and the oldest kept one). */
  readonly #dropped = new Set<string>();

  override create(key: string, value: string): Promise<WriteResult> {
    return this.#noting(key, value, () => super.create(key, value));
  }
  override update(key: string, value: string, revision: number): Promise<WriteResult> {
    return this.#noting(key, value, () => super.update(key, value, revision));
  }
  override delete(key: string, revision?: number): Promise<DeleteResult> {
    return this.#noting(key, null, () => super.delete(key, revision));
  }

  #noting<T>(key: string, value: string | null, write: () => Promise<T>): Promise<T> {
    const before = this.revision;
    const p = write();
    if (this.revision !== before) {
      const h = this.#history.get(key) ?? [];
      h.push({ revision: this.revision, value });
      // Keep the first version (so "absent before it" stays answerable) and the recent ones.
      if (h.length > KEPT + 1) {
        h.splice(1, 1);
        this.#dropped.add(key);
      }
      this.#history.set(key, h);
    }
    return p;
  }

  /**
   * The key as of revision `at`: its last version at or before `at`, absent
   * when it had none then (or was deleted). An `at` that falls among the
   * versions dropped (beyond the first) is answered by the oldest kept one:
   * still true of a revision older than the newest.
   */
  entryAt(key: string, at: number): StoreEntry | undefined {
    const h = this.#history.get(key);
    if (!h || h[0].revision > at) return undefined;
    let i = h.length - 1;
    while (i > 0 && h[i].revision > at) i--;
    if (i === 0 && h.length > 1 && this.#dropped.has(key)) i = 1;
    const v = h[i];
    return v.value === null ? undefined : { key, value: v.value, revision: v.revision };
  }

  /** Every key under `filter` as of revision `at`, sorted by key (as `list` answers). */
  listAt(filter: string, at: number): StoreEntry[] {
    const out: StoreEntry[] = [];
    for (const key of this.#history.keys()) {
      if (!matchesFilter(filter, key)) continue;
      const e = this.entryAt(key, at);
      if (e) out.push(e);
    }
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }
}

/** Operations of one {@linkcode StaleReadStore} at one instant beyond which it is spinning (real runs stay in the tens). */
export const SPIN_LIMIT = 2000;

/**
 * The revision a read is answered as of (`undefined`: fresh): the op, the
 * key (or filter), and the store's newest revision.
 */
export type Staleness = (op: "get" | "list", key: string, newest: number) => number | undefined;

/**
 * One process's connection to a shared {@linkcode HistoryStore}, for tests
 * that script what goes stale: `stale` picks the revision each read is
 * answered as of, and a write `maybe` picks lands and then throws
 * StoreUnavailableError (its reply lost). Writes and watches are the
 * store's own (watches are never stale). Given a `clock`, more than
 * {@linkcode SPIN_LIMIT} operations at one instant (code retrying without
 * time passing, which would hang a test on the manual clock) are never
 * answered, and `spun` says so.
 */
export class StaleReadStore implements Store {
  /** Whether operations stopped being answered: a loop retried them without time passing. */
  spun = false;
  #at = -1;
  #ops = 0;
  constructor(
    readonly history: HistoryStore,
    public stale: Staleness = () => undefined,
    public maybe: (op: string, key: string) => boolean = () => false,
    readonly clock?: Clock,
  ) {}
  /** Whether this operation is past the spin limit (then it never answers). */
  #spinning(): boolean {
    if (!this.clock) return false;
    const now = this.clock.now();
    if (now !== this.#at) (this.#at = now), (this.#ops = 0);
    if (++this.#ops > SPIN_LIMIT) this.spun = true;
    return this.spun;
  }
  async #write<T>(op: string, key: string, write: () => Promise<T>): Promise<T> {
    if (this.#spinning()) return new Promise<T>(() => {});
    const r = await write();
    if (this.maybe(op, key)) throw new StoreUnavailableError(op, 200, { detail: "landed, reply lost" });
    return r;
  }
  create(key: string, value: string): Promise<WriteResult> {
    return this.#write("create", key, () => this.history.create(key, value));
  }
  update(key: string, value: string, revision: number): Promise<WriteResult> {
    return this.#write("update", key, () => this.history.update(key, value, revision));
  }
  delete(key: string, revision?: number): Promise<DeleteResult> {
    return this.#write("delete", key, () => this.history.delete(key, revision));
  }
  get(key: string): Promise<StoreEntry | undefined> {
    if (this.#spinning()) return new Promise(() => {});
    const at = this.stale("get", key, this.history.revision);
    return at === undefined ? this.history.get(key) : Promise.resolve(this.history.entryAt(key, at));
  }
  list(filter: string): Promise<StoreEntry[]> {
    if (this.#spinning()) return new Promise(() => {});
    const at = this.stale("list", filter, this.history.revision);
    return at === undefined ? this.history.list(filter) : Promise.resolve(this.history.listAt(filter, at));
  }
  watch(filter: string): Watch {
    return this.history.watch(filter);
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
