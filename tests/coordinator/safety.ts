// Safety rules of docs/DESIGN.md that only a constructed interleaving
// reaches (issue 14), defined once and run on every backend. Each scenario
// names the mutant of scripts/mutants.mjs it kills (`npm run mutate`).
import assert from "node:assert/strict";
import { SplitCoordinator, FencedError, SplitleaseError } from "../../mod.ts";
import type { Planner, Store } from "../../mod.ts";
import { cancelSplit, type PlanRecord, keys } from "../../admin.ts";
import { AssignRecordSchema, decodeRecord, encodeRecord, LeaderRecordSchema, PlanRecordSchema, SplitRecordSchema } from "../../src/records.ts";
import { FaultyStore } from "./faulty_store.ts";
import { type Backend, finalPlanner, type Fleet, Member, rawStore, splits } from "./fleet.ts";
import { liveRecord, splitRecord } from "./scenarios.ts";

/** A final planner that answers only once `open()` is called; `calls()` counts its calls. */
export function heldPlanner(list: ReturnType<typeof splits>): { planner: Planner; open: () => void; calls: () => number } {
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  let n = 0;
  return {
    planner: () => {
      n++;
      return gate.then(() => ({ splits: list, finality: "final" as const }));
    },
    open,
    calls: () => n,
  };
}

/** Every version of the plan record a watch delivers (term, generation), until `stop()`. */
export function recordPlans(store: Store): { seen: { term: number; generation: number; revision: number }[]; stop: () => Promise<void> } {
  const w = store.watch(keys.plan);
  const seen: { term: number; generation: number; revision: number }[] = [];
  void (async () => {
    for await (const ev of w) {
      if (ev.type !== "put") continue;
      const p: PlanRecord = decodeRecord(ev.key, ev.value, PlanRecordSchema);
      seen.push({ term: p.term, generation: p.generation, revision: ev.revision });
    }
  })();
  return { seen, stop: () => w.stop() };
}

/** Asserts that no version of the plan record went back in term or generation. */
export function assertPlansMonotonic(seen: { term: number; generation: number; revision: number }[]): void {
  for (let i = 1; i < seen.length; i++) {
    const [a, b] = [seen[i - 1], seen[i]];
    assert.ok(
      b.term >= a.term && b.generation >= a.generation,
      `the plan record went back from term ${a.term} generation ${a.generation} (r${a.revision}) to term ${b.term} generation ${b.generation} (r${b.revision})`,
    );
  }
}

/** Whether a split record's JSON names `instance` as its owner. */
function ownedBy(value: string, instance: string): boolean {
  return (JSON.parse(value) as { owner?: { instance?: string } | null }).owner?.instance === instance;
}

/**
 * Counts the split writes that lose their CAS through it; past `limit` it
 * stops answering them (a hot loop of losing writes would otherwise never
 * yield to the test).
 */
class LostWrites extends FaultyStore {
  lost = 0;
  constructor(inner: Store, readonly limit = 1000) {
    super(inner);
  }
  override async update(key: string, value: string, revision: number) {
    if (this.lost >= this.limit && key.startsWith(keys.splitPrefix)) return await new Promise<never>(() => {});
    const r = await super.update(key, value, revision);
    if (!r.ok && key.startsWith(keys.splitPrefix)) this.lost++;
    return r;
  }
}

/**
 * Counts the creates of the `leader` record made through it; past `limit`
 * it stops answering them (an election loop would otherwise never yield to
 * a test on the manual clock).
 */
class LeaderCreates extends FaultyStore {
  creates = 0;
  constructor(inner: Store, readonly limit = 20) {
    super(inner);
  }
  override async create(key: string, value: string) {
    if (key !== keys.leader) return await super.create(key, value);
    if (++this.creates > this.limit) return await new Promise<never>(() => {});
    return await super.create(key, value);
  }
}

/**
 * A standby (maxInFlight 0) that joins over its own store (usually a
 * fault-injecting wrapper), plans `n` splits and leads; waits until it has
 * published the plan unless `wait` is false.
 */
async function standbyLeader(f: Fleet, store: Store, n: number, wait = true): Promise<Member> {
  const lead = new Member(
    await SplitCoordinator.join({ store, job: f.job, instance: "lead", clock: f.clock, planner: finalPlanner(splits(n)), maxInFlight: 0, ...f.timings }),
  );
  f.members.push(lead);
  if (wait) assert.ok(await f.until(() => lead.c.isLeader && (lead.c.status().plan?.generation ?? 0) > 0, 3000), "the standby leads and plans");
  return lead;
}

export function safetyScenarios(b: Backend): void {
  const t = (name: string, fn: () => Promise<void>) => Deno.test({ name: `${b.name}: ${name}`, fn, sanitizeOps: false, sanitizeResources: false });

  // Kills forced-release-keeps-withdrawn-successor: a forced release retried after a conflict goes to
  // whom the latest assignment record names; its tenancy has ended, so only the release sees that record.
  t("S16. a forced release retried after a conflict goes to nobody once the leader withdrew the revoke (its successor left)", async () => {
    await using f = await b.fleet();
    const raw = rawStore(f);
    await standbyLeader(f, await b.extraStore(f), 2);
    const aStore = new FaultyStore(await b.extraStore(f));
    const a = new Member(await SplitCoordinator.join({ store: aStore, job: f.job, instance: "a", clock: f.clock, maxInFlight: 2, ...f.timings }));
    f.members.push(a);
    assert.ok(await f.until(() => a.held.length === 2, 3000), "a holds both splits");
    const bee = await f.join({ instance: "b", maxInFlight: 2 });
    await f.advance(50); // the leader sees b
    const draining = a.c.drain(); // the leader revokes a's splits, naming b
    draining.catch(() => {});
    assert.ok(await f.until(() => a.has("revokeRequested"), 3000), "the leader revokes a's splits for b");
    const id = (a.events.find((e) => e.type === "revokeRequested") as { splitId: string }).splitId;
    const revokeOf = async () => {
      const e = (await raw.get(keys.assign("a")))!;
      return decodeRecord(e.key, e.value, AssignRecordSchema).revokes.find((r) => r.id === id);
    };
    // The leader names b once it has seen b's member record (on a loaded real store, maybe a pass after the revoke).
    let named = false;
    for (let i = 0; i < 60 && !named; i++) {
      named = (await revokeOf())?.to?.instance === "b";
      if (!named) await f.advance(50);
    }
    assert.ok(named, `the revoke names b: ${JSON.stringify(await revokeOf())}`);
    // a's forced release is slow to reach the store.
    const parked = aStore.hold((op, key) => op === "update" && key === keys.split(id));
    const forcing = a.c.declineRevocation(id);
    assert.ok(await f.until(() => parked.count() === 1, 1000), "the forced release is on its way");
    // b leaves: the leader no longer names it in a's assignment record, and a applies that record.
    await bee.c.close();
    let withdrawn = false;
    for (let i = 0; i < 60 && !withdrawn; i++) {
      withdrawn = (await revokeOf())?.to?.instance !== "b";
      if (!withdrawn) await f.advance(50);
    }
    assert.ok(withdrawn, "the leader withdraws b as the successor");
    await f.advance(50);
    // A write of a's own lands before the parked release (still a's, same epoch): the release conflicts and retries.
    const cur = (await raw.get(keys.split(id)))!;
    const rec = decodeRecord(cur.key, cur.value, SplitRecordSchema);
    assert.ok((await raw.update(cur.key, encodeRecord({ ...rec, progress: { watermark: 5 } }), cur.revision)).ok);
    parked.release();
    await forcing;
    const after = await splitRecord(raw, id);
    // Released to nobody: no new epoch, and no tenancy of b in its history (the leader would take it back from b).
    assert.equal(after.epoch, rec.epoch, `the retried release opened an epoch: ${JSON.stringify(after.tenancies)}`);
    assert.ok(!after.tenancies?.some((x) => x.owner === "b"), `the retried release went to b, which had left: ${JSON.stringify(after.tenancies)}`);
  });

  // Kills commit-lower-watermark: the lane's own check is bypassed (the coordinator is called directly).
  t("S1. a commit below the committed watermark is refused by the coordinator; the record keeps the higher one", async () => {
    await using f = await b.fleet();
    const x = await f.join({ instance: "x", planner: finalPlanner(splits(2)) });
    assert.ok(await f.until(() => x.held.length === 2, 3000), "x holds both splits");
    const [h, g] = x.c.status().held;
    await x.c.commit(h.id, h.epoch, { watermark: 10, state: { at: "ten" } });
    await assert.rejects(
      () => x.c.commit(h.id, h.epoch, { watermark: 5 }),
      (e: unknown) => e instanceof SplitleaseError && e.code === "INVALID_ARGUMENT" && /regress from 10 to 5/.test(e.message),
    );
    assert.deepEqual((await liveRecord(rawStore(f), h.id)).progress, { watermark: 10, state: { at: "ten" } });
    // String watermarks compare the same way; a type change is refused too.
    await x.c.commit(g.id, g.epoch, { watermark: "k-0200" });
    await assert.rejects(() => x.c.commit(g.id, g.epoch, { watermark: "k-0100" }), /regress/);
    await assert.rejects(() => x.c.commit(g.id, g.epoch, { watermark: 300 }), /Watermark type changed/);
    assert.deepEqual((await liveRecord(rawStore(f), g.id)).progress, { watermark: "k-0200" });
    // The refusals cost nothing: the tenancy goes on and completes.
    assert.deepEqual(x.lost(), []);
    await x.c.commit(h.id, h.epoch, { watermark: 11 }, { final: true });
    await x.c.commit(g.id, g.epoch, { watermark: "k-0300" }, { final: true });
    assert.ok(await f.until(() => x.has("allComplete"), 3000));
  });

  // Kills completion-without-listing: the view alone must never decide while the store holds more than it shows.
  t("S2. completion: the leader's view says done while the store holds a runnable split its watch has not delivered; no outcome until it is finished", async () => {
    await using f = await b.fleet();
    const raw = rawStore(f);
    const lStore = new FaultyStore(await b.extraStore(f));
    const lead = await standbyLeader(f, lStore, 3);
    const w = await f.join({ instance: "w" });
    assert.ok(await f.until(() => w.held.length === 3, 3000), "w holds the three splits");
    const [h1, h2, h3] = w.c.status().held;
    await w.c.commit(h1.id, h1.epoch, { watermark: 1 }, { final: true });
    await w.c.commit(h2.id, h2.epoch, { watermark: 1 }, { final: true });
    assert.ok(await f.until(() => lead.c.status().counts.completed === 2, 2000), "the leader saw two completions");
    // The leader's split watch lags from here (in order): the last completion, then a split record
    // created after it (an operator's, or a seed whose event is late).
    const lag = lStore.withhold((key) => key.startsWith(keys.splitPrefix));
    await w.c.commit(h3.id, h3.epoch, { watermark: 1 }, { final: true });
    const extra = JSON.stringify({ v: 2, epoch: 0, status: "runnable", owner: null, attempts: 0, weight: 1, progress: null, descriptor: null });
    assert.ok((await raw.create(keys.split("extra"), extra)).ok);
    await f.advance(50);
    assert.equal(lag.count(), 2, "the leader's watch holds the last completion and the new split");
    // The watch catches up part of the way: the leader's view is complete, the store is not.
    lag.release(1);
    await f.until(() => lead.has("allComplete") || w.has("allComplete"), 2 * f.timings.leaseMs);
    assert.equal(lead.c.status().counts.completed, 3, "the leader's view shows every planned split completed");
    assert.ok(!lead.has("allComplete") && !w.has("allComplete"), "allComplete announced while split.extra is runnable in the store");
    assert.equal((await splitRecord(raw, "extra")).status, "runnable");
    // The rest arrives: the split is offered, finished, and only then is the job complete.
    lag.release();
    const done = new Set<string>();
    const finish = () => {
      for (const h of w.c.status().held) {
        if (done.has(`${h.id}@${h.epoch}`)) continue;
        done.add(`${h.id}@${h.epoch}`);
        void w.c.commit(h.id, h.epoch, { watermark: 1 }, { final: true }).catch(() => {});
      }
    };
    assert.ok(await f.until(() => (finish(), lead.has("allComplete") && w.has("allComplete")), 3000), "the job completes once every split is finished");
    assert.equal((await splitRecord(raw, "extra")).status, "completed");
  });

  // Kills publish-fresh-revision and deposed-leader-keeps-leading.
  t("S3. a deposed leader's late publish loses its CAS (term and generation never go back), and it steps down on the newer term", async () => {
    await using f = await b.fleet();
    const raw = rawStore(f);
    const plans = recordPlans(raw);
    const aStore = new FaultyStore(await b.extraStore(f));
    const held = heldPlanner(splits(4));
    const a = new Member(
      await SplitCoordinator.join({ store: aStore, job: f.job, instance: "a", clock: f.clock, planner: held.planner, maxInFlight: 0, ...f.timings }),
    );
    f.members.push(a);
    assert.ok(await f.until(() => a.c.isLeader && held.calls() === 1, 3000), "a leads and its planner is running");
    // A stops seeing the store change (a paused process) and its leader beats stop landing,
    // but its member heartbeats go on: only the leader role is lost, not the process.
    aStore.pause();
    const beats = aStore.fail((op, key) => op !== "get" && key === keys.leader);
    const assigns = aStore.hold((_op, key) => key.startsWith(keys.assignPrefix));
    const bee = await f.join({ instance: "b", planner: finalPlanner(splits(4)), maxInFlight: 0 });
    assert.ok(await f.until(() => bee.c.isLeader && (bee.c.status().plan?.generation ?? 0) === 1, 4 * f.timings.leaseMs), "b takes over and publishes");
    const published = (await raw.get(keys.plan))!;
    const newer = decodeRecord(keys.plan, published.value, PlanRecordSchema);
    assert.ok(newer.term >= 2, `b bumped the term (plan ${published.value})`);
    assert.ok(a.c.isLeader, "a has not noticed yet (its watches are paused)");
    // A's planner returns now: it seeds (no-ops) and publishes at the revision it read before planning.
    held.open();
    await f.advance(200);
    const now = (await raw.get(keys.plan))!;
    assert.equal(now.revision, published.revision, `the deposed leader's publish landed: ${now.value}`);
    assert.equal(a.c.status().planning?.lastError, undefined, "a lost CAS is not a planning failure");
    // A sees the newer term: it stops leading at once (its leader beats still fail, its assignment writes are parked).
    aStore.resume();
    assert.ok(await f.until(() => !a.c.isLeader, 200), "a keeps leading after seeing a newer plan term");
    beats.stop();
    assigns.release();
    assert.ok(bee.c.isLeader);
    await f.advance(50);
    await plans.stop();
    assert.ok(plans.seen.length >= 3, JSON.stringify(plans.seen));
    assertPlansMonotonic(plans.seen);
  });

  // Kills takeover-stale-view-spins: a takeover over a record that moved past the leader's lagging view must bring the view up to date, not try again on it.
  t("S5. a takeover against a lagging view reads the record, writes nothing over the one that moved and catches up: the split moves once", async () => {
    await using f = await b.fleet();
    const lStore = new LostWrites(await b.extraStore(f));
    const lead = await standbyLeader(f, lStore, 1);
    const claimSeen = lStore.delivered((ev) => ev.type === "put" && ev.key === keys.split("s000") && ownedBy(ev.value, "a"));
    const a = await f.join({ instance: "a" });
    assert.ok(await f.until(() => a.held.length === 1, 3000), "a holds the split");
    // The leader's view must have the claim before its watch stops: else a is no owner in it.
    assert.ok(await f.until(claimSeen, 3000), "the leader's watch delivered a's claim");
    // The leader's split watch stops delivering; the record moves (a write the
    // leader does not see: rewritten as it is) and a commits, then crashes.
    const withheld = lStore.withhold((key) => key === keys.split("s000"));
    const h = a.c.status().held[0];
    await a.c.commit(h.id, h.epoch, { watermark: 5 });
    await moveOn(rawStore(f), "s000");
    await a.c.abandon();
    const w = await f.join({ instance: "w" });
    // Its split watch still withholds the record: only the takeover's own read can have caught the view up.
    assert.ok(await f.until(() => w.held.length === 1, 3 * f.timings.leaseMs), "the split is taken over once the view caught up");
    assert.ok(lStore.lost <= 1, `the leader wrote ${lStore.lost} losing takeovers on a view it did not update`);
    assert.deepEqual(w.gained()[0].progress, { watermark: 5 });
    withheld.release();
    const rec = await splitRecord(rawStore(f), "s000");
    assert.equal(rec.attempts, 1, "one takeover, one attempt");
  });

  // Kills fence-stale-view-spins: the fence of a deaf owner over a record that moved past the leader's lagging view must catch the view up, not try again on it for ever.
  t("S5b. a deaf owner's fence against a lagging view reads the record, writes nothing over the one that moved and catches up: the fence lands once", async () => {
    await using f = await b.fleet();
    const lStore = new LostWrites(await b.extraStore(f));
    const lead = await standbyLeader(f, lStore, 3);
    const aStore = new FaultyStore(await b.extraStore(f));
    const claims = ["s000", "s001", "s002"].map((id) =>
      lStore.delivered((ev) => ev.type === "put" && ev.key === keys.split(id) && ownedBy(ev.value, "a"))
    );
    const a = new Member(await SplitCoordinator.join({ store: aStore, job: f.job, instance: "a", clock: f.clock, ...f.timings }));
    f.members.push(a);
    assert.ok(await f.until(() => a.held.length === 3, 3000), "a holds the three splits (of its eight lanes)");
    assert.ok(await f.until(() => claims.every((seen) => seen()), 3000), "the leader's watch delivered a's claims");
    // A stays alive but hears nothing (no revocation reaches it); the leader's split watch lags.
    aStore.pause();
    const withheld = lStore.withhold((key) => key.startsWith(keys.splitPrefix));
    const c = await f.join({ instance: "c", maxInFlight: 2 });
    // Meanwhile a commits every split it holds and each record moves on past the leader's view.
    for (const h of a.c.status().held) {
      await a.c.commit(h.id, h.epoch, { watermark: 7 });
      await moveOn(rawStore(f), h.id);
    }
    const { drainDeadlineMs, leaseMs } = f.timings;
    // The leader's split watch still withholds the records: only the fence's own read can have caught the view up.
    assert.ok(await f.until(() => c.held.length === 1, drainDeadlineMs + 3 * leaseMs), "the fence lands once the view caught up: c gets the split");
    assert.ok(lStore.lost <= 1, `the leader wrote ${lStore.lost} losing fences on a view it did not update`);
    withheld.release();
    assert.deepEqual(c.gained()[0].progress, { watermark: 7 });
    aStore.resume();
    void lead;
  });

  // Kills forced-release-after-move: a forced release that loses its CAS must not retry over another owner's record.
  t("S6. a forced release that loses its CAS to a newer owner writes nothing over it", async () => {
    await using f = await b.fleet();
    const raw = rawStore(f);
    const aStore = new FaultyStore(await b.extraStore(f));
    const a = new Member(
      await SplitCoordinator.join({ store: aStore, job: f.job, instance: "a", clock: f.clock, planner: finalPlanner(splits(1)), ...f.timings }),
    );
    f.members.push(a);
    assert.ok(await f.until(() => a.held.length === 1, 3000), "a holds the split");
    const h = a.c.status().held[0];
    await a.c.commit(h.id, h.epoch, { watermark: 3 });
    // A's forced release is slow to reach the store; meanwhile the split moves on to another owner (as a takeover would).
    const parked = aStore.hold((op, key) => op === "update" && key === keys.split(h.id));
    const forcing = a.c.declineRevocation(h.id);
    assert.ok(await f.until(() => parked.count() === 1, 1000), "the forced release is on its way");
    const bee = await f.join({ instance: "b" });
    const cur = (await raw.get(keys.split(h.id)))!;
    const rec = decodeRecord(cur.key, cur.value, SplitRecordSchema);
    const moved = { ...rec, epoch: rec.epoch + 1, owner: { instance: "b", session: bee.c.session }, attempts: rec.attempts + 1 };
    const w = await raw.update(cur.key, JSON.stringify(moved), cur.revision);
    assert.ok(w.ok);
    parked.release();
    await forcing;
    await f.advance(50);
    const after = (await raw.get(keys.split(h.id)))!;
    assert.equal(after.revision, w.ok ? w.revision : -1, `the forced release wrote over the new owner's record: ${after.value}`);
    assert.deepEqual(a.lost().map((l) => l.reason), ["revoked"]);
    assert.ok(await f.until(() => bee.held.length === 1, 1000), "the new owner holds the split");
  });

  // Kills heldby-ignores-status: a split an operator cancelled under its owner is finished; the owner's completion writes nothing.
  t("S7. a split cancelled by an operator while held: the owner's completion (after a hand edit) and its next progress commit (after `cancelSplit`) are fenced and write nothing", async () => {
    await using f = await b.fleet();
    const raw = rawStore(f);
    // The leader does not see the cancel yet (it would tell the owner to drop the split first).
    const lStore = new FaultyStore(await b.extraStore(f));
    const lead = await standbyLeader(f, lStore, 2, false);
    const x = await f.join({ instance: "x" });
    assert.ok(await f.until(() => x.held.length === 2, 3000), "x holds both splits");
    const [h, g] = x.c.status().held;
    await x.c.commit(h.id, h.epoch, { watermark: 4 });
    // Neither cancel reaches the leader: no drop stops the owner first.
    const withheld = lStore.withhold((key) => key === keys.split(h.id) || key === keys.split(g.id));
    // The operator's edit: only the status changes (the owner stays named).
    const cur = (await raw.get(keys.split(h.id)))!;
    const rec = decodeRecord(cur.key, cur.value, SplitRecordSchema);
    const w = await raw.update(cur.key, JSON.stringify({ ...rec, status: "cancelled" }), cur.revision);
    assert.ok(w.ok);
    await assert.rejects(() => x.c.commit(h.id, h.epoch, { watermark: 5 }, { final: true }), FencedError);
    const after = (await raw.get(keys.split(h.id)))!;
    assert.equal(after.revision, w.ok ? w.revision : -1, `a completion landed on a cancelled split: ${after.value}`);
    assert.ok(x.lost().some((l) => l.splitId === h.id), "the owner lost the cancelled split");
    // The operator's action (not a hand edit) also fences the split's progress record: the owner's next commit there is refused.
    await x.c.commit(g.id, g.epoch, { watermark: 2 });
    const progBefore = (await raw.get(keys.prog(g.id)))!;
    assert.equal((await cancelSplit(raw, g.id)).outcome, "cancelled");
    await assert.rejects(() => x.c.commit(g.id, g.epoch, { watermark: 3 }), FencedError);
    const progAfter = (await raw.get(keys.prog(g.id)))!;
    assert.ok(progAfter.revision > progBefore.revision && !progAfter.value.includes('"watermark":3'), `a progress commit landed on a cancelled split: ${progAfter.value}`);
    withheld.release();
  });

  // Kills grant-without-heldby: nothing in an assignment record is trusted; a grant starts only on a record that names us.
  t("S8. a grant for a split whose record names another owner is ignored (no tenancy, no write)", async () => {
    await using f = await b.fleet();
    const raw = rawStore(f);
    const lead = await f.join({ instance: "lead", planner: finalPlanner(splits(1)), maxInFlight: 0 });
    assert.ok(await f.until(() => lead.c.isLeader && (lead.c.status().plan?.generation ?? 0) > 0, 3000), "the standby leads and plans");
    const a = await f.join({ instance: "a" });
    assert.ok(await f.until(() => a.held.length === 1, 3000), "a holds the split");
    const m = await f.join({ instance: "m" });
    await f.advance(50);
    const s = (await raw.get(keys.split("s000")))!;
    const rec = decodeRecord(s.key, s.value, SplitRecordSchema);
    // An assignment record for m (current term, m's session) granting it a split that a holds:
    // a deposed leader's, a corrupted or a hand-edited one; the split record is read, not inlined.
    const cur = await raw.get(keys.assign("m"));
    const term = lead.c.status().plan!.term;
    const forged = JSON.stringify({
      v: 2, term, session: m.c.session, seq: 1_000_000, offers: [], grants: [{ id: "s000", epoch: rec.epoch, rev: s.revision }], revokes: [], drops: [],
    });
    assert.ok((cur ? await raw.update(cur.key, forged, cur.revision) : await raw.create(keys.assign("m"), forged)).ok);
    await f.advance(100);
    assert.deepEqual(m.gained().map((g) => g.split.id), [], "m started a split whose record names a");
    assert.deepEqual(m.held, []);
    assert.equal((await raw.get(keys.split("s000")))!.revision, s.revision, "nothing was written to the split");
    assert.deepEqual(a.held, ["s000"]);
  });

  // Kills grant-while-not-taking-work: a member that is leaving never starts a grant.
  t("S9. a grant that reaches a member while it closes is not started", async () => {
    await using f = await b.fleet();
    const raw = rawStore(f);
    const lead = await f.join({ instance: "lead", planner: finalPlanner(splits(1)), maxInFlight: 0 });
    assert.ok(await f.until(() => lead.c.isLeader && (lead.c.status().plan?.generation ?? 0) > 0, 3000), "the standby leads and plans");
    const a = await f.join({ instance: "a" });
    assert.ok(await f.until(() => a.held.length === 1, 3000), "a holds the split");
    const cStore = new FaultyStore(await b.extraStore(f));
    const c = new Member(await SplitCoordinator.join({ store: cStore, job: f.job, instance: "c", clock: f.clock, ...f.timings }));
    f.members.push(c);
    await f.advance(50);
    // c closes; its last step (deleting its member record) is slow.
    const leaving = cStore.hold((op, key) => op === "delete" && key === keys.member("c"));
    const closing = c.c.close();
    assert.ok(await f.until(() => leaving.count() === 1, 2000), "c is leaving");
    // Meanwhile the split is opened for c (a handoff or takeover decided before the leader saw c leave).
    const s = (await raw.get(keys.split("s000")))!;
    const rec = decodeRecord(s.key, s.value, SplitRecordSchema);
    const opened = { ...rec, epoch: rec.epoch + 1, owner: { instance: "c", session: c.c.session } };
    assert.ok((await raw.update(s.key, JSON.stringify(opened), s.revision)).ok);
    await f.advance(100);
    assert.deepEqual(c.gained().map((g) => g.split.id), [], "c started a split while closing");
    leaving.release();
    await closing;
  });

  // Kills takeover-no-reread: a leader whose member watch lags must re-read a member it judges dead before taking its splits.
  t("S10. a leader whose member watch stops delivering does not take over a live member: the re-read finds its record moving", async () => {
    await using f = await b.fleet();
    const lStore = new FaultyStore(await b.extraStore(f));
    const lead = await standbyLeader(f, lStore, 1);
    const a = await f.join({ instance: "a" });
    assert.ok(await f.until(() => a.held.length === 1, 3000), "a holds the split");
    const before = await splitRecord(rawStore(f), "s000");
    // The leader's watch stops delivering a's heartbeats; a keeps beating (it is alive).
    const withheld = lStore.withhold((key) => key === keys.member("a"));
    await f.advance(3 * f.timings.leaseMs);
    assert.ok(withheld.count() >= 3, `a beat meanwhile (${withheld.count()} heartbeats withheld from the leader)`);
    const rec = await splitRecord(rawStore(f), "s000");
    assert.equal(rec.epoch, before.epoch, "the split never changed hands");
    assert.equal(rec.attempts, 0, "nothing charged");
    assert.deepEqual(a.lost(), [], "a kept its split");
    withheld.release();
  });

  // Kills election-reread-current: the re-read must find the revision judged silent, not the one the watch shows now.
  t("S4. an election's re-read that finds the leader moved stands down, even when its watch caught up meanwhile", async () => {
    await using f = await b.fleet();
    const plan = finalPlanner(splits(2));
    const lead = await f.join({ instance: "lead", planner: plan, maxInFlight: 0 });
    assert.ok(await f.until(() => lead.c.isLeader && (lead.c.status().plan?.generation ?? 0) > 0, 3000), "lead leads");
    const mStore = new FaultyStore(await b.extraStore(f));
    const m = new Member(
      await SplitCoordinator.join({ store: mStore, job: f.job, instance: "m", clock: f.clock, planner: plan, maxInFlight: 0, ...f.timings }),
    );
    f.members.push(m);
    await f.advance(50);
    // M's watch lags (the leader looks silent to it); its re-read before deposing is held.
    mStore.pause();
    const read = mStore.hold((op, key) => op === "get" && key === keys.leader);
    assert.ok(await f.until(() => read.count() === 1, 3 * f.timings.leaseMs), "m judges the leader silent and re-reads it");
    const before = (await rawStore(f).get(keys.leader))!;
    // The watch catches up first (M's liveness now shows the latest revision), then the re-read returns it.
    mStore.resume();
    await f.advance(1);
    read.release();
    await f.advance(100);
    assert.ok(lead.c.isLeader, "the live leader was deposed");
    assert.ok(!m.c.isLeader, "m won an election over a live leader");
    const after = decodeRecord(keys.leader, (await rawStore(f).get(keys.leader))!.value, LeaderRecordSchema);
    assert.equal(after.instance, "lead", `leader record ${before.value} -> ${JSON.stringify(after)}`);
  });

  // Kills election-lost-create-spins: a lost election must teach the loser the winner's record.
  t("S11. a candidate whose leader watch never delivers loses the election's create once, reads the winner and waits a lease", async () => {
    await using f = await b.fleet();
    const lead = await standbyLeader(f, await b.extraStore(f), 2);
    const cStore = new LeaderCreates(await b.extraStore(f));
    const lag = cStore.withhold((key) => key === keys.leader); // to c's watch there is no leader at all
    const c = new Member(
      await SplitCoordinator.join({ store: cStore, job: f.job, instance: "c", clock: f.clock, planner: finalPlanner(splits(2)), maxInFlight: 0, ...f.timings }),
    );
    f.members.push(c);
    await f.advance(f.timings.leaseMs / 2);
    assert.equal(cStore.creates, 1, `c tried to create the leader record ${cStore.creates} times in half a lease (one election, lost)`);
    assert.ok(lead.c.isLeader && !c.c.isLeader, "the leader stays, c follows");
    assert.equal(c.c.status().leader?.instance, "lead", "c learned the winner from its read");
    lag.release();
  });

  /**
   * A standby leads and plans one split, member m holds it; then an
   * assignment record for m is written by hand (what a deposed leader, a
   * stale replica or a corrupted write would put there) with `patch` over
   * the current term, m's session, no offers or grants. Answers what m did.
   */
  async function forgedAssignment(patch: (x: { term: number; epoch: number }) => Record<string, unknown>) {
    const f = await b.fleet();
    const raw = rawStore(f);
    const lead = await f.join({ instance: "lead", planner: finalPlanner(splits(1)), maxInFlight: 0 });
    assert.ok(await f.until(() => lead.c.isLeader && (lead.c.status().plan?.generation ?? 0) > 0, 3000), "the standby leads and plans");
    const m = await f.join({ instance: "m" });
    assert.ok(await f.until(() => m.held.length === 1, 3000), "m holds the split");
    const epoch = m.c.status().held[0].epoch;
    const term = lead.c.status().plan!.term;
    const forged = JSON.stringify({
      v: 2, term, session: m.c.session, seq: 1_000_000, offers: [], grants: [], revokes: [], drops: [], ...patch({ term, epoch }),
    });
    const cur = await raw.get(keys.assign("m"));
    assert.ok((cur ? await raw.update(cur.key, forged, cur.revision) : await raw.create(keys.assign("m"), forged)).ok);
    await f.advance(100);
    return { f, m, epoch };
  }

  // Kills drop-any-epoch: a drop names the tenancy (split and epoch) the leader saw end; a newer one of ours runs on.
  t("S12. a drop for an older epoch of a split the member holds does not stop its tenancy", async () => {
    const { f, m } = await forgedAssignment(({ epoch }) => ({ drops: [{ id: "s000", epoch: epoch - 1, reason: "fenced" }] }));
    await using _ = f;
    assert.deepEqual(m.lost(), [], "the tenancy was stopped by a drop of an earlier epoch");
    assert.deepEqual(m.held, ["s000"]);
  });

  // Kills revoke-any-epoch: a revoke names the tenancy the leader wants back; one of an earlier epoch is not ours to answer.
  t("S13. a revoke for an older epoch of a split the member holds is ignored: no drain, no release", async () => {
    const { f, m, epoch } = await forgedAssignment(({ epoch }) => ({ revokes: [{ id: "s000", epoch: epoch - 1 }] }));
    await using _ = f;
    assert.ok(!m.has("revokeRequested"), "m was asked to drain by a revoke of an earlier epoch");
    assert.deepEqual(m.c.status().held.map((h) => [h.id, h.epoch]), [["s000", epoch]]);
    assert.equal((await splitRecord(rawStore(f), "s000")).owner?.instance, "m");
  });

  // Kills assign-older-term-applied: a record from a term older than one the member has seen is a deposed leader's late write.
  t("S14. an assignment record from an older term than the member has seen is ignored (its drop stops nothing)", async () => {
    const { f, m } = await forgedAssignment(({ term, epoch }) => ({ term: term - 1, drops: [{ id: "s000", epoch, reason: "fenced" }] }));
    await using _ = f;
    assert.deepEqual(m.lost(), [], "a deposed leader's drop stopped the tenancy");
    assert.deepEqual(m.held, ["s000"]);
  });

  // Kills assign-other-session-applied: a record names the session it is for; one for a predecessor (or a twin) is not ours.
  t("S15. an assignment record addressed to another session of the same instance is ignored (its drop stops nothing)", async () => {
    const { f, m } = await forgedAssignment(({ epoch }) => ({ session: "a-predecessor", drops: [{ id: "s000", epoch, reason: "fenced" }] }));
    await using _ = f;
    assert.deepEqual(m.lost(), [], "a drop addressed to another session stopped the tenancy");
    assert.deepEqual(m.held, ["s000"]);
  });
}

/** Rewrites a split record as it is: its revision moves on (past a view that does not see it), nothing else changes. */
async function moveOn(store: Store, id: string): Promise<void> {
  const cur = (await store.get(keys.split(id)))!;
  assert.ok((await store.update(cur.key, cur.value, cur.revision)).ok, `moved ${id} on`);
}
