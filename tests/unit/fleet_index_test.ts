// The live fleet index (src/fleet/fleet_index.ts) says what a full read of
// the same records says (buildFleetView): the same counts, rate, members,
// recent completions and the same page of splits for any query — on its
// first snapshot and after any changes its watch applied — and its paging
// walks the splits by id without reading them all.
import assert from "node:assert/strict";
import fc from "fast-check";
import { MemoryStore } from "../../mod.ts";
import { FleetIndex } from "../../src/fleet/fleet_index.ts";
import { readSummarySnapshot } from "../../src/fleet/fleet_summary.ts";
import { buildFleetView } from "../../src/fleet/fleet_view.ts";
import { readFleetSnapshot } from "../../src/fleet/read_fleet.ts";
import type { FleetQuery } from "../../src/fleet/fleet_query.ts";
import type { FleetView } from "../../src/fleet/types.ts";
import { keys } from "../../src/store/keys.ts";
import type { Store } from "../../src/store/store.ts";
import { AT, gen, type Gen, query, uniq, write } from "../helpers/fleet_records.ts";

async function fullView(store: Store, q: FleetQuery): Promise<FleetView> {
  return buildFleetView(await readFleetSnapshot(store, () => AT), q);
}

async function indexView(index: FleetIndex, store: Store, q: FleetQuery): Promise<FleetView> {
  return index.view(await readSummarySnapshot(store, () => AT), q);
}

/** Lets the index's watch deliver what was written. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 0));
}

Deno.test("fleet index: says what a full read says, for any records and any query, on its first snapshot", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(gen, { maxLength: 40 }).map(uniq), fc.integer({ min: 0, max: 4 }), fc.array(query, { minLength: 1, maxLength: 4 }), async (splits, published, queries) => {
      await using store = new MemoryStore({ yieldToTimers: false });
      await write(store, splits, published);
      const index = FleetIndex.start(store);
      try {
        await index.ready();
        for (const q of [{}, ...queries]) assert.deepEqual(await indexView(index, store, q), await fullView(store, q), JSON.stringify(q));
      } finally {
        await index.close();
      }
    }),
    { numRuns: 60 },
  );
});

Deno.test("fleet index: after any changes its watch applied (records written, rewritten, deleted; pages published), it says what a full read of the new records says", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(gen, { maxLength: 30 }).map(uniq),
      fc.array(gen, { maxLength: 30 }),
      fc.array(fc.stringMatching(/^s[a-f0-9]{1,3}$/), { maxLength: 5 }),
      fc.array(query, { minLength: 1, maxLength: 3 }),
      async (before, after, deleted, queries) => {
        await using store = new MemoryStore({ yieldToTimers: false });
        before = before.map((g) => ({ ...g, page: g.page === null ? null : g.page % 2 }));
        await write(store, before, 2);
        const index = FleetIndex.start(store);
        try {
          await index.ready();
          await indexView(index, store, {}); // a first refresh, so the next ones apply changes to a folded index
          // New and rewritten records, two more pages published (a published page never changes), some records deleted.
          const byId = new Map(before.map((g) => [g.id, g]));
          for (const g of after) byId.set(g.id, { ...g, page: byId.has(g.id) ? byId.get(g.id)!.page : g.page === null ? null : 2 + (g.page % 2) });
          await write(store, [...byId.values()], 4);
          for (const id of deleted) await store.delete(keys.split(id));
          await settle();
          for (const q of [{}, ...queries]) assert.deepEqual(await indexView(index, store, q), await fullView(store, q), JSON.stringify(q));
        } finally {
          await index.close();
        }
      },
    ),
    { numRuns: 40 },
  );
});

Deno.test("fleet index: a running split's fraction done comes from its owner's published estimate (the member record's est)", async () => {
  await using store = new MemoryStore({ yieldToTimers: false });
  const g: Gen = {
    id: "s1",
    page: null,
    record: { status: "runnable", owner: 1, weight: 4, est: null, done: null, ends: [], records: null, cuts: 0, parent: false, permanent: false, spec: false },
    prog: false,
  };
  await write(store, [g], 0);
  const index = FleetIndex.start(store);
  try {
    await index.ready();
    assert.equal((await indexView(index, store, {})).rate.partialWeight, 0, "no estimate yet");
    // pod-b beats with the estimate its lane committed: a quarter left.
    const m = await store.get(keys.member("pod-b"));
    const rec = { ...JSON.parse(m!.value), beat: 4, est: [["s1", 1, 4]] };
    await store.update(keys.member("pod-b"), JSON.stringify(rec), m!.revision);
    const v = await indexView(index, store, {});
    assert.equal(v.rate.partialWeight, 3);
    assert.equal(v.rate.remainingWeight, 1);
    // Another session's estimate (a restarted member's stale beat) counts for nothing.
    await store.update(keys.member("pod-b"), JSON.stringify({ ...rec, session: "other", beat: 5 }), (await store.get(keys.member("pod-b")))!.revision);
    assert.equal((await indexView(index, store, {})).rate.partialWeight, 0);
  } finally {
    await index.close();
  }
});

Deno.test("fleet index: pages of a large job by cursor, each one reading only its own rows", async () => {
  await using store = new MemoryStore({ yieldToTimers: false });
  const splits: Gen[] = Array.from({ length: 2500 }, (_, i) => ({
    id: "s" + String(i).padStart(5, "0"),
    page: Math.floor(i / 1000),
    record: i % 5 === 0
      ? { status: "completed", owner: null, weight: 1, est: null, done: i % 300, ends: [], records: 10, cuts: 0, parent: false, permanent: false, spec: false }
      : null,
    prog: false,
  }));
  await write(store, splits, 3, 1, -1);
  const reads: string[] = [];
  const counting = new Proxy(store, {
    get: (t, p) => {
      if (p === "get") return (k: string) => (reads.push(k), t.get(k));
      if (p === "list") return (f: string) => (reads.push("list " + f), t.list(f));
      const v = Reflect.get(t, p);
      return typeof v === "function" ? v.bind(t) : v;
    },
  });
  const index = FleetIndex.start(counting);
  await index.ready();
  try {
    let after: string | undefined, pages = 0, seen = 0;
    for (;;) {
      reads.length = 0;
      const v = await index.view(await readSummarySnapshot(counting, () => AT), { state: "completed", limit: 100, ...(after ? { after } : {}) });
      assert.equal(v.page.matched, 500);
      seen += v.splits.length;
      assert.ok(v.splits.every((s) => s.status === "completed"));
      assert.ok(!reads.some((k) => k.startsWith("split.") || k === "list split." || k === "list prog."), reads.join(" "));
      pages++;
      if (v.page.next === null) break;
      after = v.page.next;
    }
    assert.deepEqual([pages, seen], [5, 500]);
    // Unclaimed splits not dealt yet come from their pages: one page read (then kept), no split record.
    reads.length = 0;
    const u = await index.view(await readSummarySnapshot(counting, () => AT), { state: "unclaimed", limit: 15, after: "s01000" });
    assert.deepEqual(u.splits.map((s) => s.id).slice(0, 3), ["s01001", "s01002", "s01003"]);
    assert.equal(u.page.matched, 2000);
    assert.deepEqual(reads.filter((k) => k.startsWith("page.")), [keys.page(1)]);
  } finally {
    await index.close();
  }
});

Deno.test("fleet index: a rerun (a new run of the plan) makes it stale; a closed store stops it", async () => {
  const store = new MemoryStore({ yieldToTimers: false });
  await write(store, [{ id: "s1", page: 0, record: null, prog: false }], 1);
  let stopped = 0;
  const index = FleetIndex.start(store, { onStop: () => stopped++ });
  await index.ready();
  await indexView(index, store, {});
  assert.equal(index.stale, false);
  const plan = await store.get(keys.plan);
  await store.update(keys.plan, JSON.stringify({ ...JSON.parse(plan!.value), run: 2, generation: 0, pages: 0 }), plan!.revision);
  await indexView(index, store, {});
  assert.equal(index.stale, true);
  await store.close();
  await settle();
  assert.deepEqual([index.state, stopped], ["stopped", 1]);
  await assert.rejects(() => indexView(index, new MemoryStore(), {}), /stopped/);
});
