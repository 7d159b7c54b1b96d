// Work order (issue 25): a plan is dealt heaviest first from its first
// grant, the prefetch does not reorder the plan, and no balancing move
// takes a running split from a member whose every lane is busy. Defined
// once, run on every backend.
import assert from "node:assert/strict";
import type { PlannedSplit, Planner } from "../../mod.ts";
import { AssignRecordSchema, decodeRecord } from "../../src/records.ts";
import { keys } from "../../admin.ts";
import { type Backend, finalPlanner, type Fleet, Member, rawStore, splits } from "./fleet.ts";
import { SplitCoordinator } from "../../mod.ts";
import { FaultyStore } from "./faulty_store.ts";

/** Pairs started out of plan order (`order`: split ids in the order they started). */
export function inversions(order: string[], rank: (id: string) => number): number {
  let n = 0;
  for (let i = 0; i < order.length; i++) {
    for (let j = i + 1; j < order.length; j++) if (rank(order[i]) > rank(order[j])) n++;
  }
  return n;
}

/** A planner that answers once `open()` is called (so it plans for a fleet the leader already sees). */
function gated(list: PlannedSplit[]): { plan: Planner; open: () => void } {
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  return { plan: () => gate.then(() => ({ splits: list, finality: "final" as const })), open };
}

/** Records the order in which splits start across members (polled: call it from `until`). */
function starts(ms: Member[]): () => string[] {
  const order: string[] = [];
  const seen = ms.map(() => 0);
  return () => {
    ms.forEach((m, k) => {
      const g = m.gained();
      for (; seen[k] < g.length; seen[k]++) order.push(g[seen[k]].split.id);
    });
    return order;
  };
}

async function leaderSees(f: Fleet, ms: Member[]): Promise<void> {
  assert.ok(await f.until(() => ms.some((m) => m.c.isLeader && m.c.status().liveMembers.length === ms.length), 3000));
}

export function workOrderScenarios(b: Backend): void {
  const t = (name: string, fn: () => Promise<void>) =>
    Deno.test({ name: `${b.name}: ${name}`, fn, sanitizeOps: false, sanitizeResources: false });

  t("W1. weights are honoured from the first grant: the first lanes get the heaviest splits, not the planner's first", async () => {
    await using f = await b.fleet();
    // The planner lists the lightest first: s000 weighs 1, s015 weighs 16.
    const list = splits(16).map((s, i) => ({ ...s, weight: i + 1 }));
    const { plan, open } = gated(list);
    const ms = await f.joinAll(["a", "b"].map((instance) => ({ instance, planner: plan, maxInFlight: 2 })));
    await leaderSees(f, ms);
    const order = starts(ms);
    open();
    assert.ok(await f.until(() => order().length >= 4, 3000));
    assert.deepEqual(order().slice(0, 4).sort(), ["s012", "s013", "s014", "s015"], "the four heaviest start first");
  });

  t("W2. without weights the prefetch does not reorder the plan: a fast member runs the splits in plan order, a busy member's spares included", async () => {
    await using f = await b.fleet();
    const list = splits(14);
    const { plan, open } = gated(list);
    // b leads and keeps its one split busy; a completes each split 300 ms after it starts (splits
    // long enough that the leader does not prefetch them: W6 has tiny ones).
    const [bm, am] = await f.joinAll([{ instance: "b", planner: plan, maxInFlight: 1 }, { instance: "a", planner: plan, maxInFlight: 1 }]);
    await leaderSees(f, [bm, am]);
    const order = starts([am, bm]);
    open();
    const started = new Map<string, number>();
    const finishing = new Set<string>();
    assert.ok(
      await f.until(() => {
        order();
        for (const h of am.c.status().held) {
          if (finishing.has(h.id)) continue;
          if (!started.has(h.id)) started.set(h.id, f.now());
          if (f.now() - started.get(h.id)! < 300) continue;
          finishing.add(h.id);
          void am.c.commit(h.id, h.epoch, { watermark: 1 }, { final: true }).catch(() => {});
        }
        return am.gained().length === list.length - 1;
      }, 20_000, 1),
      `a ran ${am.gained().length} of ${list.length - 1}`,
    );
    // The two first grants race each other; after them, plan order.
    const rank = (id: string) => Number(id.slice(1));
    const ran = am.gained().map((g) => g.split.id);
    assert.equal(inversions(ran, rank), 0, `a started out of plan order: ${ran.join(" ")}`);
    const mine = bm.gained().map((g) => g.split.id);
    assert.equal(mine.length, 1, "b ran only its first split");
    assert.deepEqual(ran, list.map((s) => s.id).filter((id) => id !== mine[0]));
    assert.ok(inversions(order(), rank) <= 1);
  });

  t("W4. a spare is claimed only once a free lane has waited spareClaimAfterMs for the leader, and then without one", async () => {
    await using f = await b.fleet();
    const { plan, open } = gated(splits(8));
    const [lead, a] = await f.joinAll([{ instance: "b", planner: plan, maxInFlight: 1 }, { instance: "a", planner: plan, maxInFlight: 1 }]);
    await leaderSees(f, [lead, a]);
    open();
    assert.ok(await f.until(() => a.held.length === 1, 3000));
    await f.advance(50); // its spares are written
    const assigned = (await rawStore(f).get(keys.assign("a")))!;
    const spares = decodeRecord(assigned.key, assigned.value, AssignRecordSchema).offers.filter((o) => o.spare).map((o) => o.id);
    assert.ok(spares.length > 0, "a holds spares");
    await lead.c.abandon(); // no leader to deal a's next free lane
    const t0 = f.now();
    await a.completeAll();
    const spare = Math.max(20, f.timings.leaseMs / 100);
    assert.ok(await f.until(() => a.gained().length === 2, spare + 500, 1), "a claims a spare");
    const took = f.now() - t0;
    assert.ok(took >= spare - 1 && took < f.timings.leaseMs / 2, `claimed after ${took} ms`);
    assert.equal(a.gained()[1].split.id, [...spares].sort()[0], `the first of its spares in plan order (${spares})`);
  });

  t("W5. seeding for idle lanes deals a plan in runs of consecutive splits and never past a member's lanes", async () => {
    await using f = await b.fleet();
    const { plan, open } = gated(splits(20));
    const ms = await f.joinAll(["a", "b", "c", "d"].map((instance) => ({ instance, planner: plan, maxInFlight: 2 })));
    await leaderSees(f, ms);
    open();
    let most = 0;
    assert.ok(await f.until(() => {
      most = Math.max(most, ...ms.map((m) => m.held.length));
      return ms.every((m) => m.held.length === 2);
    }, 3000));
    await f.advance(100);
    most = Math.max(most, ...ms.map((m) => m.held.length));
    assert.equal(most, 2, "nobody holds more splits than lanes");
    for (const m of ms) {
      const [x, y] = m.held.map((id) => Number(id.slice(1))).sort((p, q) => p - q);
      assert.equal(y, x + 1, `${m.c.instance} holds ${m.held}: not consecutive`);
    }
  });

  // Issue 38, item 4: kills prefetch-never and prefetch-refill-every-split.
  t("W6. tiny splits are prefetched: each busy lane holds its next split, claimed the moment the lane frees without the leader's next write; one rewrite serves several", async () => {
    const writes: string[] = [];
    await using f = await b.fleet();
    const lStore = new FaultyStore(await b.extraStore(f));
    const counting = new Proxy(lStore, {
      get(target, prop) {
        const v = Reflect.get(target, prop, target);
        if (prop !== "update" && prop !== "create") return typeof v === "function" ? v.bind(target) : v;
        return (k: string, ...rest: unknown[]) => {
          if (k === keys.assign("a")) writes.push(k);
          return (v as (...x: unknown[]) => unknown).call(target, k, ...rest);
        };
      },
    });
    const { plan, open } = gated(splits(40));
    const lead = new Member(await SplitCoordinator.join({ store: counting, job: f.job, instance: "l", clock: f.clock, planner: plan, ...f.timings, maxInFlight: 0 }));
    f.members.push(lead);
    const a = await f.join({ instance: "a", maxInFlight: 4 });
    await leaderSees(f, [lead, a]);
    open();
    // Splits that end at once: the leader learns they are tiny and prefetches one per busy lane.
    for (let round = 0; round < 3; round++) {
      assert.ok(await f.until(() => a.held.length === 4, 3000), `round ${round}: a fills its lanes`);
      await f.advance(5);
      await a.completeAll();
    }
    assert.ok(await f.until(() => a.held.length === 4, 3000));
    await f.advance(50);
    const offered = () => rawStore(f).get(keys.assign("a")).then((e) => decodeRecord(e!.key, e!.value, AssignRecordSchema).offers.filter((o) => !o.spare).map((o) => o.id));
    const next = await offered();
    assert.ok(next.length >= 4, `each busy lane has its next split offered: ${next}`);
    // No more assignment writes for a: its freed lanes start their prefetched splits anyway.
    const parked = lStore.hold((op, key) => key === keys.assign("a"));
    const before = a.gained().length;
    await f.advance(5);
    await a.completeAll();
    assert.ok(await f.until(() => a.gained().length === before + 4, 1000, 1), "the four freed lanes started their next splits");
    assert.deepEqual(a.gained().slice(before).map((g) => g.split.id).sort(), [...next].sort().slice(0, 4), "the prefetched ones");
    parked.release();
    // Dealing the rest: fewer assignment writes than splits.
    const from = writes.length;
    let done = 0;
    while (a.held.length > 0 && done < 24) {
      await f.advance(5);
      done += a.held.length;
      await a.completeAll();
      await f.until(() => a.held.length > 0 || a.has("allComplete"), 1000, 1);
    }
    assert.ok(done >= 16, `completed ${done}`);
    assert.ok(writes.length - from <= done / 2, `${writes.length - from} writes of assign.a for ${done} splits`);
  });

  t("W3. a member running a split in every lane keeps them: no move to an idle member when nothing is unstarted", async () => {
    await using f = await b.fleet();
    const plan = finalPlanner(splits(2, 10));
    const a = await f.join({ instance: "a", planner: plan, maxInFlight: 2 });
    assert.ok(await f.until(() => a.held.length === 2, 1000));
    const bm = await f.join({ instance: "b", planner: plan, maxInFlight: 2 });
    await f.advance(2 * f.timings.leaseMs);
    assert.equal(a.has("revokeRequested"), false, "no revocation");
    assert.equal(bm.gained().length, 0, "b gets nothing: it would run what a already runs");
    assert.equal(a.held.length, 2);
  });
}
