/**
 * The record a member's claim of a planned split not dealt yet creates,
 * read from the page of the plan its offer names (`page.<n>`): the leader
 * keeps no descriptor of such a split, and its offer carries only the page.
 * The last few pages read are cached: offers come in dealing order, so one
 * page serves many claims.
 *
 * @module
 */
import { pagedRecord, type PageEntry, type PageRecord, type SplitRecord } from "../../records.ts";
import { readPage } from "../read_page.ts";
import { keys } from "../../store/keys.ts";
import type { Core } from "../core.ts";

/** Pages a member keeps parsed (offers come in dealing order: the next ones are on the page read last). */
const CACHED_PAGES = 4;

/** A page as read: its record and its entries by id. */
interface ReadPage {
  page: PageRecord;
  entries: Map<string, PageEntry>;
}

/** Reads a plan's pages for one member's claims. */
export class PageReader {
  readonly #core: Core;
  /**
   * The last pages asked for, read or being read: claims of one page's
   * splits run at once (a lane each), and each waits for the one read
   * rather than reading the page itself (32 lanes read a 100 KB page 32
   * times: a fifth of a busy member's CPU in the peers bench).
   */
  readonly #pages = new Map<number, Promise<ReadPage | undefined>>();

  constructor(core: Core) {
    this.#core = core;
  }

  /**
   * The record the claim of `id` creates (epoch 0, free: the claim opens it),
   * from page `page` of the plan, or `undefined` when that page does not list
   * it (or cannot be read: logged; the offer is left to the leader). Outages throw.
   */
  async record(page: number, id: string): Promise<SplitRecord | undefined> {
    let reading = this.#pages.get(page);
    if (!reading) {
      reading = this.#read(page, id);
      this.#pages.set(page, reading);
      if (this.#pages.size > CACHED_PAGES) this.#pages.delete(this.#pages.keys().next().value!);
      // Not cached when it failed: the next offer reads it again.
      reading.then((r) => r ?? this.#forget(page, reading!), () => this.#forget(page, reading!));
    }
    const read = await reading;
    if (!read) return undefined;
    const entry = read.entries.get(id);
    // Not on the page read: a deposed run's page (a stale replica); read it again for the next offer.
    if (!entry) this.#forget(page, reading);
    return entry && pagedRecord(entry, read.page);
  }

  async #read(page: number, id: string): Promise<ReadPage | undefined> {
    const { clock, config, store } = this.#core;
    // A page is published before its splits are offered: "absent" is a replica from before it was written.
    const p = await readPage(store, page, undefined, { clock, budgetMs: config.opTimeoutMs });
    if (!p.ok) {
      this.#core.log("warn", "An offered split's page of the plan cannot be read; the offer is left", { split: id, page: keys.page(page), error: p.error });
      return undefined;
    }
    return { page: p.page, entries: new Map(p.page.splits.map((x) => [x.id, x])) };
  }

  #forget(page: number, reading: Promise<ReadPage | undefined>): void {
    if (this.#pages.get(page) === reading) this.#pages.delete(page);
  }
}
