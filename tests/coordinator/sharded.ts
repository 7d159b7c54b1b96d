// A job sharded over K leaders and K stores (issue 39, item 4; docs/DESIGN.md
// "Sharded jobs"), defined once and run on every backend (memory:
// sharded_test.ts; the real stores through the backend kit): every split
// runs in its shard and completes once, the member's lanes are one budget
// across shards (never more than maxInFlight in all, lanes freed in one
// shard filled from another before a heartbeat interval), one outcome after
// the last shard, a shard's leader dying while another's deals, a shard's
// store unavailable while the others run, and a member of another shard
// count refused.
import assert from "node:assert/strict";
import { type CoordinationEvent, type PlannedSplit, ShardedCoordinator, SplitleaseError, type Store, StoreUnavailableError } from "../../mod.ts";
import { pauseJob, resumeJob, shardJob, shardOf } from "../../admin.ts";
import { finalPlanner, splits, type TimeDriver, type Timings } from "./fleet.ts";
import { residualId } from "../../src/coordinator/cuts.ts";

/** What the scenarios need of a backend: K stores of a job (each bound to its shard's job name) and time. */
export interface ShardBackend {
  name: string;
  time(): TimeDriver;
  timings: Timings;
  /** The store of shard `index` of `job` (a new connection each call; the same records for the same job and index). */
  store(job: string, index: number): Promise<Store>;
  /** Stores that can be taken down (a fault layer); omitted: the outage scenario is skipped. */
  faulty?: (store: Store) => Store & { down: boolean };
}

/** A member of a sharded job, with its events collected. */
export class ShardMember {
  events: CoordinationEvent[] = [];
  done: Promise<void>;
  maxHeld = 0;
  constructor(readonly c: ShardedCoordinator) {
    this.done = (async () => {
      try {
        for await (const ev of c) this.events.push(ev);
      } catch { /* a failed member: its events end */ }
    })();
  }
  get held(): { id: string; epoch: number }[] {
    const h = this.c.status().held;
    this.maxHeld = Math.max(this.maxHeld, h.length);
    return h;
  }
  count(type: CoordinationEvent["type"]): number {
    return this.events.filter((e) => e.type === type).length;
  }
  /** Completes every held split (a tiny task each). */
  async completeAll(): Promise<string[]> {
    const done: string[] = [];
    for (const h of this.held) {
      await this.c.commit(h.id, h.epoch, { watermark: 1 }, { final: true }).then(() => done.push(h.id), () => {});
    }
    return done;
  }
}

let jobs = 0;

export function shardedScenarios(b: ShardBackend): void {
  const t = (name: string, fn: () => Promise<void>) =>
    Deno.test({ name: `${b.name}: sharded: ${name}`, fn, sanitizeOps: false, sanitizeResources: false });

  async function join(job: string, shards: number, instance: string, extra: Record<string, unknown> = {}, plan?: PlannedSplit[], time?: TimeDriver) {
    // A join on a loaded real store may find it slow to answer (STORE_UNAVAILABLE): tried again, as a
    // worker's supervisor restarts it, until a deadline.
    for (const until = Date.now() + 20_000;;) {
      try {
        return await joinOnce(job, shards, instance, extra, plan, time);
      } catch (e) {
        if (!(e instanceof StoreUnavailableError) || Date.now() >= until) throw e;
      }
    }
  }

  async function joinOnce(job: string, shards: number, instance: string, extra: Record<string, unknown>, plan?: PlannedSplit[], time?: TimeDriver) {
    const c = await ShardedCoordinator.join({
      job,
      shards,
      instance,
      stores: ({ index }) => b.store(job, index),
      clock: time?.clock,
      ...b.timings,
      ...(plan ? { planner: finalPlanner(plan) } : {}),
      ...extra,
    });
    return new ShardMember(c);
  }

  t("S1. every split runs once, in its shard; one outcome, after the last shard, with the counts of all", async () => {
    const time = b.time();
    const job = `sh${++jobs}${Date.now().toString(36)}`;
    const plan = splits(40);
    const ms = await Promise.all(["a", "b", "c"].map((i) => join(job, 4, i, { maxInFlight: 4 }, plan, time)));
    const completed = new Map<string, number>();
    try {
      const ok = await time.until(() => {
        for (const m of ms) void m.completeAll().then((ids) => ids.forEach((id) => completed.set(id, (completed.get(id) ?? 0) + 1)));
        return ms.every((m) => m.count("allComplete") > 0);
      }, 40 * b.timings.leaseMs, 20);
      assert.ok(ok, `the job completes: ${JSON.stringify(ms[0].c.status().shards)}`);
      for (const m of ms) {
        assert.equal(m.count("allComplete"), 1, "one outcome, announced once");
        assert.deepEqual(m.events.find((e) => e.type === "allComplete"), { type: "allComplete", completed: 40 }, "the counts of every shard");
      }
      assert.equal(completed.size, 40, "every split completed");
      assert.ok([...completed.values()].every((n) => n === 1), "none twice");
      // Each split's records are in its shard's store, and only there.
      for (const s of plan) {
        const home = shardOf(s.id, 4);
        for (let i = 0; i < 4; i++) {
          const st = await b.store(job, i);
          const rec = await st.get(`split.${s.id}`);
          await st.close();
          assert.equal(rec !== undefined, i === home, `${s.id} in shard ${home} only (looked in ${i})`);
        }
      }
      const shards = ms[0].c.status().shards!;
      assert.deepEqual(shards.map((s) => s.job), [0, 1, 2, 3].map((i) => shardJob(job, i)));
      assert.ok(shards.every((s) => s.outcome === "allComplete"));
    } finally {
      await Promise.all(ms.map((m) => m.c.close()));
    }
  });

  t("S2. a member's lanes are one budget across shards: never more than maxInFlight held in all", async () => {
    const time = b.time();
    const job = `sh${++jobs}${Date.now().toString(36)}`;
    const plan = splits(24);
    const lead = await join(job, 4, "lead", { maxInFlight: 0 }, plan, time);
    const m = await join(job, 4, "m", { maxInFlight: 2 }, undefined, time);
    try {
      // m holds two splits and runs them long: the other shards' leaders deal it nothing more.
      assert.ok(await time.until(() => m.held.length === 2, 20 * b.timings.leaseMs), "m fills its two lanes");
      await time.advance(3 * b.timings.leaseMs);
      assert.equal(m.held.length, 2, "no shard adds a third");
      const away = await Promise.all([0, 1, 2, 3].map(async (i) => {
        const st = await b.store(job, i);
        const e = await st.get("member.m");
        await st.close();
        return e ? (JSON.parse(e.value).away ?? 0) : 0;
      }));
      const holdsIn = m.c.status().shards!.map((s) => s.held);
      assert.deepEqual(away, holdsIn.map((h) => 2 - h), `each shard's member record says what the others hold (held ${holdsIn})`);
      // And no shard's leader promises m a lane it does not have: no plain offer (spares are no promise).
      const plain = await Promise.all([0, 1, 2, 3].map(async (i) => {
        const st = await b.store(job, i);
        const e = await st.get("assign.m");
        await st.close();
        // An offer of a split m holds is no promise either (the record may predate the claim).
        const held = new Set(m.held.map((h) => h.id));
        return e ? (JSON.parse(e.value).offers as { id: string; spare?: true }[]).filter((o) => !o.spare && !held.has(o.id)).length : 0;
      }));
      assert.deepEqual(plain, [0, 0, 0, 0], `no lane offered past the budget (held ${holdsIn})`);
      let done = 0;
      const ok = await time.until(() => {
        void m.completeAll().then((ids) => (done += ids.length));
        return m.count("allComplete") > 0;
      }, 60 * b.timings.leaseMs, 20);
      assert.ok(ok, "the job completes");
      assert.equal(done, 24);
      assert.ok(m.maxHeld <= 2, `m held ${m.maxHeld} at once`);
    } finally {
      await Promise.all([lead, m].map((x) => x.c.close()));
    }
  });

  t("S3. lanes freed in one shard are dealt from another before a heartbeat interval", async () => {
    const time = b.time();
    const job = `sh${++jobs}${Date.now().toString(36)}`;
    // Shard 0 gets two splits, shard 1 twenty: once m finishes shard 0's, only shard 1 can fill its lanes.
    const all = splits(200, 1, "x");
    const plan = [...all.filter((s) => shardOf(s.id, 2) === 0).slice(0, 2), ...all.filter((s) => shardOf(s.id, 2) === 1).slice(0, 20)];
    const zero = plan.slice(0, 2).map((s) => s.id);
    const lead = await join(job, 2, "lead", { maxInFlight: 0 }, plan, time);
    // Shard 1 paused before m joins, so m's lanes take shard 0's two first
    // (whichever shard's offers land first would fill them all), then
    // resumed, so shard 1 deals the two lanes left.
    const inShard = async <T>(i: number, fn: (st: Store) => Promise<T>): Promise<T> => {
      const st = await b.store(job, i);
      try {
        return await fn(st);
      } finally {
        await st.close();
      }
    };
    let paused = false;
    assert.ok(await time.until(() => {
      void inShard(1, (st) => pauseJob(st)).then((r) => (paused ||= r.outcome === "paused"), () => {});
      return paused;
    }, 20 * b.timings.leaseMs, 20), "shard 1 paused");
    const m = await join(job, 2, "m", { maxInFlight: 4 }, undefined, time);
    try {
      const holdsZero = () => zero.every((id) => m.held.some((h) => h.id === id));
      assert.ok(await time.until(() => holdsZero(), 20 * b.timings.leaseMs), "m holds shard 0's two splits");
      assert.equal((await inShard(1, (st) => resumeJob(st))).outcome, "resumed");
      assert.ok(await time.until(() => m.held.length === 4, 20 * b.timings.leaseMs), "m holds shard 0's two splits and two of shard 1's");
      // Right after a regular beat of m in shard 1 (the next is most of a heartbeat interval away), m's shard 0 work ends.
      const revIn1 = async () => {
        const st = await b.store(job, 1);
        const e = await st.get("member.m");
        await st.close();
        return e?.revision ?? 0;
      };
      const r0 = await revIn1();
      for (let n = 0; n < 200 && (await revIn1()) === r0; n++) await time.advance(5);
      for (const h of m.held.filter((x) => zero.includes(x.id))) await m.c.commit(h.id, h.epoch, {}, { final: true });
      const t0 = time.now();
      // m tells shard 1's leader at once that its lanes are free there now (an early beat).
      let told = Infinity;
      const awayIn1 = async () => {
        const st = await b.store(job, 1);
        const e = await st.get("member.m");
        await st.close();
        return e ? (JSON.parse(e.value).away ?? 0) : 0;
      };
      for (let n = 0; n < 50 && told === Infinity; n++) {
        if ((await awayIn1()) < 2) told = time.now() - t0;
        else await time.advance(Math.max(1, b.timings.leaseMs / 100));
      }
      assert.ok(told < b.timings.leaseMs / 4, `shard 1's member record says so in ${told} ms, well before the next regular beat (a heartbeat interval is ${b.timings.leaseMs / 3} ms)`);
      assert.ok(await time.until(() => m.held.length === 4, b.timings.leaseMs), "the lanes fill again");
      const took = time.now() - t0;
      assert.ok(took < b.timings.leaseMs / 3, `filled from shard 1 in ${took} ms, before a heartbeat interval (${b.timings.leaseMs / 3} ms)`);
      assert.equal(m.c.status().shards![1].held, 4, "all four lanes in shard 1 now");
    } finally {
      await Promise.all([lead, m].map((x) => x.c.close()));
    }
  });

  t("S4. a shard's leader dies while another's deals: its splits are taken over and the job completes", async () => {
    const time = b.time();
    const job = `sh${++jobs}${Date.now().toString(36)}`;
    const plan = splits(20);
    const a = await join(job, 2, "a", { maxInFlight: 3 }, plan, time);
    const c = await join(job, 2, "c", { maxInFlight: 3 }, plan, time);
    try {
      assert.ok(await time.until(() => a.c.isLeader() && a.held.length > 0, 20 * b.timings.leaseMs), "a leads a shard and holds splits");
      const led = [0, 1].filter((i) => a.c.isLeader(i));
      // a dies: no release, no leave (its stores go with it).
      await a.c.abandon();
      const ok = await time.until(() => {
        void c.completeAll();
        return c.count("allComplete") > 0;
      }, 60 * b.timings.leaseMs, 20);
      assert.ok(ok, `the job completes (c leads ${[0, 1].filter((i) => c.c.isLeader(i))}, a led ${led})`);
      assert.ok(led.every((i) => c.c.isLeader(i)), "c took the shards a led");
    } finally {
      await Promise.all([a, c].map((x) => x.c.close()));
    }
  });

  t("S5. a member of another shard count is refused, naming both", async () => {
    const time = b.time();
    const job = `sh${++jobs}${Date.now().toString(36)}`;
    const a = await join(job, 4, "a", {}, splits(4), time);
    try {
      await assert.rejects(() => join(job, 2, "b", {}, undefined, time), (e: unknown) =>
        e instanceof SplitleaseError && e.code === "INVALID_CONFIG" && /4 shards/.test(e.message) && /shard \d of 2/.test(e.message));
      await assert.rejects(
        async () => {
          const { SplitCoordinator } = await import("../../mod.ts");
          const st = await b.store(job, 0);
          try {
            await SplitCoordinator.join({ store: st, job, instance: "u", clock: time.clock, ...b.timings });
          } finally {
            await st.close();
          }
        },
        (e: unknown) => e instanceof SplitleaseError && e.code === "INVALID_CONFIG" && /an unsharded job/.test(e.message),
        "an unsharded member of a sharded job's first shard",
      );
    } finally {
      await a.c.close();
    }
  });
  t("S6. a cut's residual lives in its parent's shard, wherever its id would hash: another member runs it there, its commits reach it, and the job completes", async () => {
    const time = b.time();
    const job = `sh${++jobs}${Date.now().toString(36)}`;
    // One split in shard 0 whose residual's id hashes to shard 1.
    const plan = splits(40, 100).filter((s) => shardOf(s.id, 2) === 0 && shardOf(residualId(s.id, { n: 0, from: 50 }), 2) === 1).slice(0, 1);
    assert.equal(plan.length, 1);
    const a = await join(job, 2, "a", { maxInFlight: 1, splittable: true }, plan, time);
    try {
      assert.ok(await time.until(() => a.held.length === 1, 20 * b.timings.leaseMs), "a holds the split");
      const [h] = a.held;
      await a.c.commit(h.id, h.epoch, { watermark: 10 });
      const [residual] = await a.c.split(h.id, h.epoch, { keep: { n: 0, to: 50 }, residuals: [{ descriptor: { n: 0, from: 50 } }] });
      assert.ok(residual, "the cut made a residual");
      const inShard = async (i: number) => {
        const st = await b.store(job, i);
        try {
          return (await st.get(`split.${residual}`)) !== undefined;
        } finally {
          await st.close();
        }
      };
      assert.deepEqual([await inShard(0), await inShard(1)], [true, false], `the residual ${residual} (hashing to shard ${shardOf(residual, 2)}) is in its parent's shard`);
      // Another member takes the residual (a's one lane is busy) and finishes it through its shard.
      const c = await join(job, 2, "c", { maxInFlight: 2, splittable: true }, undefined, time);
      try {
        assert.ok(await time.until(() => c.held.some((x) => x.id === residual), 20 * b.timings.leaseMs), "c holds the residual");
        const r = c.held.find((x) => x.id === residual)!;
        await c.c.commit(r.id, r.epoch, { watermark: 60 });
        await c.c.commit(r.id, r.epoch, { watermark: 100 }, { final: true });
        await a.c.commit(h.id, h.epoch, { watermark: 50 }, { final: true });
        assert.ok(await time.until(() => a.count("allComplete") > 0 && c.count("allComplete") > 0, 40 * b.timings.leaseMs), "one outcome, after both");
        const done = a.events.find((e) => e.type === "allComplete") as { completed: number };
        assert.equal(done.completed, 2, "the split and its residual");
      } finally {
        await c.c.close();
      }
    } finally {
      await a.c.close();
    }
  });
  t("S7. K leaders dealing one member's idle lanes at once grant it a share each: split records name it for at most twice its lanes at once (its lanes, and a share per shard granted while claims filled them, handed back), not K times", async () => {
    const time = b.time();
    const job = `sh${++jobs}${Date.now().toString(36)}`;
    const stores = await Promise.all([0, 1, 2, 3].map((i) => b.store(job, i)));
    // Every split record of every shard, as it changes: how many name m at once.
    const owned = new Map<string, boolean>();
    let most = 0;
    const watches = stores.map((st) => st.watch("split."));
    for (const [i, w] of watches.entries()) {
      void (async () => {
        for await (const ev of w) {
          if (ev.type !== "put") continue;
          const o = (JSON.parse(ev.value) as { owner: { instance: string } | null; status: string }).owner;
          owned.set(`${i}/${ev.key}`, o?.instance === "m" && JSON.parse(ev.value).status === "runnable");
          most = Math.max(most, [...owned.values()].filter(Boolean).length);
        }
      })().catch(() => {});
    }
    // m alone leads every shard and plans there, its four lanes free in each shard's view.
    const m = await join(job, 4, "m", { maxInFlight: 4 }, splits(40), time);
    try {
      assert.ok(await time.until(() => m.held.length === 4, 20 * b.timings.leaseMs), "m fills its lanes");
      await time.advance(2 * b.timings.leaseMs);
      // Its own check keeps m at four running (S2); what the leaders grant past that is handed back, a write each.
      assert.ok(m.maxHeld <= 4, `m ran ${m.maxHeld} at once`);
      assert.ok(most <= 8, `split records named m for ${most} splits at once (maxInFlight 4, 4 shards): each shard granted it all its lanes`);
    } finally {
      await m.c.close();
      for (const w of watches) await w.stop();
      for (const st of stores) await st.close();
    }
  });

  t("S8. a member takes no lane in any shard until it has joined every shard: a shard joined first holds nothing while another's store is slow to answer", async () => {
    const time = b.time();
    const job = `sh${++jobs}${Date.now().toString(36)}`;
    const plan = splits(16);
    const a = await join(job, 2, "a", { maxInFlight: 2 }, plan, time);
    // Shard 1's store answers m's join only once the gate opens; shard 0's at once.
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const joining = joinOnce(job, 2, "m", {
      maxInFlight: 4,
      stores: ({ index }: { index: number }) => b.store(job, index).then((st) => (index === 1 ? gated(st, gate) : st)),
    }, plan, time);
    const s0 = await b.store(job, 0);
    let m: ShardMember | undefined;
    try {
      assert.ok(await time.until(() => a.c.isLeader(0) && a.held.length > 0, 20 * b.timings.leaseMs), "a leads shard 0 and holds splits");
      // m is a member of shard 0 (its record there) while its join of shard 1 waits: for two leases, while
      // shard 0 has free splits, no split record of shard 0 names m. Before, the leader dealt m its lanes
      // there, and m held splits it did not run (their events waited for the join) under live heartbeats.
      let registered = false;
      for (const end = time.now() + 2 * b.timings.leaseMs; time.now() < end;) {
        await time.advance(20);
        registered ||= (await s0.get("member.m")) !== undefined;
        const named = (await s0.list("split.")).filter((e) => (JSON.parse(e.value) as { owner: { instance: string } | null }).owner?.instance === "m");
        assert.deepEqual(named.map((e) => e.key), [], "no split of shard 0 is m's before its join returns");
      }
      assert.ok(registered, "m registered in shard 0 while it joined shard 1");
      open();
      m = await joining;
      const member = m;
      const ok = await time.until(() => {
        void a.completeAll();
        void member.completeAll();
        return a.count("allComplete") > 0 && member.count("allComplete") > 0;
      }, 60 * b.timings.leaseMs, 20);
      assert.ok(ok, "the job completes once m joined");
      assert.ok(member.events.some((e) => e.type === "gained"), "m ran splits once its join returned");
    } finally {
      open();
      await s0.close();
      m ??= await joining.catch(() => undefined);
      await Promise.all([a, m].map((x) => x?.c.close()));
    }
  });

  t("S9. a join that fails in one shard closes every shard it joined, also one that answered after the failure", async () => {
    const time = b.time();
    const job = `sh${++jobs}${Date.now().toString(36)}`;
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    // Shard 0's store is bound to another job (refused at once); shard 1's answers once the gate opens.
    const joining = joinOnce(job, 2, "m", {
      stores: ({ index }: { index: number }) => b.store(job, index).then((st) => (index === 0 ? gated(st, Promise.resolve(), `${job}-other`) : gated(st, gate))),
    }, undefined, time);
    let failed: unknown;
    joining.then(() => (failed = "joined"), (e) => (failed = e));
    const s1 = await b.store(job, 1);
    try {
      await time.advance(50);
      open();
      assert.ok(await time.until(() => failed !== undefined, 20 * b.timings.leaseMs), "the join ended");
      assert.ok(failed instanceof SplitleaseError && failed.code === "INVALID_CONFIG", `refused: ${failed}`);
      // Shard 1's join answered after shard 0's was refused: it is closed, not left heartbeating. Before, its
      // member record stayed live and refused the instance's next join there (DUPLICATE_INSTANCE).
      let live = false;
      for (const end = time.now() + 3 * b.timings.leaseMs; time.now() < end;) {
        await time.advance(50);
        live = (await s1.get("member.m")) !== undefined;
        if (!live) break;
      }
      assert.ok(!live, "no member record of m is left in shard 1");
      const again = await join(job, 2, "m", {}, undefined, time);
      await again.c.close();
    } finally {
      open();
      await s1.close();
    }
  });

  t("S10. a member whose coordinator of one shard fails (a twin took its instance over there) stops every shard as a dead process would: it writes nothing more in the others", async () => {
    const time = b.time();
    const job = `sh${++jobs}${Date.now().toString(36)}`;
    const plan = splits(12);
    const m = await join(job, 2, "m", { maxInFlight: 4 }, plan, time);
    const stores = await Promise.all([b.store(job, 0), b.store(job, 1)]);
    try {
      // The lane budget is one: the shard that deals first may take all of m's lanes, so m holds splits in one shard or both.
      assert.ok(await time.until(() => m.held.length > 0, 20 * b.timings.leaseMs), "m holds splits");
      const shards = m.c.status().shards!;
      const x = shards[0].held <= shards[1].held ? 0 : 1, y = 1 - x;
      // A twin of m's instance takes its member record over in shard x (another session): m's next beat there
      // finds it and that shard's coordinator fails with DUPLICATE_INSTANCE.
      const ex = (await stores[x].get("member.m"))!;
      const twin = { ...JSON.parse(ex.value), session: "twin-session", beat: 0 };
      assert.ok((await stores[x].update("member.m", JSON.stringify(twin), ex.revision)).ok, "the twin's record landed");
      assert.ok(await time.until(() => m.c.status().state === "failed", 10 * b.timings.leaseMs), `m failed: ${m.c.status().state}`);
      await m.done;
      const s1 = stores[y];
      const before = (await s1.get("member.m"))!;
      assert.ok(before, `m's member record in shard ${y} is there when m failed`);
      const held = (await s1.list("split.")).filter((e) => (JSON.parse(e.value) as { owner: { instance: string } | null }).owner?.instance === "m");
      assert.ok(held.length > 0, `m held splits in shard ${y} when it failed`);
      await time.advance(3 * b.timings.leaseMs);
      // Shard y heard nothing more from m: no beat, no release, no leave (its twin reclaims, or the leader moves them).
      const after = await s1.get("member.m");
      assert.equal(after?.revision, before.revision, `m's member record in shard ${y} is as it was when m failed`);
      for (const e of held) assert.equal((await s1.get(e.key))?.revision, e.revision, `${e.key} is as m left it`);
    } finally {
      await m.c.close();
      for (const st of stores) await st.close();
    }
  });
}

/** `store` whose every operation waits for `gate` (a store slow to answer a member's join), bound to `job` when given. */
function gated(store: Store, gate: Promise<void>, job?: string): Store {
  const wait = <T>(f: () => Promise<T>) => gate.then(f);
  return {
    get job() {
      return job ?? store.job;
    },
    create: (k, v) => wait(() => store.create(k, v)),
    update: (k, v, r) => wait(() => store.update(k, v, r)),
    delete: (k, r) => wait(() => store.delete(k, r)),
    get: (k) => wait(() => store.get(k)),
    list: (f) => wait(() => store.list(f)),
    watch: (f) => store.watch(f),
    close: () => store.close(),
    [Symbol.asyncDispose]: () => store.close(),
  };
}
