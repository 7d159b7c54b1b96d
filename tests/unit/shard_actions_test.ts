// The operator's reach into a sharded job (issue 39, item 4;
// docs/OPERATIONS.md, "Sharding a job"), on MemoryStores: opening a job's
// shards from its first store (a shard named directly is that shard; a
// missing shard and shards that disagree on their count are refused,
// naming the shard and the fix); the job's actions on every shard and a
// split's on the shard that holds it; waiting for the one outcome (a stall
// names its shards); `jobs` folding the shards into one line with their
// counts summed, and `delete`'s refusals.
import assert from "node:assert/strict";
import { MemoryStore, SplitleaseError, type Store } from "../../mod.ts";
import {
  cancelSplitIn,
  deleteRefusal,
  drainMemberIn,
  findSplitShard,
  foldJobListings,
  type JobShards,
  openJobShards,
  pauseShards,
  readJobOverview,
  readJobSplits,
  requeueQuarantinedIn,
  requeueSplitIn,
  rerunShards,
  resumeShards,
  shardJob,
  shardOf,
  summarizeShards,
  waitForOutcome,
} from "../../admin.ts";
import { readJobListing } from "../../src/store/job_catalog.ts";
import { failRecord, seedRecord } from "../../src/records/transitions.ts";
import type { SplitRecord } from "../../admin.ts";

const JOB = "bk";
const K = 3;
const IDS = Array.from({ length: 12 }, (_, i) => `p${i}`);
const w1 = { instance: "w1", session: "s1" };

/** A job of K shards in K MemoryStores: its job, plan, leader and member records, and IDS routed to their shards. */
async function shardedJob(opts: { outcome?: (i: number) => unknown; quarantine?: string[] } = {}): Promise<MemoryStore[]> {
  const stores = Array.from({ length: K }, () => new MemoryStore());
  for (const [i, s] of stores.entries()) {
    const mine = IDS.filter((id) => shardOf(id, K) === i);
    await s.create("job", JSON.stringify({ v: 3, fingerprint: "fp", createdAt: 1000 + i, shard: { index: i, count: K } }));
    const outcome = opts.outcome?.(i);
    await s.create("plan", JSON.stringify({ v: 2, term: 1, finality: "final", generation: 1, planned: mine.length, ...(outcome ? { outcome } : {}) }));
    await s.create("leader", JSON.stringify({ v: 2, instance: "w1", session: "s1", term: 1, beat: 3 }));
    await s.create("member.w1", JSON.stringify({ v: 2, session: "s1", maxInFlight: 4, runtime: "deno", version: "0.2.0", beat: 3, at: Date.now() }));
    for (const id of mine) {
      let r: SplitRecord = { ...seedRecord(1, { id }), status: outcome ? "completed" : "runnable" };
      if (opts.quarantine?.includes(id)) {
        r = seedRecord(1, { id });
        for (let n = 0; n < 3; n++) r = failRecord({ ...r, owner: w1 }, `poison ${id}`, 3, "w1", 1000 + n);
      }
      await s.create(`split.${id}`, JSON.stringify(r));
    }
  }
  return stores;
}

/** A connection to a store: closing it leaves the store open (as a second NATS connection to one bucket would). */
function connection(store: Store, closed: Store[]): Store {
  return new Proxy(store, {
    get(t, k) {
      if (k === "close") return () => Promise.resolve(void closed.push(store));
      const v = Reflect.get(t, k, t);
      return typeof v === "function" ? v.bind(t) : v;
    },
  });
}

/** Opens the job as the CLI does: its first store, the others by their shard job names (`closed`: what was closed again). */
function opener(stores: Store[], closed: Store[] = [], job = JOB): (name: string) => Promise<Store> {
  return (name) => {
    const i = [0, 1, 2].find((x) => shardJob(job, x) === name);
    if (i === undefined || !stores[i]) return Promise.reject(new SplitleaseError("INVALID_CONFIG", `job "${name}" has no bucket splitlease_${name}`));
    return Promise.resolve(connection(stores[i], closed));
  };
}

Deno.test("job shards: a job's first store opens its shards; a shard named directly is that shard; unsharded is one store", async () => {
  const stores = await shardedJob();
  const shards = await openJobShards(JOB, stores[0], opener(stores));
  assert.deepEqual(shards.jobs, ["bk", "bk--shard1", "bk--shard2"]);
  assert.equal(await shards.stores[2].get("split.p0").then(Boolean), shardOf("p0", K) === 2);
  const direct = await openJobShards("bk--shard2", stores[2], () => Promise.reject(new Error("not asked")));
  assert.deepEqual([direct.stores.length, direct.jobs], [1, ["bk--shard2"]]);
  const plain = new MemoryStore();
  await plain.create("job", JSON.stringify({ v: 3, fingerprint: "fp", createdAt: 0 }));
  assert.equal((await openJobShards("plain", plain, () => Promise.reject(new Error("not asked")))).stores.length, 1);
  // A split is found in the shard that holds it, even where its id routes elsewhere (a residual lives in its parent's shard).
  assert.equal(await findSplitShard(shards, "p5"), shardOf("p5", K));
  const other = (shardOf("p5", K) + 1) % K;
  await stores[other].create("split.p5-r1", JSON.stringify(seedRecord(1, {})));
  assert.equal(await findSplitShard(shards, "p5-r1"), other);
  assert.equal(await findSplitShard(shards, "nope"), -1);
});

Deno.test("job shards: a missing shard, shards of another count and a record naming no shard are refused, naming the shard and the fix", async () => {
  const stores = await shardedJob();
  const closed: Store[] = [];
  const missing = await openJobShards(JOB, stores[0], opener([stores[0], stores[1]], closed)).then(() => undefined, (e) => e);
  assert.deepEqual(closed, [stores[1]], "the shard it opened is closed again");
  assert.ok(missing instanceof SplitleaseError, String(missing));
  assert.match(
    missing.message,
    /job "bk" has 3 shards \(its job record says so\), but shard 2's records \(job "bk--shard2"\) cannot be opened: job "bk--shard2" has no bucket .*start a worker of the job .*or delete the whole job \(splitlease delete --force bk\)/,
  );
  await stores[1].update("job", JSON.stringify({ v: 3, fingerprint: "fp", createdAt: 0, shard: { index: 1, count: 2 } }), (await stores[1].get("job"))!.revision);
  const disagree = await openJobShards(JOB, stores[0], opener(stores)).then(() => undefined, (e) => e);
  assert.ok(disagree instanceof SplitleaseError && disagree.code === "INVALID_CONFIG", String(disagree));
  assert.match(disagree.message, /the shards of job "bk" disagree on their count: shard 0's job record says 3 shards, shard 1's \(job "bk--shard1"\) says 2 shards\. Every member of a job must run with the same shards/);
  await stores[1].update("job", JSON.stringify({ v: 3, fingerprint: "fp", createdAt: 0 }), (await stores[1].get("job"))!.revision);
  assert.match(String(await openJobShards(JOB, stores[0], opener(stores)).catch((e) => e)), /shard 1's \(job "bk--shard1"\) says that it is not sharded/);
  const odd = new MemoryStore();
  await odd.create("job", JSON.stringify({ v: 3, fingerprint: "fp", createdAt: 0, shard: { index: 0, count: 99 } }));
  assert.match(String(await openJobShards("odd", odd, opener([])).catch((e) => e)), /names shard \{"index":0,"count":99\}, which is no shard \(a count from 1 to 64/);
  const misnamed = new MemoryStore();
  await misnamed.create("job", JSON.stringify({ v: 3, fingerprint: "fp", createdAt: 0, shard: { index: 2, count: 3 } }));
  assert.match(String(await openJobShards("elsewhere", misnamed, opener([])).catch((e) => e)), /say they are shard 2 of 3, whose job name ends in --shard2/);
});

Deno.test("shard actions: pause, resume, requeue and cancel act on every shard, or the one that holds the split", async () => {
  const quarantined = IDS.filter((id) => shardOf(id, K) === 1).slice(0, 2);
  const stores = await shardedJob({ quarantine: quarantined });
  const shards: JobShards = { job: JOB, stores, jobs: stores.map((_, i) => shardJob(JOB, i)) };
  const plan = async (i: number) => JSON.parse((await stores[i].get("plan"))!.value);
  const p = await pauseShards(shards, { by: "ops", reason: "db" });
  assert.equal(p.outcome, "paused");
  for (let i = 0; i < K; i++) assert.equal((await plan(i)).paused.reason, "db");
  assert.equal((await pauseShards(shards)).outcome, "alreadyPaused");
  assert.equal((await readJobOverview(shards)).plan!.result.state, "paused");
  const r = await resumeShards(shards);
  assert.equal(r.outcome, "resumed");
  for (let i = 0; i < K; i++) assert.equal((await plan(i)).paused, undefined);
  assert.equal((await resumeShards(shards)).outcome, "notPaused");

  // splits --state quarantined: across shards.
  const q = await readJobSplits(shards, { state: "quarantined" });
  assert.deepEqual(q.splits.map((s) => s.id), [...quarantined].sort());
  const one = await requeueSplitIn(shards, quarantined[0]);
  assert.deepEqual([one.outcome, one.shard], ["requeued", 1]);
  assert.equal(JSON.parse((await stores[1].get(`split.${quarantined[0]}`))!.value).status, "runnable");
  const all = await requeueQuarantinedIn(shards);
  assert.deepEqual([all.found, all.requeued], [1, 1]);
  const runnable = IDS.find((id) => shardOf(id, K) === 2)!;
  const c = await cancelSplitIn(shards, runnable);
  assert.deepEqual([c.outcome, c.shard], ["cancelled", 2]);
  assert.match((await cancelSplitIn(shards, "nope")).message, /No split "nope" in any of the job's 3 shards/);
  await assert.rejects(cancelSplitIn(shards, "a.b"), /split id/);
  const d = await drainMemberIn(shards, "w1");
  assert.equal(d.outcome, "draining");
  for (const s of stores) assert.equal(JSON.parse((await s.get("member.w1"))!.value).draining, true, "drained in every shard");
  assert.equal((await drainMemberIn(shards, "w1")).outcome, "alreadyDraining");
  assert.equal((await drainMemberIn(shards, "w9")).outcome, "notFound");
  // A shard that cannot act is the job's answer, naming it.
  await stores[2].delete("plan");
  const partial = await pauseShards(shards);
  assert.equal(partial.outcome, "notFound");
  assert.match(partial.message, /^shard 2 \(job "bk--shard2"\): The job has no plan record yet .*\(2 of the 3 shards answered; the action is safe to repeat\)/);
});

Deno.test("shard actions: a rerun waits for every shard to finish, then reruns them all", async () => {
  const stores = await shardedJob({ outcome: (i) => (i === 2 ? undefined : { kind: "allComplete", completed: 4 }) });
  const shards: JobShards = { job: JOB, stores, jobs: stores.map((_, i) => shardJob(JOB, i)) };
  const early = await rerunShards(shards);
  assert.equal(early.outcome, "running");
  assert.match(early.message, /shard 2 \(job "bk--shard2"\) has no outcome yet/);
  assert.equal(JSON.parse((await stores[0].get("plan"))!.value).run, undefined, "no shard was rerun");
  const e = await stores[2].get("plan");
  await stores[2].update("plan", JSON.stringify({ ...JSON.parse(e!.value), outcome: { kind: "allComplete", completed: 4 } }), e!.revision);
  for (const id of IDS.filter((x) => shardOf(x, K) === 2)) {
    const s = await stores[2].get(`split.${id}`);
    await stores[2].update(`split.${id}`, JSON.stringify({ ...JSON.parse(s!.value), status: "completed" }), s!.revision);
  }
  const r = await rerunShards(shards);
  assert.equal(r.outcome, "rerun", r.message);
  if (r.outcome === "rerun") assert.deepEqual([r.run, r.previous.planned, r.previous.outcome], [2, 12, { kind: "allComplete", completed: 12 }]);
  for (const s of stores) assert.equal(JSON.parse((await s.get("plan"))!.value).run, 2);
});

Deno.test("shard wait: one outcome once every shard has one; a stall names its shards; a deleted shard ends the wait", async () => {
  const stall = { kind: "stalled", completed: 3, quarantined: 1 };
  const stores = await shardedJob({ outcome: (i) => (i === 1 ? stall : { kind: "allComplete", completed: 4 }) });
  const shards: JobShards = { job: JOB, stores, jobs: stores.map((_, i) => shardJob(JOB, i)) };
  const w = await waitForOutcome(shards, { job: JOB, timeoutMs: 2000, pollMs: 10 });
  assert.equal(w.kind, "outcome");
  if (w.kind !== "outcome") return;
  assert.deepEqual(w.outcome, { kind: "stalled", completed: 11, quarantined: 1 });
  assert.equal(w.result.state, "stalled");
  assert.deepEqual(w.shards!.filter((s) => s.outcome.kind === "stalled").map((s) => [s.index, s.job]), [[1, "bk--shard1"]]);
  // One shard still running: no outcome yet.
  const running = await shardedJob({ outcome: (i) => (i === 0 ? undefined : { kind: "allComplete", completed: 4 }) });
  const open: JobShards = { job: JOB, stores: running, jobs: shards.jobs };
  const views: number[] = [];
  const t = await waitForOutcome(open, { timeoutMs: 100, pollMs: 10, progressMs: 10, onProgress: (v) => views.push(v.counts.total) });
  assert.deepEqual([t.kind, t.result?.state], ["timeout", "running"]);
  assert.equal(views[0], 12, "progress is the job's view, every shard");
  // A shard's records gone while waiting: deleted.
  const del = waitForOutcome(open, { timeoutMs: 5000, pollMs: 10 });
  setTimeout(() => void Promise.all(["job", "plan"].map((k) => running[2].delete(k))), 50);
  assert.equal((await del).kind, "deleted");
  await assert.rejects(waitForOutcome(shards, { job: "other" }), /waitForOutcome: job "other" but the shards are job "bk"/);
});

Deno.test("shard listings: jobs lists a sharded job once, its counts summed; a shard missing or of another count is said; delete refuses what it must", async () => {
  const now = Date.now();
  const stores = await shardedJob({ outcome: (i) => ({ kind: "allComplete", completed: 4 + i }) });
  const listings = await Promise.all(stores.map((s, i) => readJobListing(shardJob(JOB, i), s)));
  const other = new MemoryStore();
  await other.create("job", JSON.stringify({ v: 3, fingerprint: "fp", createdAt: 0 }));
  const jobs = foldJobListings([listings[2], await readJobListing("zz", other), listings[0], listings[1]], now);
  assert.deepEqual(jobs.map((j) => [j.job, j.shards ?? 1, j.state]), [["bk", 3, "complete"], ["zz", 1, "new"]]);
  const bk = jobs[0];
  assert.deepEqual([bk.counts?.completed, bk.outcome, bk.members, bk.liveMembers, bk.createdAt], [15, "allComplete", 1, ["w1"], 1000]);
  assert.equal(deleteRefusal({ ...bk, liveMembers: [] }, false), null, "a complete sharded job is deleted without --force");
  // Shard 2 missing: one line still, its problem said; never complete; delete needs --force.
  const gone = summarizeShards(JOB, [listings[0], listings[1], undefined], now);
  assert.equal(gone.state, "unfinished");
  assert.match(gone.problem!, /shard 2 \(bk--shard2\) of its 3 has no records: start a worker of the job .*or delete the job \(splitlease delete --force bk\)/);
  assert.match(deleteRefusal({ ...gone, liveMembers: [] }, false)!, /--force deletes the shards it has/);
  assert.equal(deleteRefusal({ ...gone, liveMembers: [] }, true), null);
  const folded = foldJobListings([listings[0], listings[1]], now);
  assert.deepEqual(folded.map((j) => [j.job, j.shards]), [["bk", 3]]);
  assert.ok(folded[0].problem);
  // A shard listed without its job (its first shard deleted): on its own, saying whose it is; delete asks for --force.
  const orphan = foldJobListings([listings[1]], now);
  assert.deepEqual(orphan.map((j) => [j.job, j.shard]), [["bk--shard1", { index: 1, count: 3 }]]);
  assert.match(deleteRefusal({ ...orphan[0], liveMembers: [] }, false)!, /is shard 1 of a job of 3 shards: delete the whole job by its name/);
  // A shard of another count.
  await stores[2].update("job", JSON.stringify({ v: 3, fingerprint: "fp", createdAt: 0, shard: { index: 2, count: 4 } }), (await stores[2].get("job"))!.revision);
  const mixed = summarizeShards(JOB, [listings[0], listings[1], await readJobListing("bk--shard2", stores[2])], now);
  assert.match(mixed.problem!, /shard 2 \(bk--shard2\) says 4 shards, not shard 2 of 3: every member of a job must run with the same shards/);
});
