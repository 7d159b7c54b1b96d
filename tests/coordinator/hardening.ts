// Faults and bad input found by trying the fleet as an operator would (the
// hardening issue), defined once and run on every backend. Each scenario
// fails without the fix it is named after.
import assert from "node:assert/strict";
import { ManualClock } from "../../testing.ts";
import { SplitCoordinator, FencedError, SplitleaseError } from "../../mod.ts";
import type { Planner, Store } from "../../mod.ts";
import type { Clock } from "../../testing.ts";
import { keys } from "../../admin.ts";
import type { DeleteResult, StoreEntry, Watch, WriteResult } from "../../store.ts";
import { FaultyStore } from "./faulty_store.ts";
import { type Backend, finalPlanner, type Fleet, Member, rawStore, splits } from "./fleet.ts";
import { plannedRecord, splitRecord } from "./scenarios.ts";

/** Counts the split writes that land through it. */
class Counting implements Store {
  splitWrites = 0;
  constructor(readonly inner: Store) {}
  #count<T extends { ok: boolean }>(key: string, r: T): T {
    if (r.ok && key.startsWith(keys.splitPrefix)) this.splitWrites++;
    return r;
  }
  async create(key: string, value: string): Promise<WriteResult> {
    return this.#count(key, await this.inner.create(key, value));
  }
  async update(key: string, value: string, revision: number): Promise<WriteResult> {
    return this.#count(key, await this.inner.update(key, value, revision));
  }
  delete(key: string, revision?: number): Promise<DeleteResult> {
    return this.inner.delete(key, revision);
  }
  get(key: string): Promise<StoreEntry | undefined> {
    return this.inner.get(key);
  }
  list(filter: string): Promise<StoreEntry[]> {
    return this.inner.list(filter);
  }
  watch(filter: string): Watch {
    return this.inner.watch(filter);
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/**
 * Records the writes one process issues: the key, and whether its
 * coordinator had already failed when it issued it. Leader-record writes
 * past `cap` never answer: a leadership ping-pong runs without time passing
 * and would otherwise never give the test back control.
 */
class WriteLog implements Store {
  writes: { op: string; key: string; failed: boolean }[] = [];
  /** Creates and updates of the leader record (an election, a term, a beat). */
  leaderWrites = 0;
  /** When (on the process's clock) it last wrote its member record. */
  lastMemberWrite = 0;
  failed: () => boolean = () => false;
  constructor(readonly inner: Store, readonly clock: Clock, readonly cap = 20) {}
  #issue(op: string, key: string): boolean {
    this.writes.push({ op, key, failed: this.failed() });
    if (key.startsWith(keys.memberPrefix)) this.lastMemberWrite = this.clock.now();
    return key === keys.leader && op !== "delete" && ++this.leaderWrites > this.cap;
  }
  create(key: string, value: string): Promise<WriteResult> {
    return this.#issue("create", key) ? new Promise(() => {}) : this.inner.create(key, value);
  }
  update(key: string, value: string, revision: number): Promise<WriteResult> {
    return this.#issue("update", key) ? new Promise(() => {}) : this.inner.update(key, value, revision);
  }
  delete(key: string, revision?: number): Promise<DeleteResult> {
    this.#issue("delete", key);
    return this.inner.delete(key, revision);
  }
  get(key: string): Promise<StoreEntry | undefined> {
    return this.inner.get(key);
  }
  list(filter: string): Promise<StoreEntry[]> {
    return this.inner.list(filter);
  }
  watch(filter: string): Watch {
    return this.inner.watch(filter);
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/**
 * A process's clock that can jump, as a stopped process's monotonic clock
 * does when it resumes: `now()` moves at once, its timers fire only when
 * the underlying manual clock is driven.
 */
class FrozenClock implements Clock {
  skew = 0;
  constructor(readonly inner: ManualClock) {}
  now(): number {
    return this.inner.now() + this.skew;
  }
  wallNow(): number {
    return this.inner.wallNow() + this.skew;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    return this.inner.setTimeout(fn, ms);
  }
  clearTimeout(h: unknown): void {
    this.inner.clearTimeout(h);
  }
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

/** Completes whatever each member holds until `done()`. */
function completeUntil(f: Fleet, ms: Member[], done: () => boolean, maxMs = 5000): Promise<boolean> {
  return f.until(() => {
    for (const m of ms) for (const h of m.c.status().held) void m.c.commit(h.id, h.epoch, {}, { final: true }).catch(() => {});
    return done();
  }, maxMs);
}

/** A leader that holds nothing (a standby), so the other members' splits are theirs alone. */
async function standbyLeader(f: Fleet, plan: Planner): Promise<Member> {
  const lead = await f.join({ instance: "lead", planner: plan, maxInFlight: 0 });
  assert.ok(await f.until(() => lead.c.isLeader && (lead.c.status().plan?.generation ?? 0) > 0, 3000), "the standby leads and plans");
  return lead;
}

export function hardeningScenarios(b: Backend): void {
  const t = (name: string, fn: () => Promise<void>) =>
    Deno.test({ name: `${b.name}: ${name}`, fn, sanitizeOps: false, sanitizeResources: false });

  t("H1. twin restart: the frozen predecessor stops with DUPLICATE_INSTANCE and writes no split; one attempt, no ping-pong", async () => {
    await using f = await b.fleet();
    const plan = finalPlanner(splits(6));
    await standbyLeader(f, plan);
    const aStore = new Counting(new FaultyStore(await b.extraStore(f)));
    const faulty = aStore.inner as FaultyStore;
    const aClock = new ManualClock();
    const aTime = new FrozenClock(aClock);
    const a = new Member(
      await SplitCoordinator.join({ store: aStore, job: f.job, instance: "a", clock: aTime, ...f.timings, maxInFlight: 2 }),
    );
    f.members.push(a);
    // A holds 2 and has more offered to it (its prefetch).
    assert.ok(await drive(aClock, () => a.held.length === 2, b.realtime), "a holds two splits");
    const held = a.c.status().held;
    // A freezes for less than a lease but longer than a joiner's twin wait: its clock stops, it sees nothing.
    faulty.pause();
    const a2 = await f.join({ instance: "a", maxInFlight: 2 });
    // Its predecessor's splits, whatever else it claims meanwhile (a spare, when a reclaim takes longer than spareClaimAfterMs).
    assert.ok(await f.until(() => held.every((h) => a2.held.includes(h.id)), 3 * f.timings.leaseMs), "the restarted process gets its predecessor's splits");
    for (const h of held) assert.equal((await splitRecord(rawStore(f), h.id)).attempts, 1, "a restart reclaim costs one attempt");
    // A wakes up: its clock jumps by the time it was stopped. Before its
    // overdue heartbeat finds another session, a lane of it tries to commit
    // (fenced: the lane frees) — and its last assignment record still offers
    // it free splits.
    const before = aStore.splitWrites;
    aTime.skew += 0.6 * f.timings.leaseMs;
    faulty.resume();
    await assert.rejects(() => a.c.commit(held[0].id, held[0].epoch, { watermark: 1 }), FencedError);
    assert.ok(await drive(aClock, () => a.error !== undefined, b.realtime), "the frozen process stops");
    assert.ok(a.error instanceof SplitleaseError && a.error.code === "DUPLICATE_INSTANCE", String(a.error));
    await f.advance(f.timings.leaseMs);
    assert.equal(aStore.splitWrites, before, "the loser wrote no split after it woke");
    for (const id of splits(6).map((s) => s.id)) {
      const rec = (await plannedRecord(rawStore(f), id))!.record; // a split not dealt yet has no record of its own
      assert.ok(rec.attempts <= 1, `${id}: the twin exchange charged no attempt (attempts ${rec.attempts})`);
      if (rec.owner) assert.equal(rec.owner.session, a2.c.session, `${id} is owned by the winner`);
    }
    assert.deepEqual(a2.lost(), []);
  });

  // On the manual clock only: with real time, holding the writes back longer
  // than spareClaimAfterMs (20 ms here) lets a2 claim a spare by design (the
  // leader looks slow), and the test could not tell that from the fault.
  if (!b.realtime) t("H1b. a restarted member's reclaimed splits hold its lanes until they land: it never runs more than maxInFlight", async () => {
    await using f = await b.fleet();
    const plan = finalPlanner(splits(8));
    // The leader's takeover writes are held back, as a slow store would: the
    // heir must not be dealt the lanes its reclaims are on their way to.
    const leaderStore = new FaultyStore(await b.extraStore(f));
    const lead = await f.join({ instance: "lead", planner: plan, maxInFlight: 0, store: leaderStore });
    assert.ok(await f.until(() => lead.c.isLeader && (lead.c.status().plan?.generation ?? 0) > 0, 3000), "the standby leads and plans");
    const a = await f.join({ instance: "a", maxInFlight: 2 });
    assert.ok(await f.until(() => a.held.length === 2, 3000), "a holds two splits, six are free");
    const mine = [...a.held].sort();
    const takeovers = leaderStore.hold((op, key, value) =>
      op === "update" && mine.includes(key.slice("split.".length)) && value !== undefined && value.includes('"attempts":1')
    );
    await a.c.abandon();
    const a2 = await f.join({ instance: "a", maxInFlight: 2 });
    assert.ok(await f.until(() => takeovers.count() === 2, 3 * f.timings.leaseMs), "the leader takes both over for a2");
    // Shorter than spareClaimAfterMs: a lane left without an offer that long claims a spare, by design.
    await f.advance(10);
    assert.equal(a2.held.length, 0, `a2 claimed ${a2.held} while its reclaims were on their way`);
    takeovers.release();
    let most = 0;
    assert.ok(
      await f.until(() => {
        most = Math.max(most, a2.c.status().held.length);
        return mine.every((id) => a2.held.includes(id));
      }, 3 * f.timings.leaseMs),
      "a2 reclaims its predecessor's splits",
    );
    await f.advance(f.timings.leaseMs / 2);
    assert.ok(Math.max(most, a2.c.status().held.length) <= 2, `a2 ran ${most} splits at once with maxInFlight 2`);
  });

  t("H12. twin of the leader: the paused leader resumes, elects nothing, writes nothing after DUPLICATE_INSTANCE; one leader, no term churn", async () => {
    await using f = await b.fleet();
    const { leaseMs } = f.timings;
    const plan = finalPlanner(splits(3));
    const planTerm = async () => JSON.parse((await rawStore(f).get(keys.plan))!.value).term as number;
    const faulty = new FaultyStore(await b.extraStore(f));
    const aClock = new ManualClock();
    const aTime = new FrozenClock(aClock);
    const aStore = new WriteLog(faulty, aTime);
    const a = new Member(
      await SplitCoordinator.join({ store: aStore, job: f.job, instance: "a", clock: aTime, planner: plan, ...f.timings, maxInFlight: 0 }),
    );
    f.members.push(a);
    aStore.failed = () => a.c.status().state === "failed";
    assert.ok(await drive(aClock, () => a.c.isLeader && (a.c.status().plan?.generation ?? 0) > 0, b.realtime), "a leads and plans");
    // The leader freezes for less than a lease; a new process with its instance
    // takes its member record over after the twin wait and is elected at once
    // (the leader record names its instance with another session).
    faulty.pause();
    const a2 = await f.join({ instance: "a", planner: plan, maxInFlight: 0 });
    assert.ok(await f.until(() => a2.c.isLeader && a2.c.status().leader?.term === 2, 3 * leaseMs), "the restarted process leads in term 2");
    assert.equal(await planTerm(), 2);
    // The old leader wakes up 0.6 lease after its last heartbeat (past the
    // twin wait, before its self-fence) and handles its watch backlog first.
    const leaderWrites = aStore.leaderWrites;
    aTime.skew += Math.max(0, aStore.lastMemberWrite + 0.6 * leaseMs - aTime.now());
    faulty.resume();
    assert.ok(await drive(aClock, () => a.error !== undefined, b.realtime), "the old process stops");
    assert.ok(a.error instanceof SplitleaseError && a.error.code === "DUPLICATE_INSTANCE", String(a.error));
    for (let i = 0; i < 60; i++) {
      await aClock.advance(5);
      if (b.realtime) await new Promise((r) => setTimeout(r, 5));
    }
    // (Its guarded delete of the record it wrote, when it sees itself deposed, loses and is allowed.)
    assert.equal(aStore.leaderWrites - leaderWrites, 0, "the old session never wrote the leader record after it woke");
    assert.deepEqual(aStore.writes.filter((w) => w.failed).map((w) => `${w.op} ${w.key}`), [], "no write after DUPLICATE_INSTANCE");
    assert.ok(a2.c.isLeader, "the restarted process still leads");
    assert.equal(await planTerm(), 2, "no term churn");
    // The fleet makes progress under its one leader.
    const w = await f.join({ instance: "w", maxInFlight: 3 });
    assert.ok(await completeUntil(f, [w], () => w.has("allComplete") && a2.has("allComplete")), "the job completes");
    assert.equal(await planTerm(), 2, "still term 2");
  });

  t("H13. a drain whose named successor leaves: the revokes re-listed without it replace it, the releases go to nobody, no attempt charged", async () => {
    await using f = await b.fleet();
    const raw = rawStore(f);
    const plan = finalPlanner(splits(2));
    await standbyLeader(f, plan);
    const bm = await f.join({ instance: "b", maxInFlight: 2 });
    assert.ok(await f.until(() => bm.held.length === 2, 3000), "b holds both splits");
    const c = await f.join({ instance: "c", maxInFlight: 2 });
    const held = bm.c.status().held;
    type Revoke = { id: string; to?: { instance: string } };
    const revokes = async (): Promise<Revoke[]> => {
      const e = await raw.get(keys.assign("b"));
      return e ? (JSON.parse(e.value).revokes as Revoke[]) : [];
    };
    const untilRevokes = async (cond: (rs: Revoke[]) => boolean, what: string) => {
      for (let i = 0; i < 100; i++) {
        if (cond(await revokes())) return;
        await f.advance(2);
      }
      assert.fail(`${what}: ${JSON.stringify(await revokes())}`);
    };
    // b drains; its lanes do not answer yet. The leader names c as successor.
    const drained = bm.c.drain();
    await untilRevokes((rs) => rs.length === 2 && rs.every((r) => r.to?.instance === "c"), "the leader names c as successor");
    // c leaves before b's lanes release: the leader re-lists b's revokes without a successor.
    await c.c.close();
    await untilRevokes((rs) => rs.length === 2 && rs.every((r) => r.to === undefined), "the revokes are re-listed without a successor");
    await f.advance(b.realtime ? 50 : 5); // b applies that record
    await bm.c.release(held.map((h) => h.id));
    await drained;
    await f.advance(f.timings.leaseMs / 2);
    for (const h of held) {
      const rec = await splitRecord(raw, h.id);
      assert.notEqual(rec.owner?.instance, "c", `${h.id} was released to the successor that left`);
      assert.equal(rec.attempts, 0, `${h.id}: a graceful drain charged an attempt`);
      // Released to nobody (the epoch kept), not to c and taken over from it (two epochs on).
      assert.deepEqual({ epoch: rec.epoch, owner: rec.owner }, { epoch: h.epoch, owner: null }, `${h.id} was released to nobody`);
    }
    const d = await f.join({ instance: "d", maxInFlight: 2 });
    assert.ok(await completeUntil(f, [d], () => d.has("allComplete")), "the job completes");
    for (const h of held) assert.equal((await splitRecord(raw, h.id)).attempts, 0, `${h.id}: no attempt charged`);
  });

  t("H13b. a drain's release already on its way to a successor that leaves lands on the departed member: taken over with no attempt charged", async () => {
    await using f = await b.fleet();
    const raw = rawStore(f);
    const plan = finalPlanner(splits(2));
    await standbyLeader(f, plan);
    const bStore = new FaultyStore(await b.extraStore(f));
    const bm = new Member(await SplitCoordinator.join({ store: bStore, job: f.job, instance: "b", clock: f.clock, ...f.timings, maxInFlight: 2 }));
    f.members.push(bm);
    assert.ok(await f.until(() => bm.held.length === 2, 3000), "b holds both splits");
    const c = await f.join({ instance: "c", maxInFlight: 2 });
    const held = bm.c.status().held;
    const namesC = (value: string) => {
      const rs = JSON.parse(value).revokes as { to?: { instance: string } }[];
      return rs.length === 2 && rs.every((r) => r.to?.instance === "c");
    };
    // b itself must have it (its watch delivered it), not only the store: a release made
    // before b applied it goes to nobody, which is H13.
    const bHasIt = bStore.delivered((ev) => ev.type === "put" && ev.key === keys.assign("b") && namesC(ev.value));
    const drained = bm.c.drain();
    let ok = false;
    for (let i = 0; i < 100 && !(ok = bHasIt()); i++) await f.advance(2);
    assert.ok(ok, "the leader names c as successor, and b has it");
    await f.advance(2); // b applies the record it was handed
    // b's releases to c go out but are slow to land; c leaves meanwhile.
    const slow = bStore.hold((op, key) => op === "update" && key.startsWith(keys.splitPrefix));
    const releasing = bm.c.release(held.map((h) => h.id));
    assert.ok(await f.until(() => slow.count() === 2, 1000), "both releases are on their way");
    await c.c.close();
    slow.release();
    await releasing;
    await drained;
    await f.advance(f.timings.leaseMs);
    for (const h of held) {
      const rec = await splitRecord(raw, h.id);
      assert.notEqual(rec.owner?.instance, "c", `${h.id} still names the departed successor`);
      assert.equal(rec.epoch, h.epoch + 2, `${h.id}: released to c, then taken over from it`);
      assert.equal(rec.attempts, 0, `${h.id}: taken over from the successor that left, with an attempt charged`);
    }
    const d = await f.join({ instance: "d", maxInFlight: 2 });
    assert.ok(await completeUntil(f, [d], () => d.has("allComplete")), "the job completes");
    for (const h of held) assert.equal((await splitRecord(raw, h.id)).attempts, 0, `${h.id}: no attempt charged`);
  });

  t("H2. an unreadable leader record (at start, then mid-job) is replaced by CAS and the fleet goes on", async () => {
    await using f = await b.fleet();
    const raw = rawStore(f);
    await raw.create(keys.leader, "{garbage");
    const plan = finalPlanner(splits(4));
    const [x, y] = await f.joinAll([{ instance: "x", planner: plan }, { instance: "y", planner: plan }]);
    assert.ok(await f.until(() => x.held.length + y.held.length === 4, 3000), "a leader was elected and planned");
    const replaced = [x, y].flatMap((m) => m.c.status().invalidRecords.filter((r) => r.replaced));
    assert.ok(replaced.some((r) => r.key === keys.leader), JSON.stringify(replaced));
    assert.equal(x.c.stats().recordsReplaced + y.c.stats().recordsReplaced, 1);
    // Garbage written over the live leader's record mid-job.
    const cur = (await raw.get(keys.leader))!;
    assert.ok((await raw.update(keys.leader, "[1,2", cur.revision)).ok);
    assert.ok(await completeUntil(f, [x, y], () => x.has("allComplete") && y.has("allComplete")), "the job completes");
    assert.ok(x.c.stats().recordsReplaced + y.c.stats().recordsReplaced >= 2);
    const l = (await raw.get(keys.leader))!;
    assert.doesNotThrow(() => JSON.parse(l.value));
  });

  t("H2b. an unreadable plan record (at start, then mid-job) is replaced and the job completes", async () => {
    await using f = await b.fleet();
    const raw = rawStore(f);
    await raw.create(keys.plan, JSON.stringify({ v: 2, term: "three" }));
    const plan = finalPlanner(splits(3));
    const [x] = await f.joinAll([{ instance: "x", planner: plan }]);
    assert.ok(await f.until(() => (x.c.status().plan?.generation ?? 0) > 0, 3000), "planned over the garbage");
    assert.ok(x.c.status().invalidRecords.some((r) => r.key === keys.plan && r.replaced));
    const cur = (await raw.get(keys.plan))!;
    assert.ok((await raw.update(keys.plan, "not json", cur.revision)).ok);
    assert.ok(await completeUntil(f, [x], () => x.has("allComplete")), "the job completes");
    assert.ok(x.c.stats().recordsReplaced >= 2);
  });

  t("H3. duplicate split ids: the plan is refused naming them, and after planAttempts every member stops (planFailed)", async () => {
    await using f = await b.fleet();
    const plan: Planner = () =>
      Promise.resolve({ finality: "final", splits: [...splits(3), { id: "s001", descriptor: 1 }, { id: "s002", descriptor: 2 }] });
    const ms = await f.joinAll(["x", "y"].map((instance) => ({ instance, planner: plan, planAttempts: 2 })));
    assert.ok(await f.until(() => ms.every((m) => m.has("planFailed")), 5000), "every member learns the job failed");
    const ev = ms[0].events.find((e) => e.type === "planFailed") as { error: string; attempts: number };
    assert.match(ev.error, /duplicate split ids: "s001", "s002"/);
    assert.equal(ev.attempts, 2);
    const leader = ms.find((m) => m.c.isLeader);
    assert.match(leader?.c.status().planning?.lastError ?? "", /duplicate/);
    assert.equal(ms.reduce((n, m) => n + m.c.stats().planFailures, 0), 2);
    assert.ok(!ms.some((m) => m.has("allComplete")));
  });

  t("H4b. a descriptor over 256 KiB refuses the plan naming the split before anything is seeded; the next run completes", async () => {
    await using f = await b.fleet();
    let big = true;
    const plan: Planner = () =>
      Promise.resolve({
        finality: "final",
        splits: [...splits(2), { id: "huge", descriptor: big ? "x".repeat(300 * 1024) : "fixed" }],
      });
    const x = await f.join({ instance: "x", planner: plan, planAttempts: 1, maxInFlight: 0 });
    assert.ok(await f.until(() => x.has("planFailed"), 5000), "the job fails");
    const ev = x.events.find((e) => e.type === "planFailed") as { error: string };
    // Named by its split and with what to do, not by the internal key (spec.huge) and a byte count alone.
    assert.match(ev.error, /The descriptor of split "huge" is 300 KiB of JSON \(307202 bytes\); a descriptor may be at most 255 KiB/);
    assert.match(ev.error, /put a reference in the descriptor \(its object key, URL or row range\)/);
    assert.doesNotMatch(ev.error, /spec\.huge/);
    // The whole result is read before anything is seeded (a plan is dealt in weight order).
    for (const id of ["s000", "s001"]) assert.equal(await rawStore(f).get(keys.split(id)), undefined);
    big = false;
    await x.c.abandon();
    const z = await f.join({ instance: "z", planner: plan });
    assert.ok(await completeUntil(f, [z], () => z.has("allComplete"), 4 * f.timings.leaseMs), "the fixed plan completes");
    assert.equal(z.gained().length, 3, "the fixed plan's three");
  });

  t("H4. a throwing planner is retried with backoff; after planAttempts the job fails; a new leader plans again", async () => {
    await using f = await b.fleet();
    let calls = 0;
    let broken = true;
    const when: number[] = [];
    const plan: Planner = () => {
      calls++;
      when.push(f.now());
      return broken ? Promise.reject(new Error("bucket listing denied")) : Promise.resolve({ finality: "final", splits: splits(2) });
    };
    const x = await f.join({ instance: "x", planner: plan, planAttempts: 3 });
    assert.ok(await f.until(() => x.has("planFailed"), 8000), "the job fails after the bound");
    assert.equal(calls, 3);
    // 250 ms, then 500 ms (doubling, ±25% jitter, capped at a lease): not once a lease.
    const gaps = [when[1] - when[0], when[2] - when[1]];
    assert.ok(gaps[0] >= 0.75 * 250 - f.time.slack && gaps[0] <= 1.25 * 250 + f.time.slack, `first retry after ~250 ms: ${gaps.join(", ")}`);
    assert.ok(gaps[1] >= 0.75 * 500 - f.time.slack && gaps[1] <= 1.25 * 500 + f.time.slack, `second after ~500 ms: ${gaps.join(", ")}`);
    // A restart retries: a new process (a new leader term) plans again.
    broken = false;
    await x.c.abandon();
    const z = await f.join({ instance: "z", planner: plan });
    assert.ok(await completeUntil(f, [z], () => z.has("allComplete"), 4 * f.timings.leaseMs), "the restarted fleet completes");
    assert.ok(!z.has("planFailed"), "a member that joins a failed job waits for the next plan instead of stopping");
  });

  t("H4c. a planner whose result is no plan (finality missing, splits not iterable) fails like a throw, naming the field and the fix; the plan record is never written with it", async () => {
    await using f = await b.fleet();
    const raw = rawStore(f);
    let writes = 0;
    const counting = raw.watch(keys.plan);
    void (async () => {
      for await (const ev of counting) if (ev.type === "put") writes++;
    })().catch(() => {});
    // `final: true` where the result wants `finality: "final"`: before the check, the published
    // record was refused by the job's own schema, "repaired" and planned again, ~250 writes a second.
    const plan = (() => Promise.resolve({ splits: splits(1), final: true })) as unknown as Planner;
    const x = await f.join({ instance: "x", planner: plan, planAttempts: 2 });
    assert.ok(await f.until(() => x.has("planFailed"), 8000), "the job fails after planAttempts");
    const failed = x.events.find((e) => e.type === "planFailed") as { error: string };
    assert.match(failed.error, /finality undefined \(it has `final`: write finality: "final"\)/);
    await f.advance(2 * f.timings.leaseMs);
    await counting.stop();
    assert.ok(writes <= 4, `the plan record was written ${writes} times (its creation, the term, the outcome)`);
    const bad = (() => Promise.resolve({ splits: 5, finality: "final" })) as unknown as Planner;
    await x.c.abandon();
    const y = await f.join({ instance: "y", planner: bad, planAttempts: 1 });
    assert.ok(await f.until(() => y.has("planFailed"), 8000));
    assert.match((y.events.find((e) => e.type === "planFailed") as { error: string }).error, /splits 5: it must be an array or an \(async\) iterable/);
  });

  t("H5. a spec read that answers before the spec exists does not quarantine a healthy split", async () => {
    let misses = 2;
    class Lagging extends FaultyStore {
      override async get(key: string): Promise<StoreEntry | undefined> {
        if (key.startsWith(keys.specPrefix) && misses > 0) {
          misses--;
          return undefined; // a lagging replica: the spec is not there yet
        }
        return await super.get(key);
      }
    }
    await using f = await b.fleet((s) => new Lagging(s));
    const big = "x".repeat(4000); // over the inline limit: the descriptor goes to spec.<id>
    const plan = finalPlanner([{ id: "big", descriptor: { big } }]);
    const x = await f.join({ instance: "x", planner: plan });
    assert.ok(await f.until(() => x.held.length === 1, 3000), "the split is gained despite the lagging reads");
    assert.equal(misses, 0);
    const g = x.gained()[0];
    assert.deepEqual(g.split.descriptor, { big });
    assert.equal((await splitRecord(rawStore(f), "big")).attempts, 0, "never charged as poison");
    assert.ok(!x.has("quarantined"));
  });

  t("H5b. a spec that stays missing: handed back with growing backoff, never charged, visible in status and the failure history", async () => {
    // When each claim of the split was sent: a write of its record naming x. (Told from the spec
    // reads by their spacing, a claim's re-reads delayed by a loaded machine looked like new claims.)
    const claims: number[] = [];
    let f!: Fleet;
    const claimed = (key: string, value: string) => {
      if (key === keys.split("big") && (JSON.parse(value) as { owner: { instance: string } | null }).owner?.instance === "x") claims.push(f.now());
    };
    class Missing extends FaultyStore {
      override async get(key: string): Promise<StoreEntry | undefined> {
        if (key.startsWith(keys.specPrefix)) return undefined; // gone for good (an operator deleted it, a bug)
        return await super.get(key);
      }
      override create(key: string, value: string) {
        claimed(key, value);
        return super.create(key, value);
      }
      override update(key: string, value: string, revision: number) {
        claimed(key, value);
        return super.update(key, value, revision);
      }
    }
    f = await b.fleet((s) => new Missing(s));
    await using _ = f;
    const plan = finalPlanner([{ id: "big", descriptor: { big: "x".repeat(4000) } }]);
    const x = await f.join({ instance: "x", planner: plan, retryBackoffMs: 200, retryBackoffMaxMs: 800 });
    let retrying = false;
    assert.ok(
      await f.until(() => {
        retrying ||= (x.c.status().retrying ?? []).some((r) => r.id === "big");
        return claims.length >= 5;
      }, 20_000, 5),
      `the split is claimed again and again (${claims.length} claims)`,
    );
    const rec = await splitRecord(rawStore(f), "big");
    assert.equal(rec.attempts, 0, "a missing spec is never charged as poison");
    assert.notEqual(rec.status, "quarantined");
    assert.match(rec.failures?.at(-1)?.message ?? "", /Spec record "spec\.big" is missing \(handed back, no attempt charged\)/);
    assert.ok(retrying, "the waiting split shows in status().retrying");
    // Between claims: the re-reads (520 ms) plus a backoff from 200 ms doubling to the 800 ms cap, ±25%.
    const gaps = claims.slice(1).map((t, i) => t - claims[i]);
    gaps.forEach((g, i) => {
      const backoff = Math.min(800, 0.75 * 200 * 2 ** i);
      assert.ok(g >= 520 + backoff - f.time.slack, `gap ${i}: ${g} ms of ${gaps.join(", ")}`);
    });
    assert.ok(!x.has("quarantined"));
  });

  t("H10. a failing split is retried with exponential backoff, then quarantined", async () => {
    await using f = await b.fleet();
    const x = await f.join({ instance: "x", planner: finalPlanner([{ id: "poison", descriptor: null }]), maxAttempts: 4 });
    const gains: number[] = [];
    const failing = new Set<number>();
    assert.ok(await f.until(() => {
      for (const h of x.c.status().held) {
        if (failing.has(h.epoch)) continue;
        failing.add(h.epoch);
        gains.push(f.now());
        void x.c.fail(h.id, h.epoch, "boom").catch(() => {});
      }
      return x.has("stalled");
    }, 8000, 5));
    assert.equal(gains.length, 4);
    const { retryBackoffMs } = f.timings;
    const gaps = gains.slice(1).map((t, i) => t - gains[i]);
    // Attempt n waits retryBackoffMs × 2^(n-1), ±25%.
    gaps.forEach((g, i) => assert.ok(g >= 0.75 * retryBackoffMs * 2 ** i - 5, `gap ${i}: ${g} ms of ${gaps.join(", ")}`));
    assert.ok(gaps[2] > gaps[0], `backoff grows: ${gaps.join(", ")}`);
  });

  t("H11. a standby (maxInFlight 0) holds nothing, gets no offers and reports the job's outcome", async () => {
    await using f = await b.fleet();
    const plan = finalPlanner(splits(3));
    const [w, s] = await f.joinAll([{ instance: "w", planner: plan }, { instance: "s", planner: plan, maxInFlight: 0 }]);
    assert.ok(await completeUntil(f, [w], () => w.has("allComplete") && s.has("allComplete")));
    assert.equal(s.gained().length, 0);
    assert.equal(w.gained().length, 3);
  });
}
