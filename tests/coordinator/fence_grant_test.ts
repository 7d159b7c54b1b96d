// A grant made before a worker's last self-fence must not be started without
// a write once the fence ends (docs/DESIGN.md, "How a split reaches a worker
// without races", grants): the leader may have judged the worker dead in
// between and moved the split on, and only a CAS on the split record tells.
// Deterministic, on the manual clock. Kills the mutant
// grant-after-fence-started of scripts/mutants.mjs.
import assert from "node:assert/strict";
import { keys } from "../../admin.ts";
import { MemoryStore } from "../../mod.ts";
import type { Planner } from "../../mod.ts";
import { joinBehindFaults } from "./faulty_store.ts";
import { FAST, Fleet, ManualDriver, splits } from "./fleet.ts";
import { splitRecord } from "./scenarios.ts";

Deno.test("fence grant: a grant from before the self-fence, delivered after it ended, is not started while another member runs the split", async () => {
  const shared = new MemoryStore({ yieldToTimers: false });
  const driver = new ManualDriver();
  await using f = new Fleet(shared, driver);
  const { leaseMs } = FAST;
  const id = "s000";

  // A standby leader whose planner waits until w has joined (so the seed is granted to w's idle lane).
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  const planner: Planner = () => gate.then(() => ({ splits: splits(1), finality: "final" as const }));
  const lead = await f.join({ instance: "lead", planner, maxInFlight: 0 });
  assert.ok(await f.until(() => lead.c.isLeader, 3000), "the standby leads");

  // w reaches the store through a fault layer: its assignment watch lags (the
  // grant is not delivered yet), and its heartbeats can be made to fail.
  const { member: w, store: wStore, restored } = await joinBehindFaults(f, driver, shared, "w");
  const lag = wStore.withhold((key) => key === keys.assign("w"));
  assert.ok(await f.until(() => lead.c.status().liveMembers.length === 2, 3000), "the leader sees w");

  // The plan seeds the split straight to w (epoch 1, owner w) and grants it in assign.w; w's watch holds that back.
  open();
  let grantListed = false;
  const watchAssign = shared.watch(keys.assign("w"));
  void (async () => {
    for await (const ev of watchAssign) {
      if (ev.type === "put" && (JSON.parse(ev.value).grants ?? []).some((g: { id: string }) => g.id === id)) grantListed = true;
    }
  })();
  f.onDispose.push(() => watchAssign.stop());
  assert.ok(await f.until(() => grantListed, 3000), "the leader granted the split to w in assign.w");
  const granted = await splitRecord(shared, id);
  assert.equal(granted.owner?.instance, "w", "the seed names w (a grant, not an offer)");
  assert.equal(granted.epoch, 1);
  assert.deepEqual(w.held, [], "w has not seen the grant");

  // w's heartbeats fail: it self-fences, and the leader judges it dead and takes the split over.
  const beats = wStore.fail((op, key) => op === "update" && key === keys.member("w"));
  assert.ok(await f.until(() => w.c.stats().selfFences === 1, 2 * leaseMs), "w fences itself");
  // A second worker joins meanwhile; once the leader judges w dead, its takeover grants x the split (epoch 2).
  const x = await f.join({ instance: "x" });
  assert.ok(await f.until(() => x.held.includes(id), 4 * leaseMs), "the leader took the split over and granted it to x");
  const taken = await splitRecord(shared, id);
  assert.equal(taken.owner?.instance, "x");
  assert.ok(taken.epoch > granted.epoch, "the takeover moved the epoch");

  // w's heartbeats land again (the fence ends), and only then does its watch deliver the old grant.
  beats.stop();
  const restoredLog = () => restored.length > 0;
  assert.ok(await f.until(restoredLog, leaseMs, 1), "w's heartbeat landed again");
  // Two lanes must never run one split: sample at every step from here.
  let overlap = "";
  const check = () => {
    if (!overlap && w.held.includes(id) && x.held.includes(id)) {
      overlap = `w holds ${JSON.stringify(w.c.status().held)} while x holds ${JSON.stringify(x.c.status().held)}`;
    }
    return overlap !== "";
  };
  // The lagging watch catches up one record at a time (the grant record among them), then for good.
  const held = lag.count();
  assert.ok(held > 0, "w's watch held back its assignment records");
  for (let i = 0; i < held && !overlap; i++) {
    lag.release(1);
    await f.until(check, leaseMs / 4, 1);
  }
  lag.release();
  await f.until(check, leaseMs, 1);
  assert.equal(overlap, "", "a grant from before the self-fence was started without a write while x runs the split");
  const stale = w.gained().filter((g) => g.split.id === id && g.epoch <= taken.epoch);
  assert.deepEqual(stale, [], "w started the split at an epoch the store had already moved past");
  const now = await splitRecord(shared, id);
  assert.equal(now.owner?.instance, "x", "x still holds the split");
  assert.equal(now.epoch, taken.epoch, "nothing moved the split off x");
});
