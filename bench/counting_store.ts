/**
 * A Store wrapper that counts what a coordinator writes and reads, for the
 * scale and peers benchmarks. It sits between a coordinator and its
 * NatsStore (or MemoryStore) and needs nothing from `src/` but the Store
 * interface, so it measures today's protocol and any redesign alike.
 *
 * Runtime-neutral (Deno, Node, Bun): the Node workers bundle it.
 *
 * @module
 */
import type { DeleteResult, KeyFilter, StoreEntry, Watch, WatchEvent, WriteResult } from "../store.ts";
import type { Store } from "../mod.ts";

/** Counters of one wrapper (plain numbers, JSON-ready). */
export interface StoreCounts {
  /** create/update/delete calls, whatever their outcome. */
  writeCalls: number;
  /** Writes that landed (`ok`). */
  writesLanded: number;
  /** Writes that lost a race (`conflict`). */
  writeConflicts: number;
  /** Writes that threw (outage, timeout). */
  writeErrors: number;
  /** Landed writes by op. */
  creates: number;
  updates: number;
  deletes: number;
  /** Landed `update`s of `member.*` keys (heartbeats). */
  memberBeats: number;
  /**
   * Ownership-change attempts on split records (fallback for claim attempts):
   * `update`s of a `split.*` key whose new value names this wrapper's
   * instance as owner at an epoch other than the one of its last landed write
   * to that key (a claim, takeover or reclaim; commits and releases at the
   * held epoch are not counted, a retried claim is).
   */
  ownershipWrites: number;
  /** …of which landed. */
  ownershipLanded: number;
  /** Point reads, and the value bytes they returned. */
  gets: number;
  getBytes: number;
  /** Listings, entries returned and their value bytes. */
  lists: number;
  listEntries: number;
  listBytes: number;
  /** Watch `put` events delivered, and their value bytes; `delete`/`reset` events. */
  watchPuts: number;
  watchBytes: number;
  watchDeletes: number;
  watchResets: number;
  /** Watches opened. */
  watches: number;
  /** Write outcomes by op, key family and outcome, e.g. `update.split.conflict`. */
  ops: Record<string, number>;
}

function zero(): StoreCounts {
  return {
    writeCalls: 0,
    writesLanded: 0,
    writeConflicts: 0,
    writeErrors: 0,
    creates: 0,
    updates: 0,
    deletes: 0,
    memberBeats: 0,
    ownershipWrites: 0,
    ownershipLanded: 0,
    gets: 0,
    getBytes: 0,
    lists: 0,
    listEntries: 0,
    listBytes: 0,
    watchPuts: 0,
    watchBytes: 0,
    watchDeletes: 0,
    watchResets: 0,
    watches: 0,
    ops: {},
  };
}

function addOps(into: Record<string, number>, from: Record<string, number> | undefined, sign = 1): void {
  for (const [k, v] of Object.entries(from ?? {})) into[k] = (into[k] ?? 0) + sign * v;
}

type NumericKey = Exclude<keyof StoreCounts, "ops">;
const numericKeys = (c: StoreCounts) => Object.keys(c).filter((k) => k !== "ops") as NumericKey[];

/** `b − a`, field by field. */
export function diffCounts(b: StoreCounts, a: StoreCounts): StoreCounts {
  const out = zero();
  for (const k of numericKeys(out)) out[k] = b[k] - a[k];
  addOps(out.ops, b.ops);
  addOps(out.ops, a.ops, -1);
  return out;
}

/** Field-by-field sum. */
export function sumCounts(xs: readonly StoreCounts[]): StoreCounts {
  const out = zero();
  for (const x of xs) {
    for (const k of numericKeys(out)) out[k] += x[k] ?? 0;
    addOps(out.ops, x.ops);
  }
  return out;
}

/** A key's family: its first token (`split.s1` → `split`). */
const family = (key: string): string => {
  const dot = key.indexOf(".");
  return dot < 0 ? key : key.slice(0, dot);
};

const enc = new TextEncoder();
/** UTF-8 length without allocating for ASCII-only values (every JSON record here). */
function bytes(s: string): number {
  // deno-lint-ignore no-control-regex
  return /^[\x00-\x7f]*$/.test(s) ? s.length : enc.encode(s).length;
}

/**
 * `w` with `onEvent` called for each event it delivers; stop, dispose and
 * `position` pass through (without `position` a leader confirms a completion
 * with a listing instead of one request).
 */
export function tapWatch(w: Watch, onEvent: (ev: WatchEvent) => void): Watch {
  return {
    stop: () => w.stop(),
    [Symbol.asyncDispose]: () => w.stop(),
    ...(w.position ? { position: () => w.position!() } : {}),
    async *[Symbol.asyncIterator](): AsyncIterator<WatchEvent> {
      for await (const ev of w) {
        onEvent(ev);
        yield ev;
      }
    },
  };
}

/**
 * When things first and last happened through one wrapper (wall-clock ms,
 * `Date.now()`: comparable across the bench's processes): `[first, last]`
 * per event, e.g. `write.page` (a landed write of a `page.*` key), `get.page`,
 * `watch.split.open`, `watch.split.ready` (the end of a watch's first
 * snapshot), `watch.split.put`. `dealt`: the first landed write of an
 * assignment record that lists an offer or a grant (a leader's first deal).
 */
export interface StoreTimeline {
  at: Record<string, [number, number]>;
  /** Puts the first watch of each name (e.g. `watch.split`) to finish its snapshot delivered before its `ready`: the snapshot's records. */
  snapshot: Record<string, number>;
  dealt?: number;
}

/** Counts every store operation a coordinator makes; see {@linkcode StoreCounts}. */
export class CountingStore implements Store {
  readonly inner: Store;
  readonly counts: StoreCounts = zero();
  readonly #timeline: StoreTimeline = { at: {}, snapshot: {} };
  /** The instance whose claims are counted (any owner when absent). */
  readonly instance?: string;
  /** Per split key, the epoch of this wrapper's last landed ownership write. */
  #heldEpoch = new Map<string, number>();
  /** Whether ownership writes are counted (each split update's value is parsed for it). */
  readonly #claims: boolean;

  /**
   * `claims: false` leaves `ownershipWrites` at 0 and parses nothing: a
   * bench that charges the process's CPU to the protocol (peers) should
   * not pay a JSON.parse per split update for a counter it does not read.
   */
  constructor(inner: Store, instance?: string, options: { claims?: boolean } = {}) {
    this.inner = inner;
    this.instance = instance;
    this.#claims = options.claims ?? true;
  }

  /** A copy of the counters. */
  snapshot(): StoreCounts {
    return { ...this.counts };
  }

  /** A copy of the timeline (see {@linkcode StoreTimeline}). */
  timeline(): StoreTimeline {
    return { at: structuredClone(this.#timeline.at), snapshot: { ...this.#timeline.snapshot }, ...(this.#timeline.dealt ? { dealt: this.#timeline.dealt } : {}) };
  }

  #mark(event: string): void {
    const now = Date.now();
    const t = this.#timeline.at[event];
    if (t) t[1] = now;
    else this.#timeline.at[event] = [now, now];
  }

  /** Marks a landed write; the first assignment write with an offer or a grant is the first deal (parsed only until then). */
  #landedWrite(family: string, key: string, value?: string): void {
    this.#mark(`write.${family}`);
    if (this.#timeline.dealt !== undefined || value === undefined || !key.startsWith("assign.")) return;
    try {
      const a = JSON.parse(value) as { offers?: unknown[]; grants?: unknown[] };
      if ((a.offers?.length ?? 0) + (a.grants?.length ?? 0) > 0) this.#timeline.dealt = Date.now();
    } catch { /* not an assignment record: no deal */ }
  }

  async #write<R extends WriteResult | DeleteResult>(op: string, key: string, p: () => Promise<R>, landed: () => void, value?: string): Promise<R> {
    this.counts.writeCalls++;
    const fam = family(key);
    let outcome = "error";
    try {
      const r = await p();
      if (r.ok) {
        outcome = "ok";
        this.counts.writesLanded++;
        landed();
        this.#landedWrite(fam, key, value);
      } else {
        outcome = "conflict";
        this.counts.writeConflicts++;
      }
      return r;
    } catch (e) {
      this.counts.writeErrors++;
      throw e;
    } finally {
      const k = `${op}.${fam}.${outcome}`;
      this.counts.ops[k] = (this.counts.ops[k] ?? 0) + 1;
    }
  }

  create(key: string, value: string): Promise<WriteResult> {
    return this.#write("create", key, () => this.inner.create(key, value), () => this.counts.creates++, value);
  }

  update(key: string, value: string, revision: number): Promise<WriteResult> {
    const epoch = this.#claims && key.startsWith("split.") ? this.#claimEpoch(key, value) : undefined;
    if (epoch !== undefined) this.counts.ownershipWrites++;
    return this.#write("update", key, () => this.inner.update(key, value, revision), () => {
      this.counts.updates++;
      if (key.startsWith("member.")) this.counts.memberBeats++;
      if (epoch !== undefined) {
        this.counts.ownershipLanded++;
        this.#heldEpoch.set(key, epoch);
      }
    }, value);
  }

  /** The epoch a split update claims at, or `undefined` when it is no ownership change of ours. */
  #claimEpoch(key: string, value: string): number | undefined {
    let rec: { epoch?: unknown; owner?: { instance?: unknown } | null };
    try {
      rec = JSON.parse(value);
    } catch {
      return undefined;
    }
    if (rec.owner == null || typeof rec.epoch !== "number") return undefined;
    if (this.instance !== undefined && rec.owner.instance !== this.instance) return undefined;
    return this.#heldEpoch.get(key) === rec.epoch ? undefined : rec.epoch;
  }

  delete(key: string, revision?: number): Promise<DeleteResult> {
    return this.#write("delete", key, () => this.inner.delete(key, revision), () => this.counts.deletes++);
  }

  async get(key: string): Promise<StoreEntry | undefined> {
    const e = await this.inner.get(key);
    this.counts.gets++;
    this.#mark(`get.${family(key)}`);
    if (e) this.counts.getBytes += bytes(e.value);
    return e;
  }

  async list(filter: KeyFilter): Promise<StoreEntry[]> {
    const es = await this.inner.list(filter);
    this.counts.lists++;
    this.counts.listEntries += es.length;
    for (const e of es) this.counts.listBytes += bytes(e.value);
    return es;
  }

  watch(filter: KeyFilter): Watch {
    const counts = this.counts;
    counts.watches++;
    const name = `watch.${filter.replace(/\.$/, "") || "all"}`;
    this.#mark(`${name}.open`);
    const snapshot = this.#timeline.snapshot;
    let ready = false, puts = 0;
    return tapWatch(this.inner.watch(filter), (ev) => {
      if (ev.type === "put") {
        counts.watchPuts++;
        counts.watchBytes += bytes(ev.value);
        this.#mark(`${name}.put`);
        if (!ready) puts++;
      } else if (ev.type === "delete") counts.watchDeletes++;
      else if (ev.type === "reset") counts.watchResets++;
      else if (ev.type === "ready") {
        // The first watch of this name to finish its snapshot gives the count (a member that leads
        // several terms opens a split watch per term).
        if (!ready) this.#mark(`${name}.ready`), (snapshot[name] ??= puts);
        ready = true;
      }
    });
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.inner.close();
  }
}

/**
 * Claim attempts of a coordinator: `stats().claimAttempts` when the
 * coordinator reports it, else the wrapper's ownership-change writes.
 */
export function claimAttempts(stats: unknown, counts: StoreCounts): { n: number; source: "stats" | "wrapper" } {
  const s = (stats as { claimAttempts?: unknown }).claimAttempts;
  if (typeof s === "number") return { n: s, source: "stats" };
  return { n: counts.ownershipWrites, source: "wrapper" };
}
