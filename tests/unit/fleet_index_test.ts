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
import type { FleetQuery, FleetState, FleetView } from "../../src/fleet/types.ts";
import { encodeRecord, type MemberRecord, type PageRecord, type PlanRecord, type ProgRecord, type SplitRecord } from "../../src/records.ts";
import { keys } from "../../src/store/keys.ts";
import type { Store } from "../../src/store/store.ts";

const AT = 1_800_000_000_000;
const MEMBERS = ["pod-a", "pod-b", "pod-c"];
const STATES: FleetState[] = ["runnable", "owned", "unclaimed", "completed", "quarantined", "cancelled"];

/** One split as the generator makes it: where it lives and what its record says. */
interface Gen {
  id: string;
  page: number | null; // the page it is on (null: none, a residual)
  record: null | "garbage" | {
    status: "runnable" | "completed" | "quarantined" | "cancelled";
    owner: number | null;
    weight: number;
    est: number | null; // quarter of the work left
    done: number | null; // seconds ago it completed
    ends: ("failed" | "lost" | "released")[];
    records: number | null;
    cuts: number;
    parent: boolean;
    permanent: boolean;
    spec: boolean;
  };
  prog: boolean;
}

const gen: fc.Arbitrary<Gen> = fc.record({
  id: fc.stringMatching(/^[a-f0-9]{1,3}$/).map((s) => "s" + s),
  page: fc.option(fc.integer({ min: 0, max: 3 }), { nil: null, freq: 4 }),
  record: fc.oneof(
    { weight: 3, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.constant("garbage" as const) },
    {
      weight: 8,
      arbitrary: fc.record({
        status: fc.constantFrom("runnable", "completed", "quarantined", "cancelled"),
        owner: fc.option(fc.integer({ min: 0, max: MEMBERS.length - 1 }), { nil: null }),
        weight: fc.integer({ min: 1, max: 4 }),
        est: fc.option(fc.integer({ min: 0, max: 4 }), { nil: null }),
        done: fc.option(fc.integer({ min: 0, max: 900 }), { nil: null }),
        ends: fc.array(fc.constantFrom("failed", "lost", "released"), { maxLength: 3 }),
        records: fc.option(fc.integer({ min: 0, max: 1000 }), { nil: null }),
        cuts: fc.integer({ min: 0, max: 2 }),
        parent: fc.boolean(),
        permanent: fc.boolean(),
        spec: fc.boolean(),
      }),
    },
  ),
  prog: fc.boolean(),
});

function splitRecordOf(g: Gen): SplitRecord | undefined {
  const r = g.record;
  if (r === null || r === "garbage") return undefined;
  const owner = r.status === "runnable" && r.owner !== null ? { instance: MEMBERS[r.owner], session: "s" + r.owner } : null;
  const tenancies: NonNullable<SplitRecord["tenancies"]> = r.ends.map((end, i) => ({ epoch: i + 1, owner: MEMBERS[i % 3], from: AT - 3_600_000 + i * 1000, to: AT - 3_000_000, end }));
  if (r.status === "completed" && r.done !== null) tenancies.push({ epoch: 9, owner: MEMBERS[r.done % 3], from: AT - r.done * 1000 - 500, to: AT - r.done * 1000, end: "completed" });
  if (owner) tenancies.push({ epoch: 10, owner: owner.instance, from: AT - 60_000 });
  const rec: SplitRecord = {
    v: 2,
    epoch: 10,
    status: r.status,
    owner,
    attempts: r.status === "quarantined" ? 3 : 0,
    weight: r.weight,
    progress: r.est === null ? { watermark: 7 } : { watermark: 7, estimate: { left: r.est, total: 4, unit: "ids" } },
    closed: 10,
  };
  if (r.spec) rec.spec = true;
  // Its page's descriptor, unless a cut narrowed it (or it is a residual: its own).
  else rec.descriptor = r.cuts || r.parent ? { file: g.id + "-cut", n: r.weight } : { file: g.id };
  if (tenancies.length) rec.tenancies = tenancies.slice(-8);
  if (r.records !== null) rec.records = r.records;
  if (r.cuts) rec.cuts = r.cuts;
  if (r.parent) rec.parent = "s0";
  if (r.status === "quarantined") {
    rec.lastFailure = "bad line";
    rec.failures = [{ at: AT - 1000, worker: "pod-a", message: "bad line", ...(r.permanent ? { permanent: true } : {}) }];
  }
  if (r.status === "completed" && r.done === null) delete rec.tenancies; // an older version's record: untimed
  return rec;
}

/** Writes a generated job into a store: its plan and pages (`published` of them; page `garbagePage` unreadable), records, progress and members. */
async function write(store: Store, splits: Gen[], published: number, run = 1, garbagePage = 2): Promise<void> {
  const byPage = new Map<number, Gen[]>();
  for (const g of splits) if (g.page !== null) byPage.set(g.page, [...(byPage.get(g.page) ?? []), g]);
  for (const [n, list] of byPage) {
    const entry = (g: Gen) => typeof g.record === "object" && g.record?.spec ? { spec: true as const } : { descriptor: { file: g.id } };
    const page: PageRecord = { v: 2, term: 1, splits: list.map((g) => ({ id: g.id, weight: (g.id.length % 3) + 1, ...entry(g) })) };
    if (run > 1) page.run = run;
    await store.create(keys.page(n), n === garbagePage ? "{not json" : encodeRecord(page)); // a page written already stays as it is
  }
  for (const g of splits) {
    const rec = splitRecordOf(g);
    if (g.record === "garbage") await put(store, keys.split(g.id), '{"v":2,"epoch":"x"}');
    else if (rec) await put(store, keys.split(g.id), encodeRecord(rec));
    // A progress record holding what the split record holds (a released split's, after its terminal write).
    if (!rec || !g.prog) await store.delete(keys.prog(g.id));
    if (rec && g.prog) {
      const p: ProgRecord = { v: 2, epoch: rec.epoch, owner: rec.owner ?? { instance: "pod-a", session: "s0" }, progress: rec.progress };
      if (rec.records !== undefined) p.records = rec.records;
      if (rec.cuts) p.cuts = rec.cuts;
      await put(store, keys.prog(g.id), encodeRecord(p));
    }
  }
  const plan: PlanRecord = { v: 2, term: 1, finality: "final", generation: 1, planned: splits.length, pages: published };
  if (run > 1) plan.run = run;
  await put(store, keys.plan, encodeRecord(plan));
  for (const [i, m] of MEMBERS.entries()) {
    const rec: MemberRecord = { v: 2, session: "s" + i, maxInFlight: 4, runtime: "deno", version: "test", beat: 3, at: AT - 1000, lease: 15_000 };
    await put(store, keys.member(m), encodeRecord(rec));
  }
}

async function put(store: Store, key: string, value: string): Promise<void> {
  const e = await store.get(key);
  const r = e ? await store.update(key, value, e.revision) : await store.create(key, value);
  assert.ok(r.ok, key);
}

const uniq = (xs: Gen[]) => [...new Map(xs.map((g) => [g.id, g])).values()];

const query: fc.Arbitrary<FleetQuery> = fc.record({
  state: fc.subarray(STATES, { minLength: 1 }),
  owner: fc.constantFrom(...MEMBERS, "pod-z"),
  after: fc.stringMatching(/^s[a-f0-9]{0,3}$/),
  limit: fc.integer({ min: 1, max: 6 }),
  match: fc.constantFrom("s1", "A", "cut", "pod-b", "file", "\"n\":3", "zz"),
}, { requiredKeys: [] });

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
