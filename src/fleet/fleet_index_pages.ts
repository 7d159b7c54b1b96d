/**
 * The plan's published pages as a live fleet index (`fleet_index.ts`) reads
 * them: each page read once into the columns (the weight and page of every
 * split it names), the last pages read kept decoded for the rows of splits
 * not dealt yet, and a search's matches among the pages' descriptors kept
 * per search text. An unreadable page is noted among the index's
 * unreadable records.
 *
 * @module
 */
import { pagedRecord, type PageRecord, PageRecordSchema, safeDecodeRecord } from "../records.ts";
import { keys } from "../store/keys.ts";
import type { Store, StoreEntry } from "../store/store.ts";
import { previewOf } from "./fleet_index_select.ts";
import type { SplitColumns } from "./split_columns.ts";

/** Decoded pages kept (the rows of unclaimed splits not dealt yet come from them). */
const PAGES_KEPT = 8;
/** Search texts whose page matches are kept. */
const SEARCHES_KEPT = 8;
/** Pages read at once. */
const PAGE_READS = 8;

/** The pages of a fleet index (see the module doc). */
export class FleetIndexPages {
  readonly #store: Store;
  readonly #cols: SplitColumns;
  /** The index's unreadable records: key → message. */
  readonly #invalid: Map<string, string>;
  /** The index's own descriptor previews (a split dealt before its page was read loses its own unless it is its page's). */
  readonly #ownPreview: Map<number, string | null>;
  /** Pages read (`page.0 .. page.<read-1>`). */
  #read = 0;
  #reading: Promise<void> | undefined;
  readonly #kept = new Map<number, Promise<{ record: PageRecord; ids: Map<string, number> } | undefined>>();
  readonly #searches = new Map<string, { pages: number; slots: Set<number> }>();

  constructor(store: Store, cols: SplitColumns, invalid: Map<string, string>, ownPreview: Map<number, string | null>) {
    this.#store = store;
    this.#cols = cols;
    this.#invalid = invalid;
    this.#ownPreview = ownPreview;
  }

  /** Pages read so far. */
  get read(): number {
    return this.#read;
  }

  /** Reads the published pages from the last one read up to `pages` (one reader at a time). */
  async readUpTo(pages: number): Promise<void> {
    while (this.#reading) await this.#reading;
    if (pages <= this.#read) return;
    this.#reading = (async () => {
      const from = this.#read;
      for (let n = from; n < pages; n += PAGE_READS) {
        const batch = Array.from({ length: Math.min(PAGE_READS, pages - n) }, (_, i) => n + i);
        const read = await Promise.all(batch.map((p) => this.#store.get(keys.page(p))));
        read.forEach((e, i) => this.#notePage(batch[i], e));
      }
      this.#read = pages;
    })();
    try {
      await this.#reading;
    } finally {
      this.#reading = undefined;
    }
  }

  #notePage(n: number, e: StoreEntry | undefined): void {
    const page = this.decode(keys.page(n), e);
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

  /** A page record's entry decoded; absent, or unreadable (then noted among the index's unreadable records): `undefined`. */
  decode(key: string, e: StoreEntry | undefined): PageRecord | undefined {
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
  page(n: number): Promise<{ record: PageRecord; ids: Map<string, number> } | undefined> {
    const kept = this.#kept.get(n);
    if (kept) {
      this.#kept.delete(n);
      this.#kept.set(n, kept);
      return kept;
    }
    const read = (async () => {
      const record = this.decode(keys.page(n), await this.#store.get(keys.page(n)));
      return record && { record, ids: new Map(record.splits.map((x, i) => [x.id, i])) };
    })();
    this.#kept.set(n, read);
    // A failed read is not kept.
    read.then((p) => p ?? this.#kept.delete(n), () => this.#kept.delete(n));
    if (this.#kept.size > PAGES_KEPT) this.#kept.delete(this.#kept.keys().next().value!);
    return read;
  }

  /** The slots whose page entry's descriptor preview contains `text` (lower case), from every page read. */
  async search(text: string): Promise<Set<number>> {
    let kept = this.#searches.get(text);
    if (kept) this.#searches.delete(text);
    kept ??= { pages: 0, slots: new Set() };
    this.#searches.set(text, kept);
    if (this.#searches.size > SEARCHES_KEPT) this.#searches.delete(this.#searches.keys().next().value!);
    const upTo = this.#read;
    for (let n = kept.pages; n < upTo; n++) {
      const e = await this.#store.get(keys.page(n));
      const page = this.decode(keys.page(n), e);
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
}
