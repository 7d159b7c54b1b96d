// Random job records for the tests of the fleet's reads (tests/unit/fleet_index_test.ts,
// fleet_read_splits_test.ts): splits on pages or not, dealt or not, in every state, with
// histories, cuts, records and progress, members, and queries over them.
import assert from "node:assert/strict";
import fc from "fast-check";
import type { FleetQuery, FleetState } from "../../src/fleet/fleet_query.ts";
import { encodeRecord, type MemberRecord, type PageRecord, type PlanRecord, type ProgRecord, type SplitRecord } from "../../src/records.ts";
import { keys } from "../../src/store/keys.ts";
import type { Store } from "../../src/store/store.ts";

export const AT = 1_800_000_000_000;
export const MEMBERS = ["pod-a", "pod-b", "pod-c"];
export const STATES: FleetState[] = ["runnable", "owned", "unclaimed", "completed", "quarantined", "cancelled"];

/** One split as the generator makes it: where it lives and what its record says. */
export interface Gen {
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

export const gen: fc.Arbitrary<Gen> = fc.record({
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

export function splitRecordOf(g: Gen): SplitRecord | undefined {
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
export async function write(store: Store, splits: Gen[], published: number, run = 1, garbagePage = 2): Promise<void> {
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

export async function put(store: Store, key: string, value: string): Promise<void> {
  const e = await store.get(key);
  const r = e ? await store.update(key, value, e.revision) : await store.create(key, value);
  assert.ok(r.ok, key);
}

export const uniq = (xs: Gen[]) => [...new Map(xs.map((g) => [g.id, g])).values()];

export const query: fc.Arbitrary<FleetQuery> = fc.record({
  state: fc.subarray(STATES, { minLength: 1 }),
  owner: fc.constantFrom(...MEMBERS, "pod-z"),
  after: fc.stringMatching(/^s[a-f0-9]{0,3}$/),
  limit: fc.integer({ min: 1, max: 6 }),
  match: fc.constantFrom("s1", "A", "cut", "pod-b", "file", "\"n\":3", "zz"),
}, { requiredKeys: [] });

