// Coordinator scenarios (issue: coordinator core), defined once and run on
// every backend: MemoryStore on a manual clock, and real NATS in real time.
import assert from "node:assert/strict";
import { ManualClock } from "../../testing.ts";
import { SplitCoordinator, FencedError, SplitleaseError } from "../../mod.ts";
import type { Planner, Store } from "../../mod.ts";
import { type SplitRecord, keys } from "../../admin.ts";
import { decodeRecord, liveSplitRecord, pagedRecord, PageRecordSchema, ProgRecordSchema, SplitRecordSchema } from "../../src/records.ts";

import { FaultyStore } from "./faulty_store.ts";
import { type Backend, finalPlanner, type Fleet, Member, rawStore, splits } from "./fleet.ts";

export async function splitRecord(store: Store, id: string): Promise<SplitRecord> {
  const e = await store.get(keys.split(id));
  assert.ok(e, `split ${id} exists`);
  return decodeRecord(e.key, e.value, SplitRecordSchema);
}

/**
 * A split's record, or — for a planned split not dealt yet, which has no
 * record of its own — the record its claim would create (from its page of
 * the plan) at revision 0; `undefined` when no page lists it either.
 */
export async function plannedRecord(store: Store, id: string): Promise<{ record: SplitRecord; revision: number } | undefined> {
  const e = await store.get(keys.split(id));
  if (e) return { record: decodeRecord(e.key, e.value, SplitRecordSchema), revision: e.revision };
  for (const p of await store.list(keys.pagePrefix)) {
    const page = decodeRecord(p.key, p.value, PageRecordSchema);
    const entry = page.splits.find((x) => x.id === id);
    if (entry) return { record: pagedRecord(entry), revision: 0 };
  }
  return undefined;
}

/** A split's record as readers see it: with the live position its progress record holds (see `liveSplitRecord`). */
export async function liveRecord(store: Store, id: string): Promise<SplitRecord> {
  const rec = await splitRecord(store, id);
  const p = await store.get(keys.prog(id));
  return liveSplitRecord(rec, p ? decodeRecord(p.key, p.value, ProgRecordSchema) : undefined);
}

async function commitAll(m: Member, watermark: number, state?: unknown): Promise<void> {
  for (const h of m.c.status().held) {
    await m.c.commit(h.id, h.epoch, state === undefined ? { watermark } : { watermark, state: state as never });
  }
}

/**
 * A final planner that waits for `open()`: tests that assert the first
 * distribution exactly let every member see every other one first (on a
 * loaded real server a member's view can lag the others' registrations, and
 * a member alone in its view rightly claims up to its lanes).
 */
function gatedPlanner(list: ReturnType<typeof splits>): { planner: Planner; open: () => void } {
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  return { planner: () => gate.then(() => ({ splits: list, finality: "final" as const })), open };
}

/** Whether the leader (the only member that watches the others) sees all `n` members live. */
function allSee(ms: Member[], n: number): boolean {
  return ms.some((m) => m.c.isLeader && m.c.status().liveMembers.length === n);
}

/** Steps a worker's private manual clock while real I/O (if any) completes. */
async function drive(clock: ManualClock, cond: () => boolean, realtime: boolean, maxMs = 5000): Promise<boolean> {
  const end = performance.now() + maxMs;
  while (!cond()) {
    if (performance.now() > end) return false;
    await clock.advance(5);
    if (realtime) await new Promise((r) => setTimeout(r, 5));
  }
  return true;
}

/** Completes whatever each member holds until `done()`; returns whether it happened. */
function completeUntil(f: Fleet, ms: Member[], done: () => boolean, maxMs = 5000): Promise<boolean> {
  return f.until(() => {
    for (const m of ms) for (const h of m.c.status().held) void m.c.commit(h.id, h.epoch, {}, { final: true }).catch(() => {});
    return done();
  }, maxMs);
}

export function coordinatorScenarios(b: Backend): void {
  const t = (name: string, fn: () => Promise<void>) => Deno.test({ name: `${b.name}: ${name}`, fn, sanitizeOps: false, sanitizeResources: false });

  t("1. two workers split 8 splits 4/4, hold them stably, complete, both see allComplete", async () => {
    await using f = await b.fleet();
    const { planner: plan, open } = gatedPlanner(splits(8));
    const [a, w] = await f.joinAll([{ instance: "a", planner: plan }, { instance: "b", planner: plan }]);
    assert.ok(await f.until(() => allSee([a, w], 2), 2000));
    open();
    assert.ok(await f.until(() => a.held.length + w.held.length === 8, 2000));
    assert.equal(a.held.length, 4);
    assert.equal(w.held.length, 4);
    assert.equal(new Set([...a.held, ...w.held]).size, 8);
    const before = [a.held.join(), w.held.join()];
    await f.advance(2 * f.timings.leaseMs);
    assert.deepEqual([a.held.join(), w.held.join()], before);
    assert.equal(a.lost().length + w.lost().length, 0);
    await a.completeAll();
    await w.completeAll();
    assert.ok(await f.until(() => a.has("allComplete") && w.has("allComplete"), 2000));
  });

  t("2. crash after commit: peer takes over after the lease, resumes from the committed progress", async () => {
    await using f = await b.fleet();
    const { leaseMs } = f.timings;
    const plan = finalPlanner(splits(8));
    const [a, w] = await f.joinAll([{ instance: "a", planner: plan }, { instance: "b", planner: plan }]);
    assert.ok(await f.until(() => a.held.length === 4 && w.held.length === 4, 10 * f.timings.leaseMs)); // the setup's deal: waited out on a loaded store
    const aSplits = a.c.status().held.map((h) => ({ id: h.id, epoch: h.epoch }));
    await commitAll(a, 5, { offset: 42 });
    const crashAt = f.now();
    await a.c.abandon();
    await f.advance(leaseMs - leaseMs / 3 - 20 - f.time.slack / 4);
    assert.equal(w.held.length, 4, "no takeover before the lease can have expired");
    assert.ok(await f.until(() => w.held.length === 8, 1000));
    const took = f.now() - crashAt;
    assert.ok(took <= leaseMs + 200 + f.time.slack, `takeover within lease + 200 ms (${took})`);
    for (const s of aSplits) {
      const g = w.gained().find((e) => e.split.id === s.id)!;
      assert.ok(g, `B gained ${s.id}`);
      assert.ok(g.epoch > s.epoch);
      assert.deepEqual(g.progress, { watermark: 5, state: { offset: 42 } });
      assert.equal((await splitRecord(f.store, s.id)).attempts, 1);
    }
  });

  t("3. graceful release: the peer holds the splits well within one lease", async () => {
    await using f = await b.fleet();
    const plan = finalPlanner(splits(8));
    const [a, w] = await f.joinAll([{ instance: "a", planner: plan }, { instance: "b", planner: plan }]);
    // The setup, not the bound: a loaded real store may take a few leases to deal and balance.
    assert.ok(await f.until(() => a.held.length === 4 && w.held.length === 4, 10 * f.timings.leaseMs), `4 and 4 held: ${a.held.length}, ${w.held.length}`);
    const t0 = f.now();
    // A leader that leaves also hands leadership over (the next one opens its
    // watches first): still well within a lease, but slower than a member.
    const wasLeader = a.c.isLeader;
    await a.c.close();
    const bound = wasLeader ? f.timings.leaseMs / 2 : 50 + f.time.slack / 2;
    assert.ok(await f.until(() => w.held.length === 8, bound, 1));
    assert.ok(f.now() - t0 < bound + f.time.slack / 2, `took ${f.now() - t0} ms (the leaver led: ${wasLeader})`);
    for (const id of w.held) assert.equal((await splitRecord(f.store, id)).attempts, 0);
  });

  t("4. same instance id restarted reclaims its splits at once with the committed watermark", async () => {
    await using f = await b.fleet();
    const plan = finalPlanner(splits(8));
    const [a, w] = await f.joinAll([{ instance: "a", planner: plan }, { instance: "b", planner: plan }]);
    // The first deal may give one member more (spares), balanced by handovers: a wait, not a bound.
    assert.ok(await f.until(() => a.held.length === 4 && w.held.length === 4, 5000));
    const mine = [...a.held].sort();
    await commitAll(a, 7);
    await a.c.abandon();
    const t0 = f.now();
    const a2 = await f.join({ instance: "a", planner: plan });
    assert.ok(await f.until(() => a2.held.length === 4, 500, 1));
    assert.ok(f.now() - t0 < f.timings.leaseMs / 2 + f.time.slack, `reclaimed after ${f.now() - t0} ms`);
    assert.deepEqual([...a2.held].sort(), mine);
    for (const g of a2.gained()) assert.deepEqual(g.progress, { watermark: 7 });
    assert.equal(w.held.length, 4);
    assert.equal((await splitRecord(f.store, mine[0])).attempts, 1);
  });

  t("5. two live processes with one instance id: fatal error naming the id", async () => {
    await using f = await b.fleet();
    await f.join({ instance: "dup" });
    await assert.rejects(
      () => f.join({ instance: "dup" }),
      (e: unknown) => e instanceof SplitleaseError && e.code === "DUPLICATE_INSTANCE" && e.message.includes('"dup"'),
    );
  });

  t("6. fenced zombie: a paused owner's commit writes nothing and throws FencedError", async () => {
    await using f = await b.fleet();
    const aStore = new FaultyStore(await b.extraStore(f));
    const plan = finalPlanner(splits(2));
    const aClock = new ManualClock();
    const a = new Member(
      await SplitCoordinator.join({ store: aStore, job: f.job, instance: "a", clock: aClock, planner: plan, ...f.timings }),
    );
    f.members.push(a);
    assert.ok(await drive(aClock, () => a.held.length === 2, b.realtime));
    const held = a.c.status().held[0];
    await a.c.commit(held.id, held.epoch, { watermark: 1 });
    // A's process stops: its clock freezes and it sees no events. B takes over after the lease.
    aStore.pause();
    const w = await f.join({ instance: "b", planner: plan });
    assert.ok(await f.until(() => w.held.length === 2, 3000));
    const g = w.gained().find((e) => e.split.id === held.id)!;
    await w.c.commit(held.id, g.epoch, { watermark: 9 });
    // A resumes and commits before it has seen anything: the CAS fences it.
    await assert.rejects(
      () => a.c.commit(held.id, held.epoch, { watermark: 2 }),
      (e: unknown) => e instanceof FencedError && e.splitId === held.id,
    );
    assert.deepEqual(a.lost().map((l) => [l.splitId, l.reason]), [[held.id, "fenced"]]);
    const rec = await liveRecord(rawStore(f), held.id);
    assert.deepEqual(rec.progress, { watermark: 9 });
    assert.equal(rec.owner?.instance, "b");
    aStore.resume();
  });

  t("7. poison: quarantined after exactly maxAttempts; stalled(1,1) on every worker, never allComplete", async () => {
    await using f = await b.fleet();
    const plan = finalPlanner([{ id: "good", descriptor: null }, { id: "poison", descriptor: null }]);
    const ws = await f.joinAll(["a", "b", "c"].map((instance) => ({ instance, planner: plan, maxAttempts: 3 })));
    const failing = new Set<string>();
    let fails = 0;
    const worked = await f.until(() => {
      for (const w of ws) {
        for (const h of w.c.status().held) {
          const key = `${h.id}@${h.epoch}`;
          if (failing.has(key)) continue;
          failing.add(key);
          if (h.id === "poison") {
            fails++;
            void w.c.fail(h.id, h.epoch, "boom").catch(() => {});
          } else void w.c.commit(h.id, h.epoch, { watermark: 1 }, { final: true }).catch(() => {});
        }
      }
      return ws.every((w) => w.has("stalled"));
      // Two retry backoffs (1 s and 2 s, +25% jitter at most) come first: leave room on a loaded machine.
    }, 10_000);
    assert.ok(worked);
    assert.equal(fails, 3);
    const q = ws.flatMap((w) => w.events.filter((e) => e.type === "quarantined"));
    assert.deepEqual(q, [{ type: "quarantined", splitId: "poison", attempts: 3 }]);
    for (const w of ws) {
      assert.deepEqual(w.events.find((e) => e.type === "stalled"), { type: "stalled", completed: 1, quarantined: 1 });
      assert.ok(!w.has("allComplete"));
    }
    assert.equal((await splitRecord(f.store, "poison")).status, "quarantined");
    assert.deepEqual(ws.find((w) => w.c.isLeader)?.c.status().quarantined, ["poison"], "the leader lists it");
  });

  t("8. a standby sees allComplete; a late joiner sees it from its snapshot without claiming", async () => {
    await using f = await b.fleet();
    const { planner: plan, open } = gatedPlanner(splits(2));
    const ws = await f.joinAll(["a", "b", "c"].map((instance) => ({ instance, planner: plan })));
    assert.ok(await f.until(() => allSee(ws, 3), 2000));
    open();
    assert.ok(await f.until(() => ws.reduce((n, w) => n + w.held.length, 0) === 2, 2000));
    // Fair share gives 1/1/0; what matters here is that a standby exists.
    const standby = ws.filter((w) => w.held.length === 0);
    assert.ok(standby.length >= 1, "a worker stood by");
    for (const w of ws) await w.completeAll();
    assert.ok(await f.until(() => ws.every((w) => w.has("allComplete")), 2000));
    for (const s of standby) assert.equal(s.gained().length, 0);
    const late = await f.join({ instance: "late", planner: plan });
    assert.ok(await f.until(() => late.has("allComplete"), 2000));
    assert.equal(late.gained().length, 0);
  });

  t("9. leader dies after seeding, before publish: next leader re-plans idempotently; the old publish never lands", async () => {
    await using f = await b.fleet();
    const raw = rawStore(f);
    const aStore = new FaultyStore(await b.extraStore(f));
    let runs = 0;
    const plan = () => {
      runs++;
      return Promise.resolve({ splits: splits(6), finality: "final" as const });
    };
    // Park A's publish (a plan update with generation 1).
    const parked = aStore.hold((op, key, value) => op === "update" && key === "plan" && value!.includes('"generation":1'));
    const a = new Member(
      await SplitCoordinator.join({ store: aStore, job: f.job, instance: "a", clock: f.clock, planner: plan, ...f.timings, maxInFlight: 1 }),
    );
    f.members.push(a);
    assert.ok(await f.until(() => parked.count() === 1, 1000, 1));
    // Its one page of six splits landed; the one it dealt to its idle lane has its record.
    const pageOf = async () => decodeRecord(keys.page(0), (await raw.get(keys.page(0)))!.value, PageRecordSchema);
    assert.deepEqual((await pageOf()).splits.map((e) => e.id), splits(6).map((x) => x.id));
    const records = await raw.list("split.");
    assert.equal(records.length, 1);
    // The split dealt to a's lane, by its record (a loaded machine may not have told a of it yet).
    const dealt = records[0].key.slice("split.".length);
    await a.c.abandon();
    const w = await f.join({ instance: "b", planner: plan });
    assert.ok(await f.until(() => w.c.status().plan?.generation === 1, 3000));
    assert.equal(runs, 2);
    // The unpublished page was written over by the new term, the dealt split not planned again.
    assert.equal((await raw.list("page.")).length, 1, "one page of the plan");
    assert.deepEqual((await pageOf()).splits.map((e) => e.id), splits(6).map((x) => x.id).filter((id) => id !== dealt));
    assert.equal(w.c.status().plan?.planned, 6, "no duplicate splits");
    const published = (await raw.get("plan"))!;
    parked.release();
    await f.advance(50);
    assert.equal((await raw.get("plan"))!.revision, published.revision, "the deposed leader's publish did not land");
    assert.ok(await completeUntil(f, [w], () => w.has("allComplete")));
  });

  t("10. open plan: later replans add splits; completion only once the plan turns final", async () => {
    await using f = await b.fleet();
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
        if (seen.has(h.id)) continue;
        seen.add(h.id);
        void a.c.commit(h.id, h.epoch, { watermark: 1 }, { final: true }).catch(() => {});
      }
      if (gen < 3) assert.ok(!a.has("allComplete"), "no completion while the plan is open");
      return a.has("allComplete");
    }, 4 * f.timings.replanIntervalMs);
    assert.ok(ok);
    assert.equal(seen.size, 5);
    assert.equal(a.c.status().plan?.finality, "final");
  });

  t("11. maxInFlight caps holdings; the rest wait and are claimed as lanes free up", async () => {
    await using f = await b.fleet();
    const [a] = await f.joinAll([{ instance: "a", planner: finalPlanner(splits(5)), maxInFlight: 2 }]);
    let maxHeld = 0;
    const done = new Set<string>();
    assert.ok(await f.until(() => {
      const held = a.c.status().held;
      maxHeld = Math.max(maxHeld, held.length);
      if (held.length > 0 && !done.has(held[0].id)) {
        done.add(held[0].id);
        void a.c.commit(held[0].id, held[0].epoch, {}, { final: true }).catch(() => {});
      }
      return a.has("allComplete");
    }, 5000));
    assert.equal(maxHeld, 2);
    assert.equal(done.size, 5);
  });

  t("12. store outage longer than a lease: workers self-fence, nothing unfenced is committed, the job completes", async () => {
    let faulty!: FaultyStore;
    await using f = await b.fleet((s) => (faulty = new FaultyStore(s)));
    const { leaseMs } = f.timings;
    const plan = finalPlanner(splits(4));
    const [a, w] = await f.joinAll([{ instance: "a", planner: plan }, { instance: "b", planner: plan }]);
    assert.ok(await f.until(() => a.held.length === 2 && w.held.length === 2, 10 * f.timings.leaseMs)); // the setup's deal: waited out on a loaded store
    await commitAll(a, 3);
    await commitAll(w, 3);
    const before = a.c.status().held.concat(w.c.status().held);
    // Splits handed over while the first deal was balanced were lost too (revoked): only the outage's count here.
    const lostBefore = [a.lost().length, w.lost().length];
    const gainedBefore = [a.gained().length, w.gained().length];
    faulty.down = true;
    assert.ok(await f.until(() => a.held.length === 0 && w.held.length === 0, leaseMs));
    for (const [i, m] of [a, w].entries()) {
      assert.deepEqual(m.lost().slice(lostBefore[i]).map((l) => l.reason), ["starved", "starved"]);
      assert.equal(m.c.stats().selfFences, 1);
    }
    await assert.rejects(() => a.c.commit(before[0].id, before[0].epoch, { watermark: 4 }), FencedError);
    for (const s of before) assert.deepEqual((await liveRecord(rawStore(f), s.id)).progress, { watermark: 3 });
    await f.advance(3 * leaseMs);
    faulty.down = false;
    assert.ok(await f.until(() => a.held.length + w.held.length === 4, 3000));
    for (const [i, m] of [a, w].entries()) for (const g of m.gained().slice(gainedBefore[i])) assert.deepEqual(g.progress, { watermark: 3 });
    assert.ok(await completeUntil(f, [a, w], () => a.has("allComplete") && w.has("allComplete")));
  });

  t("13. unreadable split records: clear errors naming the key; the valid splits complete, but the job is not complete until they are gone", async () => {
    await using f = await b.fleet();
    const raw = rawStore(f);
    await raw.create("split.garbage", "{not json");
    await raw.create("split.shape", JSON.stringify({ v: 1, epoch: "x" }));
    const [a] = await f.joinAll([{ instance: "a", planner: finalPlanner(splits(3)) }]);
    const done = new Set<string>();
    assert.ok(await f.until(() => {
      for (const h of a.c.status().held) {
        if (done.has(h.id)) continue;
        done.add(h.id);
        void a.c.commit(h.id, h.epoch, {}, { final: true }).catch(() => {});
      }
      return done.size === 3 && a.c.status().counts.runnable === 0 && a.c.status().counts.completed === 3;
    }, 3000), "the three valid splits complete");
    assert.deepEqual([...done].sort(), ["s000", "s001", "s002"]);
    const st = a.c.status();
    assert.deepEqual(st.invalidRecords.map((r) => r.key).sort(), ["split.garbage", "split.shape"]);
    assert.ok(st.invalidRecords.every((r) => r.message.includes(r.key)));
    assert.deepEqual(st.quarantined, []);
    // Every readable split is completed: only the unreadable records stand between the job and allComplete.
    await f.advance(2 * f.timings.leaseMs);
    assert.ok(!a.has("allComplete") && !a.has("stalled"), "unreadable records block completion");
    // An operator removes them: the same job completes (so the assertion above could fail).
    for (const key of ["split.garbage", "split.shape"]) {
      const e = (await raw.get(key))!;
      assert.ok((await raw.delete(key, e.revision)).ok);
    }
    assert.ok(await f.until(() => a.has("allComplete"), 2 * f.timings.leaseMs), "the job completes once the unreadable records are gone");
  });

  t("13b. an unreadable spec quarantines its split; a foreign fingerprint and a broken config are refused naming what is wrong", async () => {
    await using f = await b.fleet();
    const raw = rawStore(f);
    const logs: string[] = [];
    await raw.create("spec.badspec", "[]");
    await raw.create(
      "split.badspec",
      JSON.stringify({ v: 2, epoch: 0, status: "runnable", owner: null, attempts: 0, weight: 1, progress: null, spec: true }),
    );
    const [a] = await f.joinAll([{
      instance: "a",
      planner: finalPlanner(splits(1)),
      logger: (_l, msg, fields) => logs.push(`${msg} ${JSON.stringify(fields)}`),
    }]);
    assert.ok(await completeUntil(f, [a], () => a.has("stalled"), 3000), "the job stalls on the quarantined split");
    assert.deepEqual(a.c.status().quarantined, ["badspec"]);
    assert.deepEqual(a.events.find((e) => e.type === "stalled"), { type: "stalled", completed: 1, quarantined: 1 });
    assert.ok(logs.some((l) => l.includes("spec.badspec")));
    await assert.rejects(
      () => f.join({ instance: "x", fingerprint: "other" }),
      (e: unknown) =>
        e instanceof SplitleaseError && e.code === "FINGERPRINT_MISMATCH" && e.message.includes(`"${f.job}"`) &&
        e.message.includes('"other"'),
    );
    await assert.rejects(
      () => SplitCoordinator.join({ store: f.store, job: "bad job", leaseMs: 100, maxInFlight: -1 }),
      (e: unknown) =>
        e instanceof SplitleaseError && e.code === "INVALID_CONFIG" && /job/.test(e.message) &&
        /leaseMs/.test(e.message) && /maxInFlight/.test(e.message),
    );
  });

  t("14. a draining worker keeps its splits until it releases them: peers claim them with no attempt charged", async () => {
    await using f = await b.fleet();
    const plan = finalPlanner(splits(4));
    // A drain deadline of a few leases: the source below takes its time, and
    // a loaded machine must not turn its drain into a forced release.
    const drainDeadlineMs = 3 * f.timings.leaseMs;
    const [a, w] = await f.joinAll([{ instance: "a", planner: plan, drainDeadlineMs }, { instance: "b", planner: plan }]);
    assert.ok(await f.until(() => a.held.length === 2 && w.held.length === 2, 10 * f.timings.leaseMs)); // the setup's deal: waited out on a loaded store
    const mine = [...a.held];
    // A cooperative source that takes a while (longer than a lease) to reach a safe boundary.
    const drained = a.c.drain();
    await f.advance(f.timings.leaseMs + 100);
    assert.deepEqual([...a.held].sort(), mine.sort(), "still held while draining");
    assert.equal(w.held.length, 2, "no peer took a draining worker's split");
    await Promise.all(a.c.status().held.map(async (h) => {
      await a.c.commit(h.id, h.epoch, { watermark: 5 });
      await a.c.release([h.id]);
    }));
    await drained;
    assert.ok(await f.until(() => w.held.length === 4, 1000));
    assert.deepEqual(a.lost(), []);
    assert.equal(w.c.stats().acquisitions.takeover ?? 0, 0);
    for (const id of mine) {
      const r = await splitRecord(f.store, id);
      assert.equal(r.attempts, 0);
      assert.deepEqual(r.progress, { watermark: 5 });
    }
  });

  t("15. a free split is claimed even above fair share when every peer below share is out of lanes", async () => {
    await using f = await b.fleet();
    const plan = finalPlanner(splits(4));
    const [a, w] = await f.joinAll([
      { instance: "a", planner: plan, maxInFlight: 8 },
      { instance: "b", planner: plan, maxInFlight: 1 },
    ]);
    assert.ok(await f.until(() => a.held.length + w.held.length === 4, 2000), "no split left waiting for a lane");
    assert.equal(w.held.length, 1);
    assert.equal(a.held.length, 3);
  });

  t("16. a split that appears while every lane is full goes to the member that joins with a free lane", async () => {
    await using f = await b.fleet();
    const raw = rawStore(f);
    const plan = finalPlanner(splits(1));
    const [x] = await f.joinAll([{ instance: "x", planner: plan, maxInFlight: 1 }]);
    assert.ok(await f.until(() => x.held.length === 1, 10 * f.timings.leaseMs)); // the setup's deal: waited out on a loaded store
    // A split written outside the plan (an operator's, or a later plan's) while x has no lane for it.
    await raw.create(
      "split.extra",
      JSON.stringify({ v: 2, epoch: 3, status: "runnable", owner: null, attempts: 0, weight: 1, progress: null, descriptor: null }),
    );
    await f.advance(50);
    assert.deepEqual(x.held, ["s000"]);
    const y = await f.join({ instance: "y", planner: plan });
    assert.ok(await f.until(() => y.held.includes("extra"), 2000), "y gets the split x cannot take");
    assert.deepEqual(x.held, ["s000"]);
  });

  // Progress off the leader's path (issue 38): kills completion-over-split-progress and beat-estimates-after-cut.
  t("17. progress commits land in the split's progress record, never its split record; the member's beat carries their estimate, not one from before a cut; the completion carries the position and every record counted", async () => {
    await using f = await b.fleet();
    const raw = rawStore(f);
    const x = await f.join({ instance: "x", planner: finalPlanner(splits(1, 100)), splittable: true });
    assert.ok(await f.until(() => x.held.length === 1, 2000), "x holds the split");
    const [h] = x.c.status().held;
    const before = (await raw.get(keys.split(h.id)))!;
    await x.c.commit(h.id, h.epoch, { watermark: 10, estimate: { left: 90, total: 100, unit: "ids" } }, { records: 10 });
    await x.c.commit(h.id, h.epoch, { watermark: 20, estimate: { left: 80, total: 100, unit: "ids" } }, { records: 10 });
    assert.equal((await raw.get(keys.split(h.id)))!.revision, before.revision, "no progress commit wrote the split record");
    const p = (await raw.get(keys.prog(h.id)))!;
    assert.deepEqual(JSON.parse(p.value).progress.watermark, 20);
    assert.equal(JSON.parse(p.value).records, 20);
    const est = async () => JSON.parse((await raw.get(keys.member("x")))!.value).est;
    await f.advance(f.timings.leaseMs / 2);
    assert.deepEqual(await est(), [[h.id, 80, 100]], "the beat carries the running split's last estimate");
    // A cut of the rest: the estimate measured the whole range, and is not advertised until the next commit estimates what was kept.
    await x.c.split(h.id, h.epoch, { keep: { n: 0, to: 50 }, residuals: [{ descriptor: { n: 0, from: 50 } }] });
    await f.advance(f.timings.leaseMs / 2);
    assert.equal(await est(), undefined, "no estimate from before the cut");
    await x.c.commit(h.id, h.epoch, { watermark: 30, estimate: { left: 20, total: 50, unit: "ids" } }, { records: 10 });
    await f.advance(f.timings.leaseMs / 2);
    assert.deepEqual(await est(), [[h.id, 20, 50]]);
    await x.c.commit(h.id, h.epoch, { watermark: 50 }, { final: true, records: 20 });
    const done = await splitRecord(raw, h.id);
    assert.deepEqual([done.status, done.progress?.watermark, done.records], ["completed", 50, 50], "the completion carries the last position and the records of every commit");
  });
}
