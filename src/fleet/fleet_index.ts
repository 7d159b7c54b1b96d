/**
 * A live index of a job's splits, for an observer that refreshes a view of
 * a large job (the fleet page and `GET /fleet` of a worker or `splitlease
 * ui`): the plan's published pages are read once and the `split.` records
 * watched, each change applied to compact columns (`split_columns.ts`) in
 * O(1) — the columns keep the counts, weights and sums a view folds up to
 * date as they change — so a refresh reads no split record: its counts,
 * rate, ETA and the members' load come from those sums and the completions
 * of the last minutes; it walks the columns' id order (a byte a split) for
 * its page and reads only the rows it lists (at most `limit`, and the 10
 * recent completions: their split and progress records, or their page).
 * The first snapshot costs what one full read costs; after it a refresh
 * costs O(rows + members) reads.
 *
 * It says the same as a full read of the same records (`buildFleetView`,
 * by the same fold: `fleet_rate.ts`, `view_parts.ts`), except where a full
 * read would have to read every progress record: a running split's
 * fraction done is the estimate its owner last published on its heartbeat
 * (`MemberRecord.est`, the leader's source for it too) or, without one,
 * its split record's; and records its owner committed count once the split
 * is released or completed. A search (`match`) reads the plan's pages once
 * per search text (their descriptors), then answers from that.
 *
 * @module
 */
import {
  liveSplitRecord,
  type LeaderRecord,
  LeaderRecordSchema,
  type MemberRecord,
  MemberRecordSchema,
  pagedRecord,
  type PageRecord,
  PageRecordSchema,
  type PlanRecord,
  PlanRecordSchema,
  ProgRecordSchema,
  safeDecodeRecord,
  type SplitRecord,
  SplitRecordSchema,
} from "../records.ts";
import { keys } from "../store/keys.ts";
import type { Store, StoreEntry, Watch, WatchEvent } from "../store/store.ts";
import { RateFold, RECENT_LISTED, type SplitFacts, splitFacts } from "./fleet_rate.ts";
import type { SummarySnapshot } from "./fleet_summary.ts";
import { jsonPreview, normalizeFleetQuery, type NormalizedFleetQuery, pageOf, splitView } from "./fleet_view.ts";
import { Slot } from "./slot.ts";
import { LATELY_MS, SplitColumns } from "./split_columns.ts";
import type { FleetLiveness } from "./fleet_member.ts";
import type { FleetQuery, FleetState } from "./fleet_query.ts";
import type { FleetSplit } from "./fleet_split.ts";
import type { FleetView } from "./types.ts";
import { emptyCounts, fingerprintOf, livenessView, memberViews, planView } from "./view_parts.ts";

/** Full records kept of the splits that changed last (the rows a page lists are mostly these: running splits). */
const RECENT_RECORDS = 4096;
/** Decoded pages kept (the rows of unclaimed splits not dealt yet come from them). */
const PAGES_KEPT = 8;
/** Search texts whose page matches are kept. */
const SEARCHES_KEPT = 8;
/** Pages read at once. */
const PAGE_READS = 8;
/** Unreadable records named in a view at most (all split records are counted). */
const MAX_INVALID_LISTED = 20;

/**
 * Where an index stands: reading its first snapshot, answering views, or
 * stopped (its watch ended; make a new one).
 *
 * @example
 * ```ts
 * import type { FleetIndexState } from "@splitlease/splitlease/admin";
 * const usable = (s: FleetIndexState) => s === "ready";
 * ```
 */
export type FleetIndexState = "building" | "ready" | "stopped";

/**
 * Options of {@linkcode FleetIndex.start}.
 *
 * @example
 * ```ts
 * import type { FleetIndexOptions } from "@splitlease/splitlease/admin";
 * const o: FleetIndexOptions = { onStop: (e) => console.warn("fleet index stopped", e) };
 * ```
 */
export interface FleetIndexOptions {
  /** Called once when it stops for good (its watch ended: the store closed, or an error, given). */
  onStop?: (error?: unknown) => void;
}

/** The job-wide part of a view: counts, the owners' load, the rate. */
interface Fold {
  counts: FleetView["counts"];
  owned: Map<string, number>;
  rate: RateFold;
}

/**
 * A live index of one job's splits (see the module doc).
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { FleetIndex, readSummarySnapshot } from "@splitlease/splitlease/admin";
 * const store = new MemoryStore();
 * const index = FleetIndex.start(store);
 * await index.ready();
 * const view = await index.view(await readSummarySnapshot(store), { state: "quarantined" });
 * await index.close();
 * ```
 */
export class FleetIndex {
  readonly #store: Store;
  readonly #cols = new SplitColumns();
  readonly #options: FleetIndexOptions;
  #state: FleetIndexState = "building";
  #applied = 0;
  #watch: Watch | undefined;
  readonly #ready: Promise<void>;
  #closed = false;
  /** Pages read (`page.0 .. page.<pagesRead-1>`), and the run they are of. */
  #pagesRead = 0;
  #run = 1;
  #stale = false;
  #reading: Promise<void> | undefined;
  /** Unreadable split and page records: key → message. */
  readonly #invalid = new Map<string, string>();
  readonly #recent = new Map<string, { revision: number; record: SplitRecord }>();
  readonly #pages = new Map<number, Promise<{ record: PageRecord; ids: Map<string, number> } | undefined>>();
  /** Lower-case descriptor previews of the splits whose descriptor is their own (cut, residual, on no page); `null`: none to search. */
  readonly #ownPreview = new Map<number, string | null>();
  readonly #searches = new Map<string, { pages: number; slots: Set<number> }>();
  /** Slots seen since a watch reset (the ones not seen are gone when it is ready again). */
  #resync: Set<number> | undefined;
  readonly #scratch = {} as SplitFacts;

  private constructor(store: Store, options: FleetIndexOptions) {
    this.#store = store;
    this.#options = options;
    this.#ready = this.#run0();
    this.#ready.catch(() => {});
  }

  /** Starts indexing the job of `store`: its published pages, then a watch of its split records. */
  static start(store: Store, options: FleetIndexOptions = {}): FleetIndex {
    return new FleetIndex(store, options);
  }

  /** Where it stands. */
  get state(): FleetIndexState {
    return this.#state;
  }

  /** Split records applied so far (the first snapshot's progress while building). */
  get applied(): number {
    return this.#applied;
  }

  /**
   * The plan moved under it (a rerun started a new run, or fewer pages are
   * published than it read): its figures mix runs. Make a new index.
   */
  get stale(): boolean {
    return this.#stale;
  }

  /** Resolves once the first snapshot is applied; rejects if the index stopped before. */
  ready(): Promise<void> {
    return this.#ready;
  }

  /** Stops its watch; the index answers no more views. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#watch?.stop();
  }

  async #run0(): Promise<void> {
    let readyResolve!: () => void;
    const firstReady = new Promise<void>((r) => (readyResolve = r));
    const loop = (async () => {
      const plan = decodePlan(await this.#store.get(keys.plan));
      this.#run = plan?.run ?? 1;
      await this.#readPages(plan?.pages ?? 0);
      if (this.#closed) return;
      this.#watch = this.#store.watch(keys.splitPrefix);
      for await (const ev of this.#watch) {
        this.#apply(ev);
        if (ev.type === "ready" && this.#state === "building") {
          this.#state = "ready";
          readyResolve();
        }
      }
    })();
    const ended = loop.then(
      () => this.#stop(),
      (e) => this.#stop(e),
    );
    await Promise.race([firstReady, loop.then(() => {
      throw new Error("the fleet index stopped before its first snapshot (its split watch ended)");
    })]);
    void ended;
  }

  #stop(error?: unknown): void {
    if (this.#state === "stopped") return;
    this.#state = "stopped";
    this.#options.onStop?.(error);
  }

  /** Applies one event of the split watch. */
  #apply(ev: WatchEvent): void {
    switch (ev.type) {
      case "reset":
        this.#resync = new Set();
        return;
      case "ready": {
        const seen = this.#resync;
        if (!seen) return;
        this.#resync = undefined;
        for (const s of [...this.#cols.dealt()]) if (!seen.has(s)) this.#remove(s);
        return;
      }
      case "put":
        this.#put(ev.key, ev.value, ev.revision);
        return;
      case "delete": {
        const s = this.#cols.slotOf(ev.key.slice(keys.splitPrefix.length));
        if (s !== undefined && (this.#cols.revision(s) ?? 0) <= ev.revision) this.#remove(s);
        return;
      }
    }
  }

  #put(key: string, value: string, revision: number): void {
    const id = key.slice(keys.splitPrefix.length);
    const cols = this.#cols;
    const s = cols.slot(id);
    this.#resync?.add(s);
    if ((cols.revision(s) ?? -1) >= revision) return;
    this.#applied++;
    const r = safeDecodeRecord(key, value, SplitRecordSchema);
    if (!r.ok) {
      cols.setInvalid(s, revision);
      this.#invalid.set(key, r.error.message);
      this.#ownPreview.delete(s);
      this.#recent.delete(id);
      return;
    }
    const rec = r.value;
    this.#invalid.delete(key);
    // A descriptor differs from its page's only by a cut (or on a split no page names): those are searched by their own.
    const own = rec.parent !== undefined || (rec.cuts ?? 0) > 0 || cols.page(s) < 0;
    cols.setRecord(s, splitFacts(rec, this.#scratch), revision, own);
    if (own) this.#ownPreview.set(s, previewOf(rec));
    else this.#ownPreview.delete(s);
    this.#remember(id, revision, rec);
  }

  #remove(s: number): void {
    const id = this.#cols.id(s);
    this.#cols.clearRecord(s);
    this.#invalid.delete(keys.split(id));
    this.#ownPreview.delete(s);
    this.#recent.delete(id);
  }

  #remember(id: string, revision: number, record: SplitRecord): void {
    this.#recent.delete(id);
    this.#recent.set(id, { revision, record });
    if (this.#recent.size > RECENT_RECORDS) this.#recent.delete(this.#recent.keys().next().value!);
  }

  /** Reads the published pages from the last one read up to `pages` (one reader at a time). */
  async #readPages(pages: number): Promise<void> {
    while (this.#reading) await this.#reading;
    if (pages <= this.#pagesRead) return;
    this.#reading = (async () => {
      const from = this.#pagesRead;
      for (let n = from; n < pages; n += PAGE_READS) {
        const batch = Array.from({ length: Math.min(PAGE_READS, pages - n) }, (_, i) => n + i);
        const read = await Promise.all(batch.map((p) => this.#store.get(keys.page(p))));
        read.forEach((e, i) => this.#notePage(batch[i], e));
      }
      this.#pagesRead = pages;
      })();
    try {
      await this.#reading;
    } finally {
      this.#reading = undefined;
    }
  }

  #notePage(n: number, e: StoreEntry | undefined): void {
    const page = this.#decodePage(keys.page(n), e);
    if (!page) return;
    const cols = this.#cols;
    for (const x of page.splits) {
      const s = cols.slot(x.id);
      if (cols.page(s) >= 0) continue; // on an earlier page already (a full read takes the first)
      cols.setPage(s, n, x.weight ?? 1);
      // A split dealt before its page was read searches its own descriptor, unless it is its page's.
      if (this.#ownPreview.has(s) && !cols.ownDescriptor(s)) this.#ownPreview.delete(s);
    }
  }

  #decodePage(key: string, e: StoreEntry | undefined): PageRecord | undefined {
    if (!e) return undefined;
    const r = safeDecodeRecord(key, e.value, PageRecordSchema);
    if (r.ok) {
      this.#invalid.delete(key);
      return r.value;
    }
    this.#invalid.set(key, r.error.message);
    return undefined;
  }

  /** A page, decoded (kept for the next rows; one read of it at a time, whatever the number of rows on it). */
  #page(n: number): Promise<{ record: PageRecord; ids: Map<string, number> } | undefined> {
    const kept = this.#pages.get(n);
    if (kept) {
      this.#pages.delete(n);
      this.#pages.set(n, kept);
      return kept;
    }
    const read = (async () => {
      const record = this.#decodePage(keys.page(n), await this.#store.get(keys.page(n)));
      return record && { record, ids: new Map(record.splits.map((x, i) => [x.id, i])) };
    })();
    this.#pages.set(n, read);
    // A failed read is not kept.
    read.then((p) => p ?? this.#pages.delete(n), () => this.#pages.delete(n));
    if (this.#pages.size > PAGES_KEPT) this.#pages.delete(this.#pages.keys().next().value!);
    return read;
  }

  /**
   * A view of the job: `snap` holds its small records (read by the caller,
   * `readSummarySnapshot`), the splits come from the index. Pages published
   * since it last looked are read first.
   */
  async view(snap: SummarySnapshot, query: FleetQuery = {}, liveness?: FleetLiveness): Promise<FleetView> {
    const q = normalizeFleetQuery(query);
    if (this.#state !== "ready") throw new Error(`the fleet index is ${this.#state}`);
    const invalid: { key: string; message: string }[] = [];
    const decode = <T>(e: StoreEntry | undefined, schema: Parameters<typeof safeDecodeRecord<T>>[2]): T | undefined => {
      if (!e) return undefined;
      const r = safeDecodeRecord(e.key, e.value, schema);
      if (r.ok) return r.value;
      invalid.push({ key: e.key, message: r.error.message });
      return undefined;
    };
    const plan = decode<PlanRecord>(snap.plan, PlanRecordSchema);
    const leader = decode<LeaderRecord>(snap.leader, LeaderRecordSchema);
    const members = new Map<string, MemberRecord>();
    for (const e of snap.members) {
      const m = decode<MemberRecord>(e, MemberRecordSchema);
      if (m) members.set(e.key.slice(keys.memberPrefix.length), m);
    }
    const pages = plan?.pages ?? 0;
    if ((plan?.run ?? 1) !== this.#run || pages < this.#pagesRead) this.#stale = true;
    else if (pages > this.#pagesRead) await this.#readPages(pages);
    const search = q.match === null ? undefined : await this.#search(q.match);

    const fold = this.#folded(snap.at, members);
    const { matched, slots, next } = this.#select(q, search);
    const [rows, recent] = await Promise.all([this.#rows(slots), this.#rows(fold.rate.recent.map((x) => this.#cols.slotOf(x.id)!))]);
    let invalidSplits = 0;
    for (const [key, message] of this.#invalid) {
      invalid.push({ key, message });
      if (key.startsWith(keys.splitPrefix)) invalidSplits++;
    }
    invalid.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const counts = { ...fold.counts, invalid: invalidSplits };
    const windowMs = fold.rate.windowMs();
    return {
      at: snap.at,
      basis: "records",
      fingerprint: fingerprintOf(snap.job?.value),
      leader: leader ? { instance: leader.instance, term: leader.term, beat: leader.beat } : null,
      plan: planView(plan),
      liveness: livenessView(liveness, leader),
      members: memberViews(members, fold.owned, (i) => fold.rate.memberPerMinute(i, windowMs), leader, snap.at, liveness),
      counts,
      rate: fold.rate.finish(counts.runnable, counts.quarantined),
      summary: fold.rate.summary(),
      recent,
      splits: rows,
      page: pageOf(q, matched, next),
      invalid: invalid.slice(0, MAX_INVALID_LISTED),
    };
  }

  /**
   * The counts, owners' load and rate of every split, from the sums the
   * columns keep up to date (no pass over the splits): the running splits'
   * fractions corrected by their owners' published estimates, the window
   * and sparkline counted from the completions of the last minutes.
   */
  #folded(at: number, members: ReadonlyMap<string, MemberRecord>): Fold {
    const cols = this.#cols, x = cols.sums;
    // Running splits' fraction done: their owners' last published estimates (the last one of a split counts).
    const est = new Map<string, { owner: string; fraction: number }>();
    for (const [instance, m] of members) {
      for (const [id, left, total] of m.est ?? []) {
        est.set(id, { owner: instance + "/" + m.session, fraction: Math.min(1, Math.max(0, 1 - left / total)) });
      }
    }
    let remaining = x.remaining, partial = x.partial;
    for (const [id, e] of est) {
      const s = cols.slotOf(id);
      if (s === undefined || cols.state(s) !== Slot.Owned || cols.owner(s) !== e.owner) continue;
      const w = cols.weight(s), f = cols.fraction(s) ?? 0;
      remaining += w * (f - e.fraction);
      partial += w * (e.fraction - f);
    }
    const counts = emptyCounts();
    counts.unclaimed = counts.unowned = x.count[Slot.Unclaimed];
    counts.owned = x.count[Slot.Owned];
    counts.runnable = counts.unclaimed + counts.owned;
    counts.completed = x.count[Slot.Completed];
    counts.quarantined = x.count[Slot.Quarantined];
    counts.cancelled = x.count[Slot.Cancelled];
    counts.total = counts.runnable + counts.completed + counts.quarantined + counts.cancelled;
    counts.permanent = x.permanent;
    for (let st = 1; st <= 5; st++) counts.weight += x.weight[st];
    counts.completedWeight = x.weight[Slot.Completed];
    const owned = new Map<string, number>();
    for (const [o, n] of cols.ownedBy) owned.set(cols.names.name(o)!, n);
    // The completions of the last minutes (those gone stale since they were counted in are dropped here).
    const lately: { at: number; weight: number; by: string }[] = [];
    for (const [s, t] of cols.lately) {
      if (cols.state(s) !== Slot.Completed || cols.completedAt(s) !== t || t < at - LATELY_MS) cols.lately.delete(s);
      else lately.push({ at: t, weight: cols.weight(s), by: cols.completedBy(s)! });
    }
    const latest = cols.lately.size >= RECENT_LISTED ? cols.latestOf(cols.lately.keys(), RECENT_LISTED) : cols.latest(RECENT_LISTED);
    const rate = RateFold.of(at, {
      started: cols.started(),
      last: cols.lastCompleted(),
      timed: x.timed,
      untimed: x.untimed,
      remaining,
      partial,
      totals: { records: x.records, splitsWithRecords: x.splitsWithRecords, retries: x.retries, failures: x.failures, lost: x.lost, cuts: x.cuts },
      lately,
      recent: latest.map((s) => ({ id: cols.id(s), at: cols.completedAt(s)! })),
    });
    return { counts, owned, rate };
  }

  /** The page of slots a query lists (the first `limit` matches after its cursor, by id), how many match, and the next cursor. */
  #select(q: NormalizedFleetQuery, search: Set<number> | undefined): { matched: number; slots: number[]; next: string | null } {
    const cols = this.#cols, order = cols.order();
    const want = wanted(q.state);
    const start = q.after === null ? 0 : cols.after(order, q.after);
    const slots: number[] = [];
    let matched = 0, more = false;
    const text = q.match;
    for (let i = 0; i < order.length; i++) {
      const s = order[i];
      if (!want[cols.state(s)]) continue;
      if (q.owner !== null && instanceOf(cols.owner(s)) !== q.owner) continue;
      if (text !== null) {
        const ownerHit = instanceOf(cols.owner(s))?.toLowerCase().includes(text) ?? false;
        const own = cols.ownDescriptor(s);
        const descHit = own ? this.#ownPreview.get(s)?.includes(text) ?? false : search!.has(s);
        if (!ownerHit && !descHit && !cols.id(s).toLowerCase().includes(text)) continue;
      }
      matched++;
      if (i < start) continue;
      if (slots.length < q.limit) slots.push(s);
      else more = true;
    }
    return { matched, slots, next: more ? cols.id(slots[slots.length - 1]) : null };
  }

  /** The slots whose page entry's descriptor preview contains `text` (lower case), from every page read. */
  async #search(text: string): Promise<Set<number>> {
    let kept = this.#searches.get(text);
    if (kept) this.#searches.delete(text);
    kept ??= { pages: 0, slots: new Set() };
    this.#searches.set(text, kept);
    if (this.#searches.size > SEARCHES_KEPT) this.#searches.delete(this.#searches.keys().next().value!);
    const upTo = this.#pagesRead;
    for (let n = kept.pages; n < upTo; n++) {
      const e = await this.#store.get(keys.page(n));
      const page = this.#decodePage(keys.page(n), e);
      for (const x of page?.splits ?? []) {
        const s = this.#cols.slotOf(x.id);
        if (s === undefined || this.#cols.page(s) !== n) continue;
        const preview = previewOf(pagedRecord(x, page!));
        if (preview?.includes(text)) kept.slots.add(s);
      }
    }
    kept.pages = Math.max(kept.pages, upTo);
    return kept.slots;
  }

  /** The rows of `slots`, in order: their live records (split and progress record) or, not dealt yet, their page's entry. */
  async #rows(slots: number[]): Promise<FleetSplit[]> {
    const cols = this.#cols;
    const rows = await Promise.all(slots.map(async (s): Promise<FleetSplit | undefined> => {
      const id = cols.id(s);
      const revision = cols.revision(s);
      if (revision !== undefined && !cols.invalid(s)) {
        const kept = this.#recent.get(id);
        const runnable = cols.state(s) === Slot.Owned || cols.state(s) === Slot.Unclaimed;
        const [entry, prog] = await Promise.all([
          kept && kept.revision >= revision ? undefined : this.#store.get(keys.split(id)),
          runnable ? this.#store.get(keys.prog(id)) : undefined,
        ]);
        let record = kept && kept.revision >= revision ? kept.record : undefined;
        if (entry) {
          const r = safeDecodeRecord(entry.key, entry.value, SplitRecordSchema);
          if (r.ok) (record = r.value, this.#remember(id, entry.revision, r.value));
        }
        if (record) {
          const p = prog ? safeDecodeRecord(prog.key, prog.value, ProgRecordSchema) : undefined;
          return splitView(id, liveSplitRecord(record, p?.ok ? p.value : undefined));
        }
      }
      // Not dealt (or its record gone since): the plan's page names it.
      const n = cols.page(s);
      const page = n < 0 ? undefined : await this.#page(n);
      const i = page?.ids.get(id);
      return page && i !== undefined ? splitView(id, pagedRecord(page.record.splits[i], page.record)) : undefined;
    }));
    return rows.filter((r): r is FleetSplit => r !== undefined);
  }
}

/** Which slot states a query's states select (indexed by {@linkcode Slot}). */
function wanted(states: FleetState[] | null): boolean[] {
  const has = (s: FleetState) => states === null || states.includes(s);
  return [false, has("runnable") || has("unclaimed"), has("runnable") || has("owned"), has("completed"), has("quarantined"), has("cancelled")];
}

/** The instance of an `instance/session` owner. */
function instanceOf(owner: string | null): string | null {
  return owner === null ? null : owner.slice(0, owner.indexOf("/"));
}

/** A record's descriptor preview in lower case, as a search matches it (`null`: in a spec record, or none). */
function previewOf(r: SplitRecord): string | null {
  return r.spec || r.descriptor === undefined ? null : jsonPreview(r.descriptor).toLowerCase();
}

function decodePlan(e: StoreEntry | undefined): PlanRecord | undefined {
  if (!e) return undefined;
  const r = safeDecodeRecord(e.key, e.value, PlanRecordSchema);
  return r.ok ? r.value : undefined;
}
