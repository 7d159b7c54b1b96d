// Faults of the third hardening round (issue 33), defined once and run on
// every backend. Each scenario fails without the fix it is named after.
import assert from "node:assert/strict";
import type { Store } from "../../mod.ts";
import { cancelSplit, keys } from "../../admin.ts";
import { encodeRecord, PlanRecordSchema, safeDecodeRecord, SplitRecordSchema } from "../../src/records.ts";
import { FaultyStore } from "./faulty_store.ts";
import { type Backend, finalPlanner, type Fleet, type Member, rawStore, splits } from "./fleet.ts";
import { plannedRecord } from "./scenarios.ts";

/** The outcome the plan record holds now. */
async function planOutcome(store: Store): Promise<unknown> {
  const cur = await store.get(keys.plan);
  if (!cur) return undefined;
  const r = safeDecodeRecord(cur.key, cur.value, PlanRecordSchema);
  return r.ok ? r.value.outcome : "unreadable";
}

/** The owner instance and epoch of a split record now. */
async function ownerOf(store: Store, id: string): Promise<{ owner: string | undefined; epoch: number }> {
  const cur = await store.get(keys.split(id));
  const r = safeDecodeRecord(keys.split(id), cur!.value, SplitRecordSchema);
  assert.ok(r.ok, `split ${id} is readable`);
  return { owner: r.value.owner?.instance, epoch: r.value.epoch };
}

/** Waits (at most `maxMs`, no slack) until `cond` holds, noting the most splits `m` held at any step. */
async function watchHeld(f: Fleet, m: Member, cond: () => boolean, maxMs: number): Promise<{ ok: boolean; most: number }> {
  let most = m.held.length;
  for (const end = f.now() + maxMs;;) {
    most = Math.max(most, m.held.length);
    if (cond()) return { ok: true, most };
    if (f.now() >= end) return { ok: false, most };
    await f.advance(10);
  }
}

export function hardeningIIIScenarios(b: Backend): void {
  const t = (name: string, fn: () => Promise<void>) =>
    Deno.test({ name: `${b.name}: ${name}`, fn, sanitizeOps: false, sanitizeResources: false });

  t("H15. a repair while the leader's plan watch never delivers: the leader learns the fresh plan from its lost CAS, never rewrites plan unchanged, and decides the outcome in a bounded number of writes", async () => {
    await using f = await b.fleet((s) => new FaultyStore(s));
    const faulty = f.store as FaultyStore;
    let planWrites = 0;
    faulty.hold((op, key) => {
      if (key === keys.plan && (op === "update" || op === "create")) planWrites++;
      return false; // counts, never holds
    });
    const a = await f.join({ instance: "a", planner: finalPlanner(splits(2)), maxAttempts: 1 });
    assert.ok(await f.until(() => a.held.length === 2, 3000), "a holds both splits");
    const [poison, good] = a.c.status().held;
    await a.c.fail(poison.id, poison.epoch, "bad input");
    await a.c.commit(good.id, good.epoch, {}, { final: true });
    assert.ok(await f.until(() => a.has("stalled"), 3000), "the job stalls");
    // From now on the plan watch delivers nothing: a consumer that stays
    // behind, every plan write superseded before it is read.
    faulty.withhold((key) => key === keys.plan);
    const before = planWrites;
    const r = await cancelSplit(rawStore(f), poison.id); // the operator's cancel clears the outcome too
    assert.equal(r.outcome, "cancelled", r.message);
    assert.ok(
      await f.until(() => a.has("allComplete"), 3 * f.timings.leaseMs),
      `the outcome is decided (plan writes since the repair: ${planWrites - before})`,
    );
    await f.advance(f.timings.leaseMs); // and nothing more is written
    // A lost clear and the outcome; or, when the clear lands before the
    // operator's own plan write, the clear, a decision that loses to that
    // write, and the outcome.
    assert.ok(planWrites - before <= 3, `at most three plan writes after the repair, got ${planWrites - before}`);
    assert.deepEqual(await planOutcome(rawStore(f)), { kind: "allComplete", completed: 1, cancelled: 1 });
  });

  t("H16. a grant that finds every lane taken (a leader died between opening the split and telling the member) is handed back, never run past maxInFlight", async () => {
    await using f = await b.fleet();
    const raw = rawStore(f);
    await f.join({ instance: "l", planner: finalPlanner(splits(2)), maxInFlight: 0 });
    const d = await f.join({ instance: "d", maxInFlight: 1 });
    assert.ok(await f.until(() => d.held.length === 1, 3000), "d fills its one lane");
    const other = splits(2).map((s) => s.id).find((id) => !d.held.includes(id))!;
    // A leader's write opening the free split for d (epoch + 1, owner d), as
    // a takeover or a seed does; the write telling d never came.
    const cur = (await plannedRecord(raw, other))!; // not dealt yet (revision 0: no record of its own), or freed
    const opened = { ...cur.record, epoch: cur.record.epoch + 1, owner: { instance: "d", session: d.c.session } };
    const w = cur.revision === 0
      ? await raw.create(keys.split(other), encodeRecord(opened))
      : await raw.update(keys.split(other), encodeRecord(opened), cur.revision);
    assert.ok(w.ok);
    // The leader's view names d for two splits while d says it holds one:
    // anti-entropy grants both, and d has no lane for the second.
    const back = await watchHeld(f, d, () => false, 3 * f.timings.leaseMs);
    assert.ok(!back.ok);
    assert.equal(back.most, 1, `d never holds more than its one lane (held at most ${back.most})`);
    assert.equal((await ownerOf(raw, other)).owner, undefined, "the grant beyond its lanes was handed back");
    await d.completeAll();
    const rest = await watchHeld(f, d, () => d.held.includes(other), 3000);
    assert.ok(rest.ok && rest.most <= 1, "offered again once the lane freed");
    await d.completeAll();
    assert.ok(await f.until(() => d.has("allComplete"), 3000), "the job completes");
  });

  t("H17. a leader that dies between its member beat and its leader beat: its splits move within one lease plus one beat of its death", async () => {
    const leaseMs = b.realtime ? 3000 : 1000;
    const timings = { leaseMs, replanIntervalMs: leaseMs };
    await using f = await b.fleet();
    const fa = new FaultyStore(f.store);
    const a = await f.join({ instance: "a", store: fa, planner: finalPlanner(splits(4)), maxInFlight: 2, ...timings });
    const c = await f.join({ instance: "c", planner: finalPlanner(splits(4)), maxInFlight: 4, ...timings });
    assert.ok(await f.until(() => a.c.isLeader && a.held.length === 2 && c.held.length === 2, 3000), "a leads and holds two splits, c two");
    const mine = new Set(a.held);
    // The next member beat of a lands; a is dead before its leader beat goes out.
    const dying = fa.dieAfter((op, key) => op === "update" && key === keys.member("a"));
    let deathAt = 0;
    assert.ok(await f.until(() => dying.dead() && (deathAt = f.now()) > 0, 2 * leaseMs), "a dies after a member beat");
    const moved = await f.until(() => c.gained().some((g) => mine.has(g.split.id)), 4 * leaseMs);
    const tookMs = f.now() - deathAt;
    assert.ok(moved, "c takes a's splits over");
    const beatMs = leaseMs / 3;
    const tolerance = b.realtime ? leaseMs / 4 : leaseMs / 20;
    assert.ok(
      tookMs <= leaseMs + beatMs + tolerance,
      `a's splits moved ${tookMs} ms after its death: more than one lease plus one beat (${leaseMs + beatMs} ms)`,
    );
  });

  t("H18. a member the new leader's member snapshot missed (it joined between the two snapshots) keeps its split: its record is read before any takeover", async () => {
    await using f = await b.fleet();
    const l = await f.join({ instance: "l", planner: finalPlanner(splits(1)), maxInFlight: 0 });
    // b's member watch will not show m: as if its snapshot was taken before m's record existed.
    const fb = new FaultyStore(f.store);
    fb.withhold((key) => key === keys.member("m"));
    const nb = await f.join({ instance: "b", store: fb, planner: finalPlanner(splits(1)), maxInFlight: 0 });
    const m = await f.join({ instance: "m", maxInFlight: 1 });
    assert.ok(await f.until(() => m.held.length === 1, 3000), "m holds the split");
    const [held] = m.c.status().held;
    await l.c.abandon(); // the leader dies; b (a planner) is elected before m (none)
    assert.ok(await f.until(() => nb.c.isLeader, 6 * f.timings.leaseMs), "b leads");
    await f.advance(3 * f.timings.leaseMs);
    assert.deepEqual(m.lost(), [], "m lost nothing");
    assert.deepEqual(await ownerOf(rawStore(f), held.id), { owner: "m", epoch: held.epoch }, "the split is still m's, at its epoch");
    await m.completeAll();
    assert.ok(await f.until(() => m.has("allComplete"), 3000), "the job completes");
  });
}

/** Commits cost the leader no pass (issue 32 item 1), on every backend. */
export function leaderCostScenarios(b: Backend): void {
  const t = (name: string, fn: () => Promise<void>) =>
    Deno.test({ name: `${b.name}: ${name}`, fn, sanitizeOps: false, sanitizeResources: false });

  t("C1. a member's progress commits cost the leader no pass", async () => {
    await using f = await b.fleet();
    const lead = await f.join({ instance: "lead", planner: finalPlanner(splits(2)), maxInFlight: 0 });
    const w = await f.join({ instance: "w", maxInFlight: 2 });
    assert.ok(await f.until(() => w.held.length === 2, 3000), "w holds both splits");
    const [h] = w.c.status().held;
    await f.advance(50); // the grants acknowledged, the records written
    const before = lead.c.stats().leaderPasses;
    const n = 50;
    for (let i = 1; i <= n; i++) await w.c.commit(h.id, h.epoch, { watermark: i, estimate: { left: n - i, total: n, unit: "ids" } });
    await f.advance(50); // every commit delivered to the leader's split watch
    const passes = lead.c.stats().leaderPasses - before;
    // Heartbeats and timers still run passes on a real clock; commits add none.
    assert.ok(passes <= (b.realtime ? 10 : 2), `${passes} passes for ${n} commits`);
    await w.completeAll();
    assert.ok(await f.until(() => w.has("allComplete"), 3000), "completions still cost a pass: the job completes");
  });
}
