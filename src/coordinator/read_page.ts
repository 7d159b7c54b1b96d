/**
 * Reading one page of the published plan (docs/DESIGN.md, "Plans" and
 * "Fresh reads"): by a new leader, into its view, and by a member, for the
 * record its claim of a split not dealt yet creates.
 *
 * @module
 */
import { type PageRecord, PageRecordSchema, safeDecodeRecord } from "../records.ts";
import { keys } from "../store/keys.ts";
import type { Core } from "./core.ts";
import { type FloorWait, readAtLeast } from "./fresh_read.ts";

/**
 * Page `n` of the published plan, read until the answer is the published
 * page: present (a published page exists; "absent" is a replica from
 * before it was written) and of `term` when that is known (another term's
 * page is one a deposed run wrote, since written over). Gives up after
 * `wait.budgetMs` with what was last read, named as the error.
 */
export async function readPage(
  store: Core["store"],
  n: number,
  term: number | undefined,
  wait: FloorWait,
): Promise<{ ok: true; page: PageRecord } | { ok: false; error: string }> {
  const key = keys.page(n);
  let floor = 1;
  const start = wait.clock.now();
  for (;;) {
    const { entry } = await readAtLeast(() => store.get(key), floor, wait);
    if (!entry) return { ok: false, error: "a page of the published plan is missing" };
    const p = safeDecodeRecord(key, entry.value, PageRecordSchema);
    if (!p.ok) return { ok: false, error: p.error.message };
    if (term === undefined || p.value.term === term) return { ok: true, page: p.value };
    if (wait.clock.now() - start >= wait.budgetMs) {
      return { ok: false, error: `the page was written by term ${p.value.term}, the plan published term ${term}'s` };
    }
    floor = entry.revision + 1; // the published page is a later version
  }
}
