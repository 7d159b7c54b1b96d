import assert from "node:assert/strict";
import { Fleet, finalPlanner, splits } from "./fleet.ts";

Deno.test("1. two workers split 8 splits 4/4, hold them stably, complete, both see allComplete", async () => {
  await using f = new Fleet();
  const plan = finalPlanner(splits(8));
  const [a, b] = await f.joinAll([{ instance: "a", planner: plan }, { instance: "b", planner: plan }]);
  assert.ok(await f.until(() => a.held.length + b.held.length === 8, 2000));
  assert.equal(a.held.length, 4);
  assert.equal(b.held.length, 4);
  assert.equal(new Set([...a.held, ...b.held]).size, 8);
  const before = [a.held.join(), b.held.join()];
  await f.advance(2 * 1000);
  assert.deepEqual([a.held.join(), b.held.join()], before);
  assert.equal(a.lost().length + b.lost().length, 0);
  await a.completeAll();
  await b.completeAll();
  assert.ok(await f.until(() => a.has("allComplete") && b.has("allComplete"), 1000));
});

import { ManualClock } from "../../src/coordinator/clock.ts";
import { SplitCoordinator } from "../../src/coordinator/coordinator.ts";
import { SplitleaseError, FencedError } from "../../src/errors.ts";
import { decodeRecord, SplitRecordSchema, type SplitRecord } from "../../src/records.ts";
import { keys } from "../../src/store/keys.ts";
import { MemoryStore } from "../../src/store/memory_store.ts";
import type { Store } from "../../src/store/store.ts";
import { FaultyStore } from "./faulty_store.ts";
import { FAST, Member } from "./fleet.ts";

async function splitRecord(store: Store, id: string): Promise<SplitRecord> {
  const e = await store.get(keys.split(id));
  assert.ok(e, `split ${id} exists`);
  return decodeRecord(e.key, e.value, SplitRecordSchema);
}

async function commitAll(m: Member, watermark: number, state?: unknown): Promise<void> {
  for (const h of m.c.status().held) {
    await m.c.commit(h.id, h.epoch, state === undefined ? { watermark } : { watermark, state: state as never });
  }
}

Deno.test("2. crash after commit: peer takes over after the lease, resumes from the committed progress", async () => {
  await using f = new Fleet();
  const plan = finalPlanner(splits(8));
  const [a, b] = await f.joinAll([{ instance: "a", planner: plan }, { instance: "b", planner: plan }]);
  assert.ok(await f.until(() => a.held.length === 4 && b.held.length === 4, 2000));
  const aSplits = a.c.status().held.map((h) => ({ id: h.id, epoch: h.epoch }));
  await commitAll(a, 5, { offset: 42 });
  const crashAt = f.clock.now();
  await a.c.abandon();
  // Not before the lease allows: A's last beat was at most leaseMs/3 before the crash.
  await f.advance(FAST.leaseMs - FAST.leaseMs / 3 - 20);
  assert.equal(b.held.length, 4, "no takeover before the lease can have expired");
  assert.ok(await f.until(() => b.held.length === 8, 1000));
  assert.ok(f.clock.now() - crashAt <= FAST.leaseMs + 200, `takeover within lease + 200 ms (${f.clock.now() - crashAt})`);
  for (const s of aSplits) {
    const g = b.gained().find((e) => e.split.id === s.id)!;
    assert.ok(g, `B gained ${s.id}`);
    assert.ok(g.epoch > s.epoch);
    assert.deepEqual(g.progress, { watermark: 5, state: { offset: 42 } });
    assert.equal((await splitRecord(f.store, s.id)).attempts, 1);
  }
});

Deno.test("3. graceful release: the peer holds the splits well within one lease", async () => {
  await using f = new Fleet();
  const plan = finalPlanner(splits(8));
  const [a, b] = await f.joinAll([{ instance: "a", planner: plan }, { instance: "b", planner: plan }]);
  assert.ok(await f.until(() => a.held.length === 4 && b.held.length === 4, 2000));
  const t0 = f.clock.now();
  await a.c.close();
  assert.ok(await f.until(() => b.held.length === 8, 100, 1));
  assert.ok(f.clock.now() - t0 < 50, `took ${f.clock.now() - t0} ms`);
  for (const id of b.held) assert.equal((await splitRecord(f.store, id)).attempts, 0);
});

Deno.test("4. same instance id restarted reclaims its splits at once with the committed watermark", async () => {
  await using f = new Fleet();
  const plan = finalPlanner(splits(8));
  const [a, b] = await f.joinAll([{ instance: "a", planner: plan }, { instance: "b", planner: plan }]);
  assert.ok(await f.until(() => a.held.length === 4 && b.held.length === 4, 2000));
  const mine = [...a.held].sort();
  await commitAll(a, 7);
  await a.c.abandon();
  const t0 = f.clock.now();
  const a2 = await f.join({ instance: "a", planner: plan });
  assert.ok(await f.until(() => a2.held.length === 4, 500, 1));
  assert.ok(f.clock.now() - t0 < FAST.leaseMs / 2, `reclaimed after ${f.clock.now() - t0} ms`);
  assert.deepEqual([...a2.held].sort(), mine);
  for (const g of a2.gained()) assert.deepEqual(g.progress, { watermark: 7 });
  assert.equal(b.held.length, 4);
  assert.equal((await splitRecord(f.store, mine[0])).attempts, 1);
});

Deno.test("5. two live processes with one instance id: fatal error naming the id", async () => {
  await using f = new Fleet();
  await f.join({ instance: "dup" });
  await assert.rejects(
    () => f.join({ instance: "dup" }),
    (e: unknown) => e instanceof SplitleaseError && e.code === "DUPLICATE_INSTANCE" && e.message.includes('"dup"'),
  );
});

Deno.test("6. fenced zombie: a paused owner's commit writes nothing and throws FencedError", async () => {
  const mem = new MemoryStore();
  const aStore = new FaultyStore(mem);
  await using f = new Fleet(mem);
  const plan = finalPlanner(splits(2));
  const aClock = new ManualClock();
  const a = new Member(await SplitCoordinator.join({ store: aStore, job: "job1", instance: "a", clock: aClock, planner: plan, ...FAST }));
  f.members.push(a);
  await aClock.advance(50);
  assert.equal(a.held.length, 2);
  const held = a.c.status().held[0];
  await a.c.commit(held.id, held.epoch, { watermark: 1 });
  // A's process stops: no timers, no events. B joins and takes over after the lease.
  aStore.pause();
  const b = await f.join({ instance: "b", planner: plan });
  assert.ok(await f.until(() => b.held.length === 2, 3000));
  const g = b.gained().find((e) => e.split.id === held.id)!;
  await b.c.commit(held.id, g.epoch, { watermark: 9 });
  // A resumes and commits before it has seen anything: the CAS fences it.
  await assert.rejects(
    () => a.c.commit(held.id, held.epoch, { watermark: 2 }),
    (e: unknown) => e instanceof FencedError && e.splitId === held.id,
  );
  assert.deepEqual(a.lost().map((l) => [l.splitId, l.reason]), [[held.id, "fenced"]]);
  const rec = await splitRecord(mem, held.id);
  assert.deepEqual(rec.progress, { watermark: 9 });
  assert.equal(rec.owner?.instance, "b");
  aStore.resume();
});

Deno.test("7. poison: quarantined after exactly maxAttempts; stalled(1,1) on every worker, never allComplete", async () => {
  await using f = new Fleet();
  const plan = finalPlanner([{ id: "good", descriptor: null }, { id: "poison", descriptor: null }]);
  const ws = await f.joinAll(["a", "b", "c"].map((instance) => ({ instance, planner: plan, maxAttempts: 3 })));
  let fails = 0;
  const worked = await f.until(() => {
    for (const w of ws) {
      for (const h of w.c.status().held) {
        if (h.id === "poison") {
          fails++;
          void w.c.fail(h.id, h.epoch, "boom");
        } else void w.c.commit(h.id, h.epoch, { watermark: 1 }, { final: true });
      }
    }
    return ws.every((w) => w.has("stalled"));
  }, 5000);
  assert.ok(worked);
  assert.equal(fails, 3);
  const q = ws.flatMap((w) => w.events.filter((e) => e.type === "quarantined"));
  assert.deepEqual(q, [{ type: "quarantined", splitId: "poison", attempts: 3 }]);
  for (const w of ws) {
    assert.deepEqual(w.events.find((e) => e.type === "stalled"), { type: "stalled", completed: 1, quarantined: 1 });
    assert.ok(!w.has("allComplete"));
  }
  assert.equal((await splitRecord(f.store, "poison")).status, "quarantined");
  assert.deepEqual(ws[0].c.status().quarantined, ["poison"]);
});

Deno.test("8. a standby sees allComplete; a late joiner sees it from its snapshot without claiming", async () => {
  await using f = new Fleet();
  const plan = finalPlanner(splits(2));
  const ws = await f.joinAll(["a", "b", "c"].map((instance) => ({ instance, planner: plan })));
  assert.ok(await f.until(() => ws.reduce((n, w) => n + w.held.length, 0) === 2, 2000));
  const standby = ws.filter((w) => w.held.length === 0);
  assert.equal(standby.length, 1);
  for (const w of ws) await w.completeAll();
  assert.ok(await f.until(() => ws.every((w) => w.has("allComplete")), 1000));
  assert.equal(standby[0].gained().length, 0);
  const late = await f.join({ instance: "late", planner: plan });
  assert.ok(await f.until(() => late.has("allComplete"), 500));
  assert.equal(late.gained().length, 0);
});

Deno.test("9. leader dies after seeding, before publish: next leader re-plans idempotently; the old publish never lands", async () => {
  const mem = new MemoryStore();
  const aStore = new FaultyStore(mem);
  await using f = new Fleet(mem);
  let runs = 0;
  const plan = () => {
    runs++;
    return Promise.resolve({ splits: splits(6), finality: "final" as const });
  };
  // Park A's publish (a plan update with generation 1).
  const parked = aStore.hold((op, key, value) => op === "update" && key === "plan" && value!.includes('"generation":1'));
  const a = new Member(await SplitCoordinator.join({ store: aStore, job: "job1", instance: "a", clock: f.clock, planner: plan, ...FAST, maxInFlight: 1 }));
  f.members.push(a);
  assert.ok(await f.until(() => parked.count() === 1, 1000, 1));
  assert.equal((await mem.list("split.")).length, 6);
  await a.c.abandon();
  const b = await f.join({ instance: "b", planner: plan });
  assert.ok(await f.until(() => b.c.status().plan?.generation === 1, 3000));
  assert.equal(runs, 2);
  assert.equal((await mem.list("split.")).length, 6, "no duplicate splits");
  const published = (await mem.get("plan"))!;
  parked.release();
  await f.advance(10);
  assert.equal((await mem.get("plan"))!.revision, published.revision, "the deposed leader's publish did not land");
  assert.ok(await f.until(() => {
    for (const h of b.c.status().held) void b.c.commit(h.id, h.epoch, {}, { final: true });
    return b.has("allComplete");
  }, 5000));
});

Deno.test("10. open plan: later replans add splits; completion only once the plan turns final", async () => {
  await using f = new Fleet();
  let gen = 0;
  const plan = () => {
    gen++;
    const n = gen === 1 ? 2 : gen === 2 ? 4 : 5;
    return Promise.resolve({ splits: splits(n), finality: gen >= 3 ? "final" as const : "open" as const, cursor: gen });
  };
  const [a] = await f.joinAll([{ instance: "a", planner: plan }]);
  const seen = new Set<string>();
  const ok = await f.until(() => {
    for (const h of a.c.status().held) {
      seen.add(h.id);
      void a.c.commit(h.id, h.epoch, { watermark: 1 }, { final: true });
    }
    if (gen < 3) assert.ok(!a.has("allComplete"), "no completion while the plan is open");
    return a.has("allComplete");
  }, 10_000);
  assert.ok(ok);
  assert.equal(seen.size, 5);
  assert.equal(a.c.status().plan?.finality, "final");
});

Deno.test("11. maxInFlight caps holdings; the rest wait and are claimed as lanes free up", async () => {
  await using f = new Fleet();
  const [a] = await f.joinAll([{ instance: "a", planner: finalPlanner(splits(5)), maxInFlight: 2 }]);
  let maxHeld = 0;
  const done = new Set<string>();
  assert.ok(await f.until(() => {
    const held = a.c.status().held;
    maxHeld = Math.max(maxHeld, held.length);
    if (held.length > 0) {
      done.add(held[0].id);
      void a.c.commit(held[0].id, held[0].epoch, {}, { final: true });
    }
    return a.has("allComplete");
  }, 5000));
  assert.equal(maxHeld, 2);
  assert.equal(done.size, 5);
});

Deno.test("12. store outage longer than a lease: workers self-fence, nothing unfenced is committed, the job completes", async () => {
  const mem = new MemoryStore();
  const faulty = new FaultyStore(mem);
  await using f = new Fleet(faulty);
  const plan = finalPlanner(splits(4));
  const [a, b] = await f.joinAll([{ instance: "a", planner: plan }, { instance: "b", planner: plan }]);
  assert.ok(await f.until(() => a.held.length === 2 && b.held.length === 2, 2000));
  await commitAll(a, 3);
  await commitAll(b, 3);
  const before = a.c.status().held.concat(b.c.status().held);
  faulty.down = true;
  assert.ok(await f.until(() => a.held.length === 0 && b.held.length === 0, FAST.leaseMs));
  for (const w of [a, b]) {
    assert.deepEqual(w.lost().map((l) => l.reason), ["starved", "starved"]);
    assert.equal(w.c.stats().selfFences, 1);
  }
  // A commit from a stale lane is refused locally: nothing written.
  await assert.rejects(() => a.c.commit(before[0].id, before[0].epoch, { watermark: 4 }), FencedError);
  await f.advance(3 * FAST.leaseMs);
  faulty.down = false;
  assert.ok(await f.until(() => a.held.length + b.held.length === 4, 3000));
  for (const w of [a, b]) for (const g of w.gained().slice(2)) assert.deepEqual(g.progress, { watermark: 3 });
  assert.ok(await f.until(() => {
    for (const w of [a, b]) for (const h of w.c.status().held) void w.c.commit(h.id, h.epoch, {}, { final: true });
    return a.has("allComplete") && b.has("allComplete");
  }, 3000));
});

Deno.test("13. corrupt and foreign records: clear errors naming the key; the fleet runs on the valid splits", async () => {
  const mem = new MemoryStore();
  await using f = new Fleet(mem);
  const logs: string[] = [];
  await mem.create("split.garbage", "{not json");
  await mem.create("split.shape", JSON.stringify({ v: 1, epoch: "x" }));
  await mem.create("spec.badspec", "[]");
  await mem.create("split.badspec", JSON.stringify({ v: 1, epoch: 0, status: "runnable", owner: null, attempts: 0, weight: 1, progress: null }));
  const [a] = await f.joinAll([{
    instance: "a",
    planner: finalPlanner(splits(3)),
    logger: (_l, msg, fields) => logs.push(`${msg} ${JSON.stringify(fields)}`),
  }]);
  const done = new Set<string>();
  await f.until(() => {
    for (const h of a.c.status().held) {
      done.add(h.id);
      void a.c.commit(h.id, h.epoch, {}, { final: true });
    }
    return done.size === 3 && a.c.status().counts.runnable === 0;
  }, 3000);
  assert.deepEqual([...done].sort(), ["s000", "s001", "s002"]);
  const st = a.c.status();
  assert.deepEqual(st.invalidRecords.map((r) => r.key).sort(), ["split.garbage", "split.shape"]);
  assert.ok(st.invalidRecords.every((r) => r.message.includes(r.key)));
  assert.deepEqual(st.quarantined, ["badspec"]);
  assert.ok(logs.some((l) => l.includes("spec.badspec")));
  assert.ok(!a.has("allComplete"), "unreadable records block completion");
  // A worker of another job is refused at join, naming both fingerprints.
  await assert.rejects(
    () => f.join({ instance: "x", fingerprint: "other" }),
    (e: unknown) => e instanceof SplitleaseError && e.code === "FINGERPRINT_MISMATCH" && /"job1".*"other"/.test(e.message),
  );
  // Invalid config names every broken rule.
  await assert.rejects(
    () => SplitCoordinator.join({ store: mem, job: "bad job", leaseMs: 100, maxInFlight: 0 }),
    (e: unknown) =>
      e instanceof SplitleaseError && e.code === "INVALID_CONFIG" && /job/.test(e.message) &&
      /leaseMs/.test(e.message) && /maxInFlight/.test(e.message),
  );
});
