// The self-fence happens strictly before any peer can judge the worker dead
// (docs/DESIGN.md, "Liveness: judged by the leader"), on the manual clock so
// the times are exact. Kills the mutants self-fence-margin-dropped and
// self-fence-from-write-end of scripts/mutants.mjs.
import assert from "node:assert/strict";
import { SplitCoordinator, StoreUnavailableError, MemoryStore } from "../../mod.ts";
import { keys } from "../../admin.ts";
import type { WriteResult } from "../../store.ts";
import { FAST, finalPlanner, Fleet, ManualDriver, Member, splits } from "./fleet.ts";
import { splitRecord } from "./scenarios.ts";

/**
 * The worker's view of the shared store: its member-record writes can land
 * and then answer late (`slowReplyMs`), with every later one failing (an
 * outage that starts right after a slow heartbeat), just fail (`failing`),
 * or land and answer with an outage (`maybeLanded`: the next write, which
 * conflicts with it, still reaches the store, and every later one fails).
 */
function workerStore(shared: MemoryStore, driver: ManualDriver, instance: string) {
  const key = keys.member(instance);
  const state = { slowReplyMs: 0, failing: false, maybeLanded: false, conflicted: false, landedAt: [] as number[] };
  const store = new Proxy(shared, {
    get(target, prop) {
      if (prop === "update") {
        return async (k: string, value: string, revision: number): Promise<WriteResult> => {
          if (k === key && state.failing) throw new StoreUnavailableError("update", 200, { detail: "injected outage" });
          const r = await target.update(k, value, revision);
          if (k === key && state.maybeLanded && r.ok) {
            state.maybeLanded = false;
            state.landedAt.push(driver.now());
            throw new StoreUnavailableError("update", 200, { detail: "landed, reply lost" });
          }
          if (k === key && !r.ok && !state.conflicted && state.landedAt.length > 0) {
            state.conflicted = true;
            state.failing = true; // the beat that finds our own landed write conflicts; nothing after it lands
          }
          if (k === key && r.ok) {
            state.landedAt.push(driver.now());
            if (state.slowReplyMs > 0) {
              const ms = state.slowReplyMs;
              state.slowReplyMs = 0;
              await new Promise<void>((res) => driver.clock.setTimeout(res, ms));
              state.failing = true; // the outage starts once this reply is back
            }
          }
          return r;
        };
      }
      const v = Reflect.get(target, prop, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
  return { store, state };
}

for (const mode of ["failing", "slow", "maybeLanded"] as const) {
  const slow = mode === "slow";
  const what = {
    failing: "after the last heartbeat landed",
    slow: "after a heartbeat whose reply came back late",
    maybeLanded: "after a heartbeat that landed but answered with an outage (adopting it later proves nothing)",
  }[mode];
  Deno.test(`self-fence: ${what}, the worker fences itself strictly before a peer can judge it dead`, async () => {
    const shared = new MemoryStore({ yieldToTimers: false });
    const driver = new ManualDriver();
    await using f = new Fleet(shared, driver);
    const { leaseMs } = FAST;
    const margin = Math.floor(leaseMs / 8); // the default selfFenceMarginMs
    // What a peer sees: when each revision of the worker's member record first appeared.
    const sightings: { revision: number; at: number }[] = [];
    const watch = shared.watch(keys.member("w"));
    void (async () => {
      for await (const ev of watch) if (ev.type === "put") sightings.push({ revision: ev.revision, at: driver.now() });
    })();
    const judged: number[] = [];
    const lead = await f.join({
      instance: "lead",
      planner: finalPlanner(splits(1)),
      maxInFlight: 0,
      logger: (_level, msg) => {
        if (msg.startsWith("Member judged dead")) judged.push(driver.now());
      },
    });
    assert.ok(await f.until(() => lead.c.isLeader && (lead.c.status().plan?.generation ?? 0) > 0, 3000), "the standby leads and plans");
    const { store, state } = workerStore(shared, driver, "w");
    const fenced: number[] = [];
    const w = new Member(
      await SplitCoordinator.join({
        store,
        job: f.job,
        instance: "w",
        clock: driver.clock,
        ...FAST,
        logger: (_level, msg) => {
          if (msg.startsWith("Self-fenced")) fenced.push(driver.now());
        },
      }),
    );
    f.members.push(w);
    assert.ok(await f.until(() => w.held.length === 1, 3000), "w holds the split");
    await f.advance(leaseMs); // a few ordinary heartbeats
    const beats = state.landedAt.length;
    if (slow) state.slowReplyMs = 2 * margin; // the next heartbeat lands, answers 2 × margin later, then the store fails
    else if (mode === "maybeLanded") {
      state.landedAt.length = 0;
      state.maybeLanded = true; // the next heartbeat lands but throws; the one after conflicts with it and adopts it
    } else state.failing = true; // every heartbeat from now on fails
    assert.ok(await f.until(() => judged.length > 0 && w.lost().length > 0, 3 * leaseMs, 1), "w fences itself and the leader judges it dead");
    await watch.stop();
    const lastSeen = sightings.at(-1)!.at;
    const deadline = lastSeen + leaseMs; // a peer dates w from here: dead once its record has not moved for leaseMs
    assert.equal(fenced.length, 1);
    assert.deepEqual(w.lost().map((l) => l.reason), ["starved"]);
    if (slow) assert.equal(state.landedAt.length, beats + 1, "the slow heartbeat landed");
    if (mode === "maybeLanded") assert.ok(state.conflicted, "a later heartbeat found the landed one and adopted it");
    assert.ok(
      fenced[0] < deadline,
      `w fenced itself at ${fenced[0]} ms, not strictly before a peer may judge it dead at ${deadline} ms (last heartbeat seen at ${lastSeen} ms)`,
    );
    assert.ok(fenced[0] <= deadline - margin, `w fenced itself at ${fenced[0]} ms, later than the margin allows (${deadline - margin} ms)`);
    assert.ok(judged[0] >= deadline, `the leader judged w dead at ${judged[0]} ms, before its record was silent for a lease (${deadline} ms)`);
    await f.advance(50);
    const rec = await splitRecord(shared, "s000");
    assert.equal(rec.owner, null, "the leader took the split over (no other member to grant it to)");
    assert.equal(rec.attempts, 1);
  });
}

// A process paused past its self-fence point wakes with its fence timer
// overdue but not yet run. Whatever it does first (here: a commit of the
// split it held) must find it fenced: the check at every holder's write,
// not the timer alone (DESIGN "Liveness": the fence is a timer, and also a
// check of the clock at every decision and before every write of a holder).
// Kills the mutant fence-only-by-timer.
Deno.test("self-fence: a process woken past its fence point is fenced before its first write, not when its overdue timer runs", async () => {
  const shared = new MemoryStore({ yieldToTimers: false });
  const driver = new ManualDriver();
  await using f = new Fleet(shared, driver);
  const { leaseMs } = FAST;
  // A clock the "pause" jumps forward without running any timer.
  let paused = 0;
  const clock = {
    now: () => driver.clock.now() + paused,
    wallNow: () => driver.clock.wallNow() + paused,
    setTimeout: (fn: () => void, ms: number) => driver.clock.setTimeout(fn, ms),
    clearTimeout: (h: unknown) => driver.clock.clearTimeout(h),
  };
  const lead = await f.join({ instance: "lead", planner: finalPlanner(splits(1)), maxInFlight: 0 });
  assert.ok(await f.until(() => lead.c.isLeader && (lead.c.status().plan?.generation ?? 0) > 0, 3000), "the standby leads and plans");
  const w = new Member(await SplitCoordinator.join({ store: shared, job: f.job, instance: "w", clock, ...FAST }));
  f.members.push(w);
  assert.ok(await f.until(() => w.held.length === 1, 3000), "w holds the split");
  const { id, epoch } = w.c.status().held[0];
  paused = leaseMs; // frozen for a lease: past the self-fence point, no timer has run yet
  await assert.rejects(w.c.commit(id, epoch, { watermark: 1 }), "the woken process writes nothing before it has fenced itself");
  assert.deepEqual(w.lost().map((l) => l.reason), ["starved"], "fenced at its first act");
  assert.equal((await splitRecord(shared, id)).progress?.watermark, undefined, "no progress was written");
});
