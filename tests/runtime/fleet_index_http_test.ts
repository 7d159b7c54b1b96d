// GET /fleet of a large job (issue 39, item 3): answered from a live index
// of the job's records, the same view a full read gives, after a first
// answer from the leader's beat while the index reads its snapshot; an
// action's write reaches the index through its watch; a small job is read
// in full as before.
import assert from "node:assert/strict";
import { createApp } from "../../host.ts";
import { MemoryStore } from "../../mod.ts";
import { seedRecord } from "../../src/records/transitions.ts";
import type { SplitRecord } from "../../admin.ts";
import { ScriptedCoordinator } from "../helpers/scripted_coordinator.ts";

const TOKEN = "op-s3cret";

async function seed(store: MemoryStore, n: number): Promise<void> {
  await store.create("job", JSON.stringify({ v: 3, fingerprint: "fp", createdAt: 0 }));
  // Pages 0 and 1 hold the plan; the splits of page 1 were not dealt yet.
  const page = (from: number) => ({ v: 2, term: 2, splits: Array.from({ length: n / 2 }, (_, i) => ({ id: `s${String(from + i).padStart(3, "0")}`, descriptor: { n: from + i } })) });
  await store.create("page.00000000", JSON.stringify(page(0)));
  await store.create("page.00000001", JSON.stringify(page(n / 2)));
  await store.create("plan", JSON.stringify({ v: 2, term: 2, finality: "final", generation: 1, planned: n, pages: 2 }));
  const counts = { members: 1, runnable: n - 6, unowned: n - 8, completed: 4, quarantined: 2, cancelled: 0 };
  await store.create("leader", JSON.stringify({ v: 2, instance: "w1", session: "s1", term: 2, beat: 9, counts }));
  await store.create("member.w1", JSON.stringify({ v: 2, session: "s1", maxInFlight: 4, runtime: "deno", version: "0.2.0", beat: 9, held: 2 }));
  for (let i = 0; i < n / 2; i++) {
    let r: SplitRecord = seedRecord(1, { n: i });
    if (i < 2) r = { ...r, owner: { instance: "w1", session: "s1" }, epoch: 1 };
    else if (i < 6) r = { ...r, status: "completed", owner: null };
    else if (i < 8) r = { ...r, status: "quarantined", attempts: 3, lastFailure: "bad line" };
    await store.create(`split.s${String(i).padStart(3, "0")}`, JSON.stringify(r));
  }
}

const without = (body: Record<string, unknown>) => {
  const { at: _, index: __, ...rest } = body;
  return rest;
};

Deno.test("fleet index http: a large job's /fleet comes from the live index, the same view a full read gives, the leader's beat meanwhile", async () => {
  await using store = new MemoryStore();
  await seed(store, 40);
  const coordinator = new ScriptedCoordinator("w1");
  const indexed = createApp({ coordinator, store, drainToken: TOKEN, fleetIndex: { above: 5 } });
  const full = createApp({ coordinator, store, drainToken: TOKEN });
  const get = async (app: typeof full, path: string) => await (await app.request(path)).json();

  // The first answer may come while the index reads its snapshot: the beat's counts, no split listed.
  const first = await get(indexed, "/fleet?state=quarantined");
  assert.ok(first.index.state === "building" || first.index.state === "ready", JSON.stringify(first.index));
  if (first.index.state === "building") {
    assert.equal(first.basis, "beat");
    assert.deepEqual(first.splits, []);
    assert.deepEqual([first.counts.completed, first.counts.quarantined, first.counts.owned], [4, 2, 2]);
    assert.equal(first.page.matched, 2, "matching splits by the counts");
  }
  let v = first;
  for (let i = 0; i < 100 && v.index.state !== "ready"; i++) {
    await new Promise((r) => setTimeout(r, 20));
    v = await get(indexed, "/fleet?state=quarantined");
  }
  assert.equal(v.index.state, "ready");
  assert.equal(v.index.splits, 10, "the size the serving member knows (ScriptedCoordinator's plan)");
  for (const q of ["state=quarantined", "", "state=unclaimed&limit=5&after=s015", "state=runnable&owner=w1", "match=n%22%3A3", "limit=7"]) {
    const a = await get(indexed, `/fleet?${q}`), b = await get(full, `/fleet?${q}`);
    assert.equal(a.basis, "records");
    assert.deepEqual(without(a), without(b), q);
  }
  // An operator's action: the index learns it through its watch.
  const res = await indexed.request("/splits/s006/requeue", { method: "POST", headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(res.status, 200);
  let after = await get(indexed, "/fleet?state=quarantined");
  for (let i = 0; i < 100 && after.page.matched !== 1; i++) {
    await new Promise((r) => setTimeout(r, 20));
    after = await get(indexed, "/fleet?state=quarantined");
  }
  assert.deepEqual(after.splits.map((s: { id: string }) => s.id), ["s007"]);
});

Deno.test("fleet index http: a small job is read in full each time, with no index (its output as before)", async () => {
  await using store = new MemoryStore();
  await seed(store, 40);
  const app = createApp({ coordinator: new ScriptedCoordinator("w1"), store });
  const body = await (await app.request("/fleet")).json();
  assert.equal(body.index, undefined);
  assert.equal(body.basis, "records");
  assert.equal(body.counts.total, 40);
});
