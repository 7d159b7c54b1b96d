// How a leader writes a large plan (issue 39, item 2: the plan seeded at the store's rate): its pages
// are written several at a time and dealt in order as each lands, and the grants it makes to idle lanes
// while seeding never hold up the next page. Both used to be one at a time: under a fleet of busy
// workers a plan of a thousand pages waited a thousand store queues, and a plan of tiny splits was
// granted split by split as lanes freed, published only when the fleet had run nearly all of it.
import assert from "node:assert/strict";
import { keys } from "../../admin.ts";
import { decodeRecord, PageRecordSchema } from "../../src/records.ts";
import { FaultyStore } from "./faulty_store.ts";
import { finalPlanner, Member, memoryBackend, rawStore, splits } from "./fleet.ts";

const pagesOf = async (f: Awaited<ReturnType<typeof memoryBackend.fleet>>) => (await rawStore(f).list(keys.pagePrefix)).length;

Deno.test("plan writing: while the first page's write is parked, the pages after it are written; dealing starts with the first page's splits once it lands", async () => {
  let faulty!: FaultyStore;
  await using f = await memoryBackend.fleet((s) => (faulty = new FaultyStore(s)));
  const parked = faulty.hold((op, key) => op === "create" && key === keys.page(0));
  const plan = splits(5000); // 5 pages of 1,000
  const a = await f.join({ instance: "a", planner: finalPlanner(plan), maxInFlight: 4 });
  assert.ok(await f.until(() => parked.count() === 1, 2000, 1), "page 0's create is parked");
  await f.advance(50);
  assert.equal(await pagesOf(f), 4, "pages 1 to 4 were written while page 0's write was in flight");
  assert.equal(a.gained().length, 0, "nothing dealt before the first page landed");
  parked.release();
  assert.ok(await f.until(() => f.members[0].c.status().plan?.generation === 1, 2000), "published");
  assert.equal(await pagesOf(f), 5);
  assert.ok(await f.until(() => a.gained().length === 4, 2000));
  assert.deepEqual(a.gained().map((g) => g.split.id).sort(), plan.slice(0, 4).map((s) => s.id), "the first page's splits first");
  assert.equal(a.c.status().plan?.planned, 5000);
});

Deno.test("plan writing: grants to idle lanes in flight do not hold up the next page; the rest of the plan is offered, and the publish waits for the grants", async () => {
  let faulty!: FaultyStore;
  await using f = await memoryBackend.fleet((s) => (faulty = new FaultyStore(s)));
  // The first split records created (the leader's grants, one per idle lane) parked: they stay in flight.
  const parkedKeys: string[] = [];
  const grants = faulty.hold((op, key) => op === "create" && key.startsWith("split.") && parkedKeys.length < 8 && (parkedKeys.push(key), true));
  const a = await f.join({ instance: "a", planner: finalPlanner(splits(40_000)), maxInFlight: 8 });
  assert.ok(await f.until(() => grants.count() === 8, 2000, 1), "a grant for each idle lane");
  await f.advance(50);
  assert.equal(await pagesOf(f), 40, "every page written while the grants were in flight (more than are written at once)");
  assert.equal(a.c.status().plan?.generation, 0, "not published while a grant is in flight (its split is not in the view yet)");
  grants.release();
  assert.ok(await f.until(() => a.c.status().plan?.generation === 1, 2000), "published once the grants landed");
  assert.equal(a.c.status().plan?.planned, 40_000, "every split counted, the granted ones too");
  const page0 = decodeRecord(keys.page(0), (await rawStore(f).get(keys.page(0)))!.value, PageRecordSchema);
  assert.deepEqual(parkedKeys, page0.splits.slice(0, 8).map((e) => keys.split(e.id)), "the grants went to the plan's first splits");
  for (const k of parkedKeys) assert.ok(await rawStore(f).get(k), `${k} granted: its record exists`);
});

Deno.test("plan reading: a new leader reads the published pages several at a time, and deals from the first page once it is read", async () => {
  await using f = await memoryBackend.fleet();
  const plan = splits(5000); // 5 pages
  const a = await f.join({ instance: "a", planner: finalPlanner(plan), maxInFlight: 1 });
  assert.ok(await f.until(() => a.c.status().plan?.generation === 1, 2000), "published");
  await a.c.abandon(); // a crash: its successor reads the plan's pages
  const bStore = new FaultyStore(rawStore(f));
  const asked: string[] = [];
  const parked = bStore.hold((op, key) => {
    if (op === "get" && key.startsWith(keys.pagePrefix)) asked.push(key);
    return op === "get" && key === keys.page(0);
  });
  const b = new Member(await f.start({ instance: "b", store: bStore, planner: finalPlanner(plan), maxInFlight: 2 }));
  f.members.push(b);
  assert.ok(await f.until(() => parked.count() === 1, 20_000), "b leads and reads page 0");
  await f.advance(50);
  assert.deepEqual(asked.slice().sort(), [0, 1, 2, 3, 4].map((n) => keys.page(n)), "the other pages were read while page 0's read was in flight");
  assert.equal(b.gained().length, 0, "nothing dealt before the pages are in the view");
  parked.release();
  assert.ok(await f.until(() => b.held.length === 2, 5000), "b deals once the pages are read");
  assert.ok(b.held.every((id) => plan.slice(0, 1000).some((s) => s.id === id)), `from the first page (held ${b.held})`);
});

Deno.test("plan writing: a run after a failed publish goes on after the pages its term wrote, and publishes them (seed 354)", async () => {
  let faulty!: FaultyStore;
  await using f = await memoryBackend.fleet((s) => (faulty = new FaultyStore(s)));
  // The first publish (the plan record's write of generation 1) fails as an outage: not applied.
  let failed = 0;
  faulty.fail((op, key, value) => failed === 0 && op === "update" && key === keys.plan && value?.includes('"generation":1') === true && ++failed === 1);
  const plan = splits(3000); // 3 pages
  const a = await f.join({ instance: "a", planner: finalPlanner(plan), maxInFlight: 1 });
  assert.ok(await f.until(() => a.c.status().plan?.generation === 1, 20_000), "published by a later run of the term");
  assert.equal(failed, 1, "the first publish failed");
  const rec = JSON.parse((await rawStore(f).get(keys.plan))!.value);
  assert.equal(rec.pages, 3, "the pages the failed run wrote are published, not left past the plan's page count");
  assert.equal(rec.planned, 3000);
});

Deno.test("plan in parts: a planner that says more is called again at once with its cursor, each part published as it is listed, the last one final", async () => {
  await using f = await memoryBackend.fleet();
  const all = splits(4500);
  const calls: unknown[] = [];
  const a = await f.join({
    instance: "a",
    maxInFlight: 2,
    replanIntervalMs: 600_000, // an open plan waits ten minutes: a listing in parts must not
    planner: (ctx) => {
      calls.push(ctx.cursor);
      const from = typeof ctx.cursor === "number" ? ctx.cursor : 0, to = Math.min(all.length, from + 1500);
      const more = to < all.length;
      return Promise.resolve({ splits: all.slice(from, to), finality: more ? "open" : "final", ...(more ? { cursor: to, more: true } : {}) });
    },
  });
  assert.ok(await f.until(() => a.c.status().plan?.finality === "final", 5000), "every part listed within seconds, not replan intervals");
  assert.deepEqual(calls, [undefined, 1500, 3000]);
  const plan = a.c.status().plan!;
  assert.deepEqual([plan.generation, plan.planned], [3, 4500]);
  // Dealt from the first part on, in the planner's order across the parts.
  const page0 = decodeRecord(keys.page(0), (await rawStore(f).get(keys.page(0)))!.value, PageRecordSchema);
  assert.equal(page0.splits[0].id, all[0].id);
  assert.equal(await pagesOf(f), 6, "each part's pages after the last part's");
});

Deno.test("plan in parts: more with a final plan, or a more that is not a boolean, is refused naming the fix; nothing is published", async () => {
  for (const [bad, says] of [
    [{ finality: "final", more: true }, /more: true with finality "final"/],
    [{ finality: "open", more: "yes" }, /more "yes": it must be true/],
  ] as const) {
    await using f = await memoryBackend.fleet();
    const a = await f.join({ instance: "a", planner: () => Promise.resolve({ splits: splits(3), ...bad } as never), planAttempts: 1 });
    assert.ok(await f.until(() => (a.c.status().planning?.lastError ?? "") !== "", 5000), "the run failed");
    assert.match(a.c.status().planning!.lastError, says);
    assert.equal(a.c.status().plan?.generation ?? 0, 0, "nothing published");
  }
});
