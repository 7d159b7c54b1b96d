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
 * Its parts: the plan's pages it reads, keeps and searches
 * (`fleet_index_pages.ts`), the page of slots a query lists
 * (`fleet_index_select.ts`), the job-wide fold of the columns' sums
 * (`fleet_index_fold.ts`).
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
  type PlanRecord,
  PlanRecordSchema,
  ProgRecordSchema,
  safeDecodeRecord,
  type SplitRecord,
  SplitRecordSchema,
} from "../records.ts";
import { keys } from "../store/keys.ts";
import type { Store, StoreEntry, Watch, WatchEvent } from "../store/store.ts";
import { foldColumns } from "./fleet_index_fold.ts";
import { FleetIndexPages } from "./fleet_index_pages.ts";
import { previewOf, selectSlots } from "./fleet_index_select.ts";
import type { FleetLiveness } from "./fleet_member.ts";
import type { FleetQuery } from "./fleet_query.ts";
import { type SplitFacts, splitFacts } from "./fleet_rate.ts";
import type { FleetSplit } from "./fleet_split.ts";
import type { SummarySnapshot } from "./fleet_summary.ts";
import { normalizeFleetQuery, pageOf, splitView } from "./fleet_view.ts";
import { Slot } from "./slot.ts";
import { SplitColumns } from "./split_columns.ts";
import type { FleetView } from "./types.ts";
import { fingerprintOf, livenessView, memberViews, planView } from "./view_parts.ts";

/** Full records kept of the splits that changed last (the rows a page lists are mostly these: running splits). */
const RECENT_RECORDS = 4096;
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
  /** The run the pages read are of. */
  #run = 1;
  #stale = false;
  /** Unreadable split and page records: key → message. */
  readonly #invalid = new Map<string, string>();
  readonly #recent = new Map<string, { revision: number; record: SplitRecord }>();
  /** Lower-case descriptor previews of the splits whose descriptor is their own (cut, residual, on no page); `null`: none to search. */
  readonly #ownPreview = new Map<number, string | null>();
  /** The plan's pages read, kept and searched. */
  readonly #pages: FleetIndexPages;
  /** Slots seen since a watch reset (the ones not seen are gone when it is ready again). */
  #resync: Set<number> | undefined;
  readonly #scratch = {} as SplitFacts;

  private constructor(store: Store, options: FleetIndexOptions) {
    this.#store = store;
    this.#options = options;
    this.#pages = new FleetIndexPages(store, this.#cols, this.#invalid, this.#ownPreview);
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
      await this.#pages.readUpTo(plan?.pages ?? 0);
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
    if ((plan?.run ?? 1) !== this.#run || pages < this.#pages.read) this.#stale = true;
    else if (pages > this.#pages.read) await this.#pages.readUpTo(pages);
    const search = q.match === null ? undefined : await this.#pages.search(q.match);

    const fold = foldColumns(this.#cols, snap.at, members);
    const { matched, slots, next } = selectSlots(this.#cols, this.#ownPreview, q, search);
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
      const page = n < 0 ? undefined : await this.#pages.page(n);
      const i = page?.ids.get(id);
      return page && i !== undefined ? splitView(id, pagedRecord(page.record.splits[i], page.record)) : undefined;
    }));
    return rows.filter((r): r is FleetSplit => r !== undefined);
  }
}

function decodePlan(e: StoreEntry | undefined): PlanRecord | undefined {
  if (!e) return undefined;
  const r = safeDecodeRecord(e.key, e.value, PlanRecordSchema);
  return r.ok ? r.value : undefined;
}
