// Minimal reproductions of coordinator bugs the simulation found (each names
// the seed that found it; replay with SIM_SEED=<seed>).
import assert from "node:assert/strict";
import { SplitCoordinator } from "../../src/coordinator/coordinator.ts";
import { StoreUnavailableError } from "../../src/errors.ts";
import { decodeRecord, SplitRecordSchema } from "../../src/records.ts";
import { MemoryStore } from "../../src/store/memory_store.ts";
import type { Store, WriteResult } from "../../src/store/store.ts";
import { FaultyStore } from "../coordinator/faulty_store.ts";
import { FAST, Fleet, finalPlanner, Member, splits } from "../coordinator/fleet.ts";

/**
 * A store whose matching writes throw StoreUnavailableError, either after
 * landing (`landed`: a timeout on the reply) or without applying.
 */
class Flaky extends MemoryStore {
  constructor(readonly match: (op: string, key: string) => boolean, readonly landed: boolean, public budget = 1) {
    super();
  }
  #hit(op: string, key: string): boolean {
    if (this.budget > 0 && this.match(op, key)) {
      this.budget--;
      return true;
    }
    return false;
  }
  override async create(key: string, value: string): Promise<WriteResult> {
    const hit = this.#hit("create", key);
    if (hit && !this.landed) throw new StoreUnavailableError("create", 200, { detail: "not applied" });
    const r = await super.create(key, value);
    if (hit) throw new StoreUnavailableError("create", 200, { detail: "landed, reply lost" });
    return r;
  }
  override async update(key: string, value: string, revision: number): Promise<WriteResult> {
    const hit = this.#hit("update", key);
    if (hit && !this.landed) throw new StoreUnavailableError("update", 200, { detail: "not applied" });
    const r = await super.update(key, value, revision);
    if (hit) throw new StoreUnavailableError("update", 200, { detail: "landed, reply lost" });
    return r;
  }
}

async function planIsPublished(store: Store, which: "create" | "update", key: string): Promise<void> {
  await using f = new Fleet(store);
  const [a, b] = await f.joinAll([
    { instance: "a", planner: finalPlanner(splits(2)) },
    { instance: "b", planner: finalPlanner(splits(2)) },
  ]);
  const published = await f.until(() => (a.c.status().plan?.generation ?? 0) > 0, 5 * 1000);
  assert.ok(published, `an outage on the new leader's ${which} of "${key}" must not stop planning for good`);
  assert.ok(await f.until(() => {
    for (const w of [a, b]) for (const h of w.c.status().held) void w.c.commit(h.id, h.epoch, {}, { final: true });
    return a.has("allComplete") && b.has("allComplete");
  }, 3000));
}

// Seed 9: the first leader's create of `plan` (the term bump) landed but
// threw; the leader kept `leading = true` with no term, kept beating the
// leader record (so nobody re-elected) and never planned.
Deno.test("regression (sim seed 9): a maybe-landed term bump does not wedge planning", async () => {
  await planIsPublished(new Flaky((op, key) => op === "create" && key === "plan", true), "create", "plan");
});

Deno.test("regression (sim seed 9): a failed term bump does not wedge planning", async () => {
  await planIsPublished(new Flaky((op, key) => op === "create" && key === "plan", false), "create", "plan");
});

Deno.test("regression (sim seed 9): a failed write of the won term to the leader record does not wedge planning", async () => {
  // The winner's first update of `leader` writes its term.
  await planIsPublished(new Flaky((op, key) => op === "update" && key === "leader", false), "update", "leader");
});

// Seed 33 (and 56, 67, 74): a takeover decided on a stale view claims at the
// revision the view holds *after* the owner re-read, without re-checking it:
// when the split completed meanwhile, the claim CASes over the completed
// record (status stays completed, owner set, epoch + 1, attempts + 1) and the
// worker gains a completed split.
Deno.test("regression (sim seed 33): a takeover never claims over a split that completed while it re-read the owner", async () => {
  const mem = new MemoryStore();
  const bStore = new FaultyStore(mem);
  await using f = new Fleet(mem);
  const a = await f.join({ instance: "a", planner: finalPlanner(splits(1)) });
  assert.ok(await f.until(() => a.held.length === 1, 2000));
  const b = new Member(await SplitCoordinator.join({ store: bStore, job: "job1", instance: "b", clock: f.clock, ...FAST }));
  f.members.push(b);
  await f.advance(50);
  // B stops seeing changes; A completes the split and dies.
  bStore.pause();
  const h = a.c.status().held[0];
  await a.c.commit(h.id, h.epoch, { watermark: 9 }, { final: true });
  await a.c.abandon();
  // B judges A dead and re-reads A's member record before the takeover; hold that read.
  const read = bStore.hold((op, key) => op === "get" && key === "member.a");
  assert.ok(await f.until(() => read.count() === 1, 3 * FAST.leaseMs), "B attempts the takeover");
  // B's view catches up (the split is completed), then the re-read returns.
  bStore.resume();
  await f.advance(1);
  read.release();
  await f.advance(50);
  const rec = decodeRecord("split.s000", (await mem.get("split.s000"))!.value, SplitRecordSchema);
  assert.equal(rec.status, "completed");
  assert.deepEqual({ owner: rec.owner, epoch: rec.epoch, attempts: rec.attempts }, { owner: null, epoch: 1, attempts: 0 });
  assert.equal(b.gained().length, 0, "B gained a completed split");
});
