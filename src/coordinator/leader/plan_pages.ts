/**
 * The plan's pages (docs/DESIGN.md, "Plans"): how a planner run's splits are
 * cut into `page.<n>` records, written (over a page no plan published,
 * never over a newer term's), read back by a new leader in dealing order,
 * and what a planned split's record is before its claim creates it.
 *
 * @module
 */
import { StoreUnavailableError } from "../../errors.ts";
import {
  encodeRecord,
  pagedRecord,
  PAGE_BYTES,
  PAGE_SPLITS,
  type PageEntry,
  type PageRecord,
  PageRecordSchema,
  type PlanRecord,
  safeDecodeRecord,
} from "../../records.ts";
import { keys } from "../../store/keys.ts";
import type { Core } from "../core.ts";
import type { LeaderView } from "./leader_view.ts";
import type { FloorWait } from "../fresh_read.ts";
import { readPage } from "../read_page.ts";
import { utf8Length } from "../../util/utf8_length.ts";


/** Pages of the plan a new leader keeps in flight while it reads them. */
const PAGE_READS_IN_FLIGHT = 16;

/**
 * Holds the splits on pages `0 .. pages - 1` of the plan in `view`, in
 * dealing order (ranked in that order), each as not dealt yet (revision
 * 0): a record of its own that the split watch's snapshot brings replaces
 * it. Read {@linkcode PAGE_READS_IN_FLIGHT} pages at a time and applied in
 * order (a plan of a million splits is a thousand pages: one read at a
 * time, each answered after whatever else the store is doing, was most of
 * a new leader's time to its first deal), nothing of a page kept but what
 * the view holds (the descriptors stay in the store). A page is read again
 * while the store answers from before the publish (absent, or of another
 * term than `pageTerms` names: a stale replica; see {@linkcode readPage});
 * one still missing or unreadable after `wait` is named in the view's
 * unreadable records: its splits cannot be dealt, and the job is not
 * complete until it is repaired. Returns the splits read.
 */
export async function readPages(
  store: Core["store"],
  plan: Pick<PlanRecord, "pages" | "pageTerms">,
  view: LeaderView,
  wait: FloorWait,
): Promise<number> {
  const pages = plan.pages ?? 0;
  const reads: (ReturnType<typeof readPage> | undefined)[] = [];
  const read = (page: number) => {
    const r = readPage(store, page, pageTerm(plan.pageTerms, page), wait);
    r.catch(() => {}); // awaited in order below; one that fails while an earlier one is awaited is not unhandled
    reads[page] = r;
  };
  let n = 0;
  try {
    for (let page = 0; page < pages; page++) {
      for (let j = reads.length; j < Math.min(pages, page + PAGE_READS_IN_FLIGHT); j++) read(j);
      const p = await reads[page]!;
      reads[page] = undefined; // applied: nothing of it kept
      if (!p.ok) {
        view.invalid.set(keys.page(page), p.error);
        continue;
      }
      for (const s of p.page.splits) {
        view.rank(s.id);
        view.plan(s.id, pagedRecord(s, p.page), page);
        n++;
      }
    }
  } finally {
    await Promise.allSettled(reads); // every read started settles before the caller goes on
  }
  return n;
}

/** The term that wrote published page `n`, by the plan's `pageTerms` (`undefined`: not recorded). */
export function pageTerm(pageTerms: PlanRecord["pageTerms"], n: number): number | undefined {
  let term: number | undefined;
  for (const [first, t] of pageTerms ?? []) {
    if (first > n) break;
    term = t;
  }
  return term;
}

/**
 * The plan's `pageTerms` after a publish by `term` that took the pages from
 * `from` to `pages`: the pair of the new ones added (merged with the last
 * when that is ours too), those past `pages` cut. `undefined`: no pages.
 */
export function addPageTerms(
  prev: PlanRecord["pageTerms"],
  from: number,
  pages: number,
  term: number,
): PlanRecord["pageTerms"] {
  const out = (prev ?? []).filter(([first]) => first < Math.min(from, pages));
  if (pages > from && out.at(-1)?.[1] !== term) out.push([from, term]);
  return out.length > 0 ? out : undefined;
}

/** `entries` cut into pages: at most {@linkcode PAGE_SPLITS} splits and about {@linkcode PAGE_BYTES} bytes each. */
export function pageChunks(entries: readonly PageEntry[]): PageEntry[][] {
  const out: PageEntry[][] = [];
  let cur: PageEntry[] = [];
  let bytes = 64;
  for (const e of entries) {
    const size = utf8Length(JSON.stringify(e)) + 1;
    if (cur.length > 0 && (cur.length >= PAGE_SPLITS || bytes + size > PAGE_BYTES)) {
      out.push(cur);
      (cur = []), (bytes = 64);
    }
    cur.push(e);
    bytes += size;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

/**
 * Writes page `n` of the plan: created, or written over when it holds a
 * page no plan published (a run that never published: of an older term,
 * or of ours that failed before its publish). A page a newer term wrote
 * means we are deposed: nothing is written over it (`false`; the leader's
 * pass steps down on the newer term, and our publish would lose its CAS).
 */
export async function writePage(store: Core["store"], n: number, page: PageRecord, opTimeoutMs: number): Promise<boolean> {
  const key = keys.page(n);
  const value = encodeRecord(page);
  for (let i = 0; i < 4; i++) {
    const cur = await store.get(key);
    if (cur) {
      const old = safeDecodeRecord(key, cur.value, PageRecordSchema);
      if (old.ok && old.value.term > page.term) return false;
    }
    const r = cur ? await store.update(key, value, cur.revision) : await store.create(key, value);
    if (r.ok) return true;
  }
  throw new StoreUnavailableError("update", opTimeoutMs, { detail: `page ${n} of the plan kept changing while it was written` });
}

