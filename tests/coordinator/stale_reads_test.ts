// Decisions that act on a read, against a store whose reads answer from an
// older revision (a read replica, a follower, a cache in front; issue 40,
// item 1, and docs/DESIGN.md "Fresh reads"). Each test scripts the stale
// answers one decision used to take for the truth, and fails on the code
// before its fix.
import assert from "node:assert/strict";
import { type Planner, SplitleaseError } from "../../mod.ts";
import { AssignRecordSchema, decodeRecord, LeaderRecordSchema, ProgRecordSchema, SplitRecordSchema } from "../../src/records.ts";
import { FaultyStore } from "./faulty_store.ts";
import { FAST, finalPlanner, Fleet, splits } from "./fleet.ts";
import { HistoryStore, StaleReadStore } from "../sim/stale_reads.ts";

function history(): HistoryStore {
  return new HistoryStore({ yieldToTimers: false });
}

/** Lets `ms` of manual time pass in 10 ms steps (each step settles the promise chains it started). */
async function run(f: Fleet, ms: number): Promise<void> {
  await f.until(() => false, ms);
}

/** The revision of `key` now (0: absent). */
async function revisionOf(h: HistoryStore, key: string): Promise<number> {
  return (await h.get(key))?.revision ?? 0;
}

Deno.test("stale reads: a new leader whose reads of plan show its predecessor's term still plans", async () => {
  const h = history();
  await using f = new Fleet(h);
  // A leads without a planner (nothing is planned in its term), then dies.
  const a = await f.join({ instance: "a", store: new StaleReadStore(h) });
  assert.ok(await f.until(() => a.c.isLeader, 5000));
  const before = await revisionOf(h, "plan");
  assert.ok(before > 0);
  // B's reads of plan answer as of A's term for good: the record before B's own term bump.
  const b = await f.join({ instance: "b", store: new StaleReadStore(h, (_op, key) => (key === "plan" ? before : undefined)), planner: finalPlanner(splits(3)) });
  await a.c.abandon();
  assert.ok(await f.until(() => b.c.isLeader, 5 * FAST.leaseMs), "B is elected");
  const planned = await f.until(() => (b.c.status().plan?.generation ?? 0) > 0, 5 * FAST.leaseMs);
  assert.ok(planned, `the plan was never published in B's term: ${JSON.stringify(b.c.status().plan)}`);
});

Deno.test("stale reads: a commit whose CAS lost to its own landed write is not fenced by an older re-read", async () => {
  const h = history();
  let maybe = false;
  let staleReads = 0;
  let before = 0;
  // Progress lives in prog.<split> (docs/DESIGN.md, "Progress apart from ownership").
  const store = new StaleReadStore(
    h,
    (op, key) => (op === "get" && key === "prog.s000" && staleReads-- > 0 ? before : undefined),
    (op, key) => (op === "update" || op === "create") && key === "prog.s000" && maybe && !(maybe = false),
  );
  await using f = new Fleet(h);
  const a = await f.join({ instance: "a", store, planner: finalPlanner(splits(1)) });
  assert.ok(await f.until(() => a.held.length === 1, 2000));
  const [held] = a.c.status().held;
  await a.c.commit(held.id, held.epoch, { watermark: 1 });
  before = await revisionOf(h, "prog.s000"); // the record as of the first commit
  // The next commit lands but its reply is lost; the one after loses its CAS to it, and its re-reads
  // answer as of the first commit (an older version of our own record) ten times, more than the
  // attempts a commit makes, then as the store is.
  maybe = true;
  await assert.rejects(() => a.c.commit(held.id, held.epoch, { watermark: 2 }), (e: unknown) => e instanceof SplitleaseError && e.code === "STORE_UNAVAILABLE");
  staleReads = 10;
  let done: unknown;
  a.c.commit(held.id, held.epoch, { watermark: 3 }).then(() => (done = "ok"), (e) => (done = e));
  assert.ok(await f.until(() => done !== undefined, 1000));
  assert.equal(done, "ok", `the commit failed: ${done}`);
  assert.ok(staleReads <= 0, "the record was read stale");
  assert.deepEqual(a.lost(), [], "the tenancy was not lost");
  const rec = decodeRecord("prog.s000", (await h.get("prog.s000"))!.value, ProgRecordSchema);
  assert.equal(rec.progress?.watermark, 3);
  assert.equal(rec.owner?.instance, "a");
});

/**
 * Two members, each with one lane, dealt a plan of 8 splits: once `a` holds
 * one split and spares (offers of splits not dealt yet, which name their
 * page), the spares' ids. `a`'s reads of page 0 answer as of revision 1
 * (before the plan was written: "absent") while `stale(now)` says so.
 */
async function spareWithStalePage(f: Fleet, h: HistoryStore, stale: () => boolean) {
  // The planner answers once both members are in, so both are dealt to.
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  const plan: Planner = () => gate.then(() => ({ splits: splits(8), finality: "final" as const }));
  // A planned split has no record until it is claimed: the claim reads its page of the plan.
  const aStore = new StaleReadStore(h, (op, key) => (op === "get" && key === "page.00000000" && stale() ? 1 : undefined));
  const [lead, a] = await f.joinAll([{ instance: "b", planner: plan, maxInFlight: 1 }, { instance: "a", store: aStore, planner: plan, maxInFlight: 1 }]);
  assert.ok(await f.until(() => [lead, a].some((m) => m.c.isLeader && m.c.status().liveMembers.length === 2), 3000));
  open();
  assert.ok(await f.until(() => a.held.length === 1, 3000));
  let spares: string[] = [];
  for (let t = 0; t < 2000 && spares.length === 0; t += 10) {
    await run(f, 10);
    const assigned = await h.get("assign.a");
    spares = assigned ? decodeRecord(assigned.key, assigned.value, AssignRecordSchema).offers.filter((o) => o.spare).map((o) => o.id) : [];
  }
  assert.ok(spares.length > 0, "a holds spares");
  return { lead, a, spares };
}

Deno.test("stale reads: a spare whose page of the plan reads \"absent\" from before it was written is claimed once the store answers", async () => {
  const h = history();
  await using f = new Fleet(h);
  let staleReads = 0;
  const { lead, a, spares } = await spareWithStalePage(f, h, () => staleReads-- > 0);
  // No leader to deal a's next free lane: it claims its first spare, whose page reads "absent" three
  // times, as of revision 1, before the plan was written. Before, the claim left the offer on the first
  // such answer, and the split waited for a new leader.
  staleReads = 3;
  await lead.c.abandon();
  await a.completeAll();
  assert.ok(await f.until(() => a.gained().some((g) => spares.includes(g.split.id)), FAST.leaseMs / 2), `a never ran a spare of ${spares}`);
  assert.ok(!a.c.isLeader, "a ran its spare before any new leader dealt");
  assert.ok(staleReads <= 0, "the page was read stale");
  // a completes what it gains, and leads once the lease is over: every split is done.
  assert.ok(await f.until(() => {
    for (const x of a.c.status().held) void a.c.commit(x.id, x.epoch, { watermark: 1 }, { final: true }).catch(() => {});
    return a.has("allComplete");
  }, 10 * FAST.leaseMs), `the job never completed: ${JSON.stringify(a.c.status().counts)}`);
});

Deno.test("stale reads: an offer whose page reads \"absent\" past the read's budget is claimed again after a backoff", async () => {
  const h = history();
  await using f = new Fleet(h);
  let staleUntil = 0, staleReads = 0;
  const { lead, a, spares } = await spareWithStalePage(f, h, () => f.now() < staleUntil && ++staleReads > 0);
  // The page reads "absent" for 2.5 read budgets (opTimeoutMs each): the first claim of each spare (one
  // lane: one after the other) gives its offer up. Before, each offer stayed marked tried at its revision
  // (0, as every offer of a split not dealt yet) and was never claimed again while offered: nothing ran
  // until a new leader dealt (sharded simulation, seed 845).
  staleUntil = f.now() + 2.5 * FAST.opTimeoutMs;
  await lead.c.abandon();
  await a.completeAll();
  assert.ok(await f.until(() => a.gained().some((g) => spares.includes(g.split.id)), 0.8 * FAST.leaseMs), `a never ran a spare of ${spares}`);
  assert.ok(!a.c.isLeader, "a ran its spare before any new leader dealt");
  assert.ok(staleReads > 15, `the page was read stale past one read's budget (${staleReads} reads)`);
});

Deno.test("stale reads: a heartbeat that lost to its own landed beat is not stopped as a twin by an older record", async () => {
  const h = history();
  await using f = new Fleet(h);
  // The instance restarted: a2 took a1's member record over.
  const a1 = await f.join({ instance: "a", store: new StaleReadStore(h) });
  await a1.c.abandon();
  f.members.splice(f.members.indexOf(a1), 1);
  const before = await revisionOf(h, "member.a"); // a1's last beat
  let maybe = false;
  let staleReads = 0;
  const store = new StaleReadStore(
    h,
    (op, key) => (op === "get" && key === "member.a" && staleReads-- > 0 ? before : undefined),
    (op, key) => op === "update" && key === "member.a" && maybe && !(maybe = false),
  );
  const a2 = await f.join({ instance: "a", store });
  // One beat lands with its reply lost; the next one's re-reads answer with a1's record twice, then fresh.
  maybe = true;
  staleReads = 0;
  assert.ok(await f.until(() => !maybe, 2 * FAST.leaseMs));
  staleReads = 2;
  await run(f, 2 * FAST.leaseMs);
  assert.equal(a2.error, undefined, `a2 stopped: ${a2.error}`);
  assert.equal(a2.c.status().state, "running");
});

Deno.test("stale reads: a restart whose first read of its member record is an old version takes the record over", async () => {
  const h = history();
  await using f = new Fleet(h);
  const a1 = await f.join({ instance: "a", store: new StaleReadStore(h) });
  await run(f, FAST.leaseMs); // a few beats: the record has versions to answer from
  const older = h.entryAt("member.a", (await h.get("member.a"))!.revision - 1)?.revision ?? 0;
  assert.ok(older > 0);
  await a1.c.abandon();
  f.members.splice(f.members.indexOf(a1), 1);
  // The restart's first read of member.a answers with an older version of a1's record, the rest as the store is.
  let reads = 0;
  const a2 = await f.join({ instance: "a", store: new StaleReadStore(h, (op, key) => (op === "get" && key === "member.a" && reads++ === 0 ? older : undefined)) });
  assert.equal(a2.c.status().state, "running");
});

Deno.test("stale reads: a leader whose beat lost to its own landed beat is not deposed by an older leader record", async () => {
  const h = history();
  let maybe = false;
  let elected = 0;
  await using f = new Fleet(h);
  const store = new StaleReadStore(
    h,
    (op, key) => (op === "get" && key === "leader" && elected > 0 ? elected - 1 : undefined),
    (op, key) => op === "update" && key === "leader" && maybe && !(maybe = false),
    f.clock,
  );
  const a = await f.join({ instance: "a", store, planner: finalPlanner(splits(2)) });
  assert.ok(await f.until(() => a.c.isLeader && a.c.status().leader?.term === 1, 5000));
  // From now on reads of `leader` answer from before the election (its record did not exist then).
  elected = await revisionOf(h, "leader");
  maybe = true;
  assert.ok(await f.until(() => !maybe, 2 * FAST.leaseMs));
  // Deposed, the leader deleted its record and elected itself again and again at one instant (each lost
  // election's re-read was stale): the store stops answering then.
  await run(f, 3 * FAST.leaseMs);
  assert.ok(!store.spun, "the leader retried without time passing");
  const l = decodeRecord("leader", (await h.get("leader"))!.value, LeaderRecordSchema);
  assert.deepEqual({ term: l.term, session: l.session, leading: a.c.isLeader }, { term: 1, session: a.c.session, leading: true });
});

Deno.test("stale reads: an election's re-read older than the silent revision does not put the election off by a lease", async () => {
  const h = history();
  await using f = new Fleet(h);
  const a = await f.join({ instance: "a", store: new StaleReadStore(h), planner: finalPlanner(splits(2)) });
  assert.ok(await f.until(() => a.c.isLeader && a.c.status().leader?.term === 1, 5000));
  let first = true;
  let silent = 0;
  const b = await f.join({
    instance: "b",
    store: new StaleReadStore(h, (op, key) => (op === "get" && key === "leader" && silent > 0 && first && !(first = false) ? silent - 1 : undefined)),
    planner: finalPlanner(splits(2)),
  });
  await run(f, FAST.leaseMs);
  silent = await revisionOf(h, "leader");
  await a.c.abandon();
  const died = f.now();
  assert.ok(await f.until(() => b.c.isLeader, 4 * FAST.leaseMs), "B is elected");
  // One lease of silence, then the election (its first re-read answered from before: read again, not a move).
  assert.ok(f.now() - died < 1.5 * FAST.leaseMs, `B was elected ${f.now() - died} ms after A died`);
  assert.ok(!first, "the stale answer was given");
});

Deno.test("stale reads: a leader whose member watch lags does not judge a live member dead on a stale re-read", async () => {
  const h = history();
  await using f = new Fleet(h);
  // B leads and holds nothing; A holds the split.
  let silent = 0;
  const bStore = new FaultyStore(new StaleReadStore(h, (op, key) => (op === "get" && key === "member.a" && silent > 0 ? silent : undefined)));
  const b = await f.join({ instance: "b", store: bStore, planner: finalPlanner(splits(1)), maxInFlight: 0 });
  assert.ok(await f.until(() => b.c.isLeader && (b.c.status().plan?.generation ?? 0) > 0, 3000));
  const a = await f.join({ instance: "a", store: new StaleReadStore(h) });
  assert.ok(await f.until(() => a.held.length === 1, 3000));
  const held = a.c.status().held[0];
  // B's watches fall behind (they deliver nothing, in order), and its re-read of A's record answers with the
  // last version it saw.
  silent = await revisionOf(h, "member.a");
  bStore.pause();
  await run(f, 2 * FAST.leaseMs);
  bStore.resume();
  await run(f, FAST.leaseMs);
  const rec = decodeRecord("split.s000", (await h.get("split.s000"))!.value, SplitRecordSchema);
  assert.deepEqual({ epoch: rec.epoch, owner: rec.owner?.instance, attempts: rec.attempts }, { epoch: held.epoch, owner: "a", attempts: 0 });
  assert.deepEqual(a.lost(), []);
});
