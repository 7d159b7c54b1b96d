/**
 * serve of a sharded job (issue 39, item 4; docs/OPERATIONS.md, "Sharding a
 * job"): `shards: 3` with a storeFactory called once per shard (its index
 * and its records' job name) joins every shard through one
 * ShardedCoordinator; the worker runs each split in its shard; `/status`
 * has a line per shard, `/fleet` is one view of the job (every split, its
 * counts summed, one member line), `/fleet/splits/:id` finds a split in its
 * shard, `/metrics` exports each led shard's job-wide gauges labelled
 * `shard`, `POST /job/pause` and `/job/resume` act on every shard, and
 * serve closes every store it opened. Bad shard options are refused before
 * anything is opened, naming the fix. Runs serveWith on a fake host (no
 * sockets) over MemoryStores.
 */
import assert from "node:assert/strict";
import { MemoryStore, type Store, SplitleaseError } from "../../mod.ts";
import { shardJob, shardOf } from "../../admin.ts";
import { createApp, type ServeHost, serveWith, type ServeOptions } from "../../host.ts";
import { withTimeout } from "../helpers/deadline.ts";
import { rangeSource } from "./fixtures/app.ts";

const WAIT_MS = 20_000;
const TOKEN = "op-s3cret";
const auth = { authorization: `Bearer ${TOKEN}` };

function fakeHost(): { host: ServeHost; exits: number[] } {
  const exits: number[] = [];
  const host: ServeHost = {
    runtime: "test",
    listen: () => Promise.resolve({ port: 1, close: () => Promise.resolve() }),
    onSignal: () => () => {},
    exit: (code) => exits.push(code),
  };
  return { host, exits };
}

async function until(what: string, cond: () => boolean | Promise<boolean>, ms = WAIT_MS): Promise<void> {
  for (const end = Date.now() + ms; !(await cond());) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A MemoryStore that remembers whether it was closed (and stays readable, for the test's checks after). */
class ClosingStore extends MemoryStore {
  closed = false;
  override close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }
}

const base = (extra: Partial<ServeOptions<unknown>>): ServeOptions<unknown> => ({
  source: rangeSource(12, 1, 1) as ServeOptions<unknown>["source"],
  job: "sharded",
  instance: "pod-0",
  port: 0,
  leaseMs: 1000,
  opTimeoutMs: 200,
  drainDeadlineMs: 500,
  shutdownMarginMs: 500,
  maxInFlight: 4,
  drainToken: TOKEN,
  logger: () => {},
  exit: false,
  ...extra,
});

Deno.test("serve shards: one member of 3 shards, every split run in its shard; /status, /fleet, /metrics and the job's actions span the shards", async () => {
  const stores: ClosingStore[] = [];
  const asked: { index: number; job: string }[] = [];
  let hold = true;
  const source = rangeSource(12, 1, 1, { beforeComplete: async () => {
    while (hold) await new Promise((r) => setTimeout(r, 5));
    return true;
  } });
  const { host } = fakeHost();
  const service = await withTimeout(
    serveWith(base({
      source: source as ServeOptions<unknown>["source"],
      shards: 3,
      storeFactory: (shard) => {
        asked.push(shard);
        const s = new ClosingStore();
        stores[shard.index] = s;
        return s;
      },
    }), host),
    WAIT_MS,
    "serve to start",
  );
  try {
    assert.deepEqual(asked.sort((a, b) => a.index - b.index), [0, 1, 2].map((index) => ({ index, job: shardJob("sharded", index) })));
    const get = async (path: string) => {
      const res = await service.app.request(path);
      return { status: res.status, body: await res.json() };
    };
    await until("every shard planned and its lanes filled", async () => {
      const st = (await get("/status")).body;
      return st.shards?.every((s: { counts: { planned: number } }) => s.counts.planned > 0) && st.held.length === 4;
    });
    for (const probe of ["/healthz", "/readyz"]) assert.equal((await service.app.request(probe)).status, 200, probe);
    const status = (await get("/status")).body;
    assert.equal(status.shards.length, 3);
    assert.deepEqual(status.shards.map((s: { job: string }) => s.job), ["sharded", "sharded--shard1", "sharded--shard2"]);
    assert.equal(status.counts.planned, 12, "the job's splits: every shard's summed");

    // /fleet: one view of the job, every split once, in id order, across the shards.
    const fleet = (await get("/fleet?limit=100")).body;
    assert.equal(fleet.job, "sharded");
    assert.equal(fleet.counts.total, 12);
    assert.deepEqual(fleet.splits.map((s: { id: string }) => s.id), Array.from({ length: 12 }, (_, i) => `r${i}`).sort());
    // One member line, its load the runnable splits naming it in every shard (the job's owned: it is the only member).
    assert.deepEqual(fleet.members.map((m: { instance: string; owned: number }) => [m.instance, m.owned]), [["pod-0", fleet.counts.owned]]);
    assert.ok(fleet.counts.owned >= 4, `it holds its 4 lanes' splits: ${fleet.counts.owned}`);
    assert.equal(fleet.counts.owned, fleet.shards.reduce((n: number, s: { counts: { owned: number } }) => n + s.counts.owned, 0));
    assert.equal(fleet.shards.length, 3);
    assert.equal(fleet.shards.reduce((n: number, s: { counts: { total: number } }) => n + s.counts.total, 0), 12);
    // Paging across shards: two pages of 7 and 5, the cursor valid for every shard.
    const p1 = (await get("/fleet?limit=7")).body;
    const p2 = (await get(`/fleet?limit=7&after=${p1.page.next}`)).body;
    assert.deepEqual([p1.splits.length, p2.splits.length, p2.page.next], [7, 5, null]);
    assert.deepEqual([...p1.splits, ...p2.splits].map((s: { id: string }) => s.id), fleet.splits.map((s: { id: string }) => s.id));
    // One split in detail, from the shard that holds it.
    const one = (await get("/fleet/splits/r7")).body;
    assert.deepEqual([one.split.id, one.shard], ["r7", shardOf("r7", 3)]);
    assert.equal((await get("/fleet/splits/nope")).status, 404);

    // /metrics: each shard this member leads exports that shard's gauges, labelled shard.
    const metrics = await (await service.app.request("/metrics")).text();
    const planned = [...metrics.matchAll(/^etl_coordination_splits_planned\{[^}]*shard="(\d)"[^}]*\} (\d+)$/gm)].map((m) => [m[1], Number(m[2])]);
    assert.equal(planned.length, 3, `the only member leads every shard: ${metrics.split("\n").filter((l) => l.includes("planned")).join("\n")}`);
    assert.equal(planned.reduce((n, [, v]) => n + (v as number), 0), 12);

    // An app over one shard's store for a sharded coordinator is refused: it would show a third of the job.
    assert.throws(() => createApp({ coordinator: service.coordinator, store: stores[0] }), /the coordinator's job has 3 shards: give stores, one per shard/);
    assert.throws(() => createApp({ coordinator: service.coordinator, stores: stores.slice(0, 2) }), /stores has 2 store\(s\), the coordinator's job 3 shards/);

    // The job's actions: pause and resume every shard.
    const post = async (path: string) => {
      const res = await service.app.request(path, { method: "POST", headers: auth, body: JSON.stringify({ reason: "maintenance" }) });
      return { status: res.status, body: await res.json() };
    };
    const paused = await post("/job/pause");
    assert.equal(paused.status, 200, JSON.stringify(paused.body));
    assert.equal(paused.body.outcome, "paused");
    assert.deepEqual(paused.body.shards.map((s: { outcome: string }) => s.outcome), ["paused", "paused", "paused"]);
    for (const s of stores) assert.equal(JSON.parse((await s.get("plan"))!.value).paused.reason, "maintenance", "every shard's plan record");
    await until("the member hands back its lanes", async () => (await get("/status")).body.held.length === 0);
    assert.equal((await get("/fleet")).body.plan.result.state, "paused");
    const resumed = await post("/job/resume");
    assert.equal(resumed.body.outcome, "resumed");
    for (const s of stores) assert.equal(JSON.parse((await s.get("plan"))!.value).paused, undefined);

    hold = false;
    const { exitCode, outcome } = await withTimeout(service.done, WAIT_MS, "the job to complete");
    assert.deepEqual([exitCode, outcome.kind], [0, "drained"]);
    // Each split's records in its shard's store only.
    for (let i = 0; i < 12; i++) {
      const id = `r${i}`;
      for (const [k, s] of stores.entries()) {
        assert.equal((await s.get(`split.${id}`)) !== undefined, k === shardOf(id, 3), `${id} in shard ${shardOf(id, 3)} only`);
      }
    }
    for (const s of stores) assert.equal(JSON.parse((await s.get("plan"))!.value).outcome.kind, "allComplete");
    assert.ok(stores.every((s) => s.closed), "serve closes every store it opened");
  } finally {
    await service.shutdown().catch(() => {});
  }
});

Deno.test("serve shards: stores given in shard order are used and left open; an unsharded job's storeFactory is called once, with shard 0", async () => {
  const stores = [new ClosingStore(), new ClosingStore()];
  const { host } = fakeHost();
  const service = await withTimeout(serveWith(base({ shards: 2, stores }), host), WAIT_MS, "serve to start");
  const { exitCode } = await withTimeout(service.done, WAIT_MS, "the job to complete");
  assert.equal(exitCode, 0);
  assert.ok(stores.every((s) => !s.closed), "the caller's stores stay open");
  for (const [i, s] of stores.entries()) {
    assert.deepEqual(JSON.parse((await s.get("job"))!.value).shard, { index: i, count: 2 }, "each store is its shard");
  }
  const asked: unknown[] = [];
  const one = await withTimeout(
    serveWith(base({ job: "plain", storeFactory: (shard) => (asked.push(shard), new MemoryStore()) }), fakeHost().host),
    WAIT_MS,
    "serve to start",
  );
  assert.equal((await withTimeout(one.done, WAIT_MS, "the job to complete")).exitCode, 0);
  assert.deepEqual(asked, [{ index: 0, job: "plain" }]);
});

Deno.test("serve shards: bad shard options are refused before any store is opened, each naming the fix", async () => {
  const opened: number[] = [];
  const factory = (shard: { index: number }): Store => (opened.push(shard.index), new MemoryStore());
  for (const [extra, message] of [
    [{ shards: 0, storeFactory: factory }, /shards must be an integer from 1 to 64 \(got 0\)/],
    [{ shards: 65, storeFactory: factory }, /shards must be an integer from 1 to 64 \(got 65\)/],
    [{ shards: 2.5, storeFactory: factory }, /shards must be an integer from 1 to 64 \(got 2\.5\)/],
    [{ shards: 2, store: new MemoryStore() }, /a job of 2 shards needs a store per shard .*give storeFactory, called with each shard's \{ index, job \}, or stores/],
    [{ shards: 3, stores: [new MemoryStore(), new MemoryStore()] }, /stores has 2 store\(s\) for a job of 3 shard\(s\): give one store per shard/],
    [{ stores: [new MemoryStore(), new MemoryStore()] }, /stores has 2 store\(s\) for a job of 1 shard\(s\) \(shards is not set: give shards/],
    [{ shards: 2, storeFactory: factory, stores: [new MemoryStore(), new MemoryStore()] }, /give one of store, storeFactory and stores, not storeFactory and stores/],
    [{ shards: 2, storeFactory: factory, join: () => Promise.reject(new Error("x")) }, /a sharded job \(shards above 1\) joins through joinSharded/],
  ] as [Partial<ServeOptions<unknown>>, RegExp][]) {
    const { host, exits } = fakeHost();
    const e = await serveWith(base(extra), host).then(() => undefined, (e) => e);
    assert.ok(e instanceof SplitleaseError && e.code === "INVALID_CONFIG", `${JSON.stringify(Object.keys(extra))}: ${e}`);
    assert.match(e.message, message);
    assert.deepEqual(exits, []);
  }
  assert.deepEqual(opened, [], "nothing was opened");
  // A shard whose store cannot be opened: the others are closed again, the shard named.
  const made: ClosingStore[] = [];
  const e = await serveWith(base({
    shards: 3,
    storeFactory: ({ index }) => {
      if (index === 1) throw new Error("connection refused");
      const s = new ClosingStore();
      made.push(s);
      return s;
    },
  }), fakeHost().host).then(() => undefined, (e) => e);
  assert.match(String(e), /the store of shard 1 \(job "sharded--shard1"\) could not be opened: connection refused/);
  assert.equal(made.length, 2);
  assert.ok(made.every((s) => s.closed), "the stores opened for the other shards are closed");
});
