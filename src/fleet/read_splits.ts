/**
 * One page of a large job's splits, read from outside the fleet
 * (`splitlease splits` on a job of more than `FULL_READ_MAX_SPLITS`
 * splits): the split records are listed (the store has no paged listing),
 * but a record is decoded only when it can match the query — when it holds
 * the text of a status (and owner) the query asks for, which a record that
 * has them must hold (a JSON string of id characters has no escapes; a
 * record with `\u` escapes is decoded anyway); the progress records are
 * read only for the page's running splits, never listed; the plan's pages
 * only when the query can match a split not dealt yet. The counts come
 * from the job's summary (the leader's beat, `basis: "beat"`). The page
 * itself, its `matched` count and its cursor equal a full read's.
 *
 * @module
 */
import {
  liveSplitRecord,
  pagedRecord,
  type PageRecord,
  PageRecordSchema,
  ProgRecordSchema,
  safeDecodeRecord,
  type SplitRecord,
  SplitRecordSchema,
} from "../records.ts";
import { keys } from "../store/keys.ts";
import type { Store } from "../store/store.ts";
import { buildFleetSummary, readSummarySnapshot } from "./fleet_summary.ts";
import { normalizeFleetQuery, pageOf, queryMatches, splitView } from "./fleet_view.ts";
import type { FleetQuery } from "./fleet_query.ts";
import type { FleetView } from "./types.ts";

/** The JSON text a record of this status holds (`"status":"…"` holds it). */
const STATUS_TEXT = { runnable: '"runnable"', completed: '"completed"', quarantined: '"quarantined"', cancelled: '"cancelled"' } as const;

/**
 * Reads one page of splits for `query` (see the module doc): the page a
 * full read gives, with the job's summary around it.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { readSplitsPage } from "@splitlease/splitlease/admin";
 * const v = await readSplitsPage(new MemoryStore(), { state: "quarantined", limit: 50 });
 * console.log(v.splits.length, v.page.matched, v.page.next);
 * ```
 */
export async function readSplitsPage(store: Store, query: FleetQuery = {}, wallNow: () => number = Date.now): Promise<FleetView> {
  const q = normalizeFleetQuery(query);
  const small = await readSummarySnapshot(store, wallNow);
  const summary = buildFleetSummary(small, query);
  const states = q.state ?? ["runnable", "completed", "quarantined", "cancelled"];
  const texts = [...new Set(states.map((s) => STATUS_TEXT[s === "owned" || s === "unclaimed" ? "runnable" : s]))];
  const owner = q.owner === null ? undefined : JSON.stringify(q.owner);
  // A split not dealt yet has no record, no owner and no history: it can match only an unclaimed, unfiltered query.
  const undealt = q.owner === null && (q.state === null || q.state.includes("runnable") || q.state.includes("unclaimed"));

  const page: { id: string; rec: SplitRecord; dealt: boolean }[] = [];
  let matched = 0, matchedAfter = 0;
  const take = (id: string, rec: SplitRecord, dealt: boolean) => {
    if (!queryMatches(q, id, rec)) return;
    matched++;
    if (q.after !== null && id <= q.after) return;
    matchedAfter++;
    if (page.length === q.limit && id >= page[page.length - 1].id) return;
    let lo = 0, hi = page.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (page[mid].id < id) lo = mid + 1;
      else hi = mid;
    }
    page.splice(lo, 0, { id, rec, dealt });
    if (page.length > q.limit) page.pop();
  };
  const [splits, pages] = await Promise.all([store.list(keys.splitPrefix), undealt ? store.list(keys.pagePrefix) : []]);
  const dealt = undealt ? new Set<string>() : undefined;
  for (const e of splits) {
    const id = e.key.slice(keys.splitPrefix.length);
    dealt?.add(id);
    const v = e.value;
    // Only what can match is decoded (a record with escapes might spell a status another way).
    if (q.match === null && !v.includes("\\u")) {
      if (!texts.some((t) => v.includes(t)) || (owner !== undefined && !v.includes(owner))) continue;
    }
    const r = safeDecodeRecord(e.key, v, SplitRecordSchema);
    if (r.ok) take(id, r.value, true);
  }
  const published = planPages(small.plan?.value);
  for (const e of pages) {
    if (e.key >= keys.page(published)) continue; // a run that never published
    const p = safeDecodeRecord(e.key, e.value, PageRecordSchema);
    if (!p.ok) continue;
    for (const x of p.value.splits) if (!dealt!.has(x.id)) (dealt!.add(x.id), take(x.id, pagedRecord(x, p.value as PageRecord), false));
  }
  // The page's running splits: their position is in their progress records.
  const rows = await Promise.all(page.map(async ({ id, rec, dealt }) => {
    if (!dealt || rec.status !== "runnable") return splitView(id, rec);
    const pe = await store.get(keys.prog(id));
    const prog = pe ? safeDecodeRecord(pe.key, pe.value, ProgRecordSchema) : undefined;
    return splitView(id, liveSplitRecord(rec, prog?.ok ? prog.value : undefined));
  }));
  return { ...summary, splits: rows, page: pageOf(q, matched, matchedAfter > q.limit ? page[page.length - 1].id : null) };
}

/** The pages a plan record's text publishes (0 when unreadable). */
function planPages(value: string | undefined): number {
  try {
    const pages = value === undefined ? 0 : (JSON.parse(value) as { pages?: unknown }).pages;
    return typeof pages === "number" && Number.isInteger(pages) && pages >= 0 ? pages : 0;
  } catch {
    return 0;
  }
}
