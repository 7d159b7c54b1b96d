// A member's reads of the plan's pages (src/coordinator/member/page_reader.ts):
// the claims of one page's splits run at once, a lane each, and share one
// read of the page; a page that could not be read is read again for the
// next claim.
import assert from "node:assert/strict";
import { MemoryStore } from "../../mod.ts";
import { systemClock } from "../../src/coordinator/clock.ts";
import { encodeRecord, type PageRecord } from "../../src/records.ts";
import { keys } from "../../src/store/keys.ts";
import type { Core } from "../../src/coordinator/core.ts";
import { PageReader } from "../../src/coordinator/member/page_reader.ts";

function reader(store: MemoryStore, gets: string[]): PageReader {
  const counted = new Proxy(store, {
    get(t, k) {
      if (k === "get") return (key: string) => (gets.push(key), t.get(key));
      const v = Reflect.get(t, k, t);
      return typeof v === "function" ? v.bind(t) : v;
    },
  });
  // A missing page is read again within the op timeout (a replica from before it was written): 20 ms here.
  const core = { store: counted, clock: systemClock, config: { opTimeoutMs: 20 }, log: () => {} } as unknown as Core;
  return new PageReader(core);
}

Deno.test("page reader: thirty-two claims of one page's splits read the page once", async () => {
  const store = new MemoryStore();
  const page: PageRecord = { v: 2, term: 1, splits: Array.from({ length: 32 }, (_, i) => ({ id: `s${i}`, descriptor: { n: i } })) };
  await store.create(keys.page(0), encodeRecord(page));
  const gets: string[] = [];
  const r = reader(store, gets);
  const recs = await Promise.all(page.splits.map((s) => r.record(0, s.id)));
  assert.deepEqual(recs.map((x) => x?.descriptor), page.splits.map((s) => s.descriptor));
  assert.deepEqual(gets, [keys.page(0)], "one read of the page for all of them");
  assert.equal(await r.record(0, "not-there"), undefined, "a split the page does not list has no record");
  await r.record(0, "s1");
  assert.equal(gets.length, 2, "a page that did not list an offered split is read again (a stale replica's page)");
});

Deno.test("page reader: a page that cannot be read is not cached", async () => {
  const store = new MemoryStore();
  const gets: string[] = [];
  const r = reader(store, gets);
  assert.equal(await r.record(3, "a"), undefined, "missing: the offer is left");
  await store.create(keys.page(3), encodeRecord({ v: 2, term: 1, splits: [{ id: "a", descriptor: null }] } satisfies PageRecord));
  assert.equal((await r.record(3, "a"))?.descriptor, null, "read again once it exists");
});
