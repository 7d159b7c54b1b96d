// A page of a large job's splits read from outside the fleet
// (src/fleet/read_splits.ts, `splitlease splits` past FULL_READ_MAX_SPLITS):
// the page a full read gives, for any records and any query, with a record
// decoded only where it can be on the page and no progress record listed.
import assert from "node:assert/strict";
import fc from "fast-check";
import { MemoryStore } from "../../mod.ts";
import { buildFleetView } from "../../src/fleet/fleet_view.ts";
import { readFleetSnapshot } from "../../src/fleet/read_fleet.ts";
import { readSplitsPage } from "../../src/fleet/read_splits.ts";
import { keys } from "../../src/store/keys.ts";
import { AT, gen, query, uniq, write } from "../helpers/fleet_records.ts";

Deno.test("read splits: the page of a full read, for any records and any query", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(gen, { maxLength: 40 }).map(uniq), fc.integer({ min: 0, max: 4 }), fc.array(query, { minLength: 1, maxLength: 4 }), async (splits, published, queries) => {
      await using store = new MemoryStore({ yieldToTimers: false });
      await write(store, splits, published);
      for (const q of [{}, ...queries]) {
        const full = buildFleetView(await readFleetSnapshot(store, () => AT), q);
        const paged = await readSplitsPage(store, q, () => AT);
        assert.deepEqual([paged.splits, paged.page], [full.splits, full.page], JSON.stringify(q));
        assert.equal(paged.basis, "beat");
      }
    }),
    { numRuns: 100 },
  );
});

Deno.test("read splits: only records that can be on the page are decoded, and no progress record is listed", async () => {
  await using store = new MemoryStore({ yieldToTimers: false });
  const splits = Array.from({ length: 300 }, (_, i) => ({
    id: "s" + String(i).padStart(4, "0"),
    page: null,
    record: { status: i % 100 === 7 ? "quarantined" as const : "completed" as const, owner: null, weight: 1, est: null, done: 10, ends: [], records: 5, cuts: 0, parent: false, permanent: false, spec: false },
    prog: true,
  }));
  await write(store, splits, 0);
  const reads: string[] = [];
  const counting = new Proxy(store, {
    get: (t, p) => {
      if (p === "list") return (f: string) => (reads.push("list " + f), t.list(f));
      if (p === "get") return (k: string) => (reads.push(k), t.get(k));
      const v = Reflect.get(t, p);
      return typeof v === "function" ? v.bind(t) : v;
    },
  });
  const decoded: string[] = [];
  const v = await withDecodeSpy(decoded, () => readSplitsPage(counting, { state: "quarantined" }, () => AT));
  assert.deepEqual(v.splits.map((s) => s.id), ["s0007", "s0107", "s0207"]);
  assert.equal(v.page.matched, 3);
  assert.deepEqual(decoded.filter((k) => k.startsWith("split.")), ["split.s0007", "split.s0107", "split.s0207"]);
  assert.ok(!reads.includes("list prog.") && !reads.includes("list page."), reads.join(" "));
  // The next page by its cursor; its progress records are read for its running splits only (none here).
  reads.length = 0;
  const next = await readSplitsPage(counting, { state: "completed", limit: 2, after: "s0290" }, () => AT);
  assert.deepEqual(next.splits.map((s) => s.id), ["s0291", "s0292"]);
  assert.deepEqual([next.page.next, next.page.matched], ["s0292", 297]);
  assert.ok(!reads.some((k) => k.startsWith("prog.")), reads.join(" "));
});

/** The split records (by their descriptor's file) parsed while `fn` runs: JSON.parse watched. */
async function withDecodeSpy<T>(into: string[], fn: () => Promise<T>): Promise<T> {
  const parse = JSON.parse;
  JSON.parse = ((text: string, reviver?: Parameters<typeof parse>[1]) => {
    const m = /"descriptor":\{"file":"(s\d+)"/.exec(text);
    if (m && text.includes('"epoch"')) into.push(keys.split(m[1]));
    return parse(text, reviver);
  }) as typeof JSON.parse;
  try {
    return await fn();
  } finally {
    JSON.parse = parse;
  }
}
