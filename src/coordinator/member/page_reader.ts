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

/** Reads a plan's pages for one member's claims. */
export class PageReader {
  readonly #core: Core;
  readonly #pages = new Map<number, { page: PageRecord; entries: Map<string, PageEntry> }>();

  constructor(core: Core) {
    this.#core = core;
  }

  /**
   * The record the claim of `id` creates (epoch 0, free: the claim opens it),
   * from page `page` of the plan, or `undefined` when that page does not list
   * it (or cannot be read: logged; the offer is left to the leader). Outages throw.
   */
  async record(page: number, id: string): Promise<SplitRecord | undefined> {
    let read = this.#pages.get(page);
    if (!read) {
      const { clock, config, store } = this.#core;
      // A page is published before its splits are offered: "absent" is a replica from before it was written.
      const p = await readPage(store, page, undefined, { clock, budgetMs: config.opTimeoutMs });
      if (!p.ok) {
        this.#core.log("warn", "An offered split's page of the plan cannot be read; the offer is left", {
          split: id,
          page: keys.page(page),
          error: p.error,
        });
        return undefined;
      }
      read = { page: p.page, entries: new Map(p.page.splits.map((x) => [x.id, x])) };
      this.#pages.set(page, read);
      if (this.#pages.size > CACHED_PAGES) this.#pages.delete(this.#pages.keys().next().value!);
    }
    const entry = read.entries.get(id);
    // Not on the page read: a deposed run's page (a stale replica); read it again for the next offer.
    if (!entry) this.#pages.delete(page);
    return entry && pagedRecord(entry, read.page);
  }
}
