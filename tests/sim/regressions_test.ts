// Minimal reproductions of coordinator bugs the simulation found (each names
// the seed that found it; replay with SIM_SEED=<seed>).
import assert from "node:assert/strict";
import { SplitCoordinator, StoreUnavailableError, MemoryStore } from "../../mod.ts";
import { decodeRecord, SplitRecordSchema } from "../../src/records.ts";
import type { Store } from "../../mod.ts";
import type { WriteResult } from "../../store.ts";
import { FaultyStore } from "../coordinator/faulty_store.ts";
import { FAST, Fleet, finalPlanner, Member, splits } from "../coordinator/fleet.ts";

/**
 * A store whose matching writes throw StoreUnavailableError, either after
 * landing (`landed`: a timeout on the reply) or without applying.
 */
class Flaky extends MemoryStore {
  constructor(readonly match: (op: string, key: string) => boolean, readonly landed: boolean, public budget = 1) {
    super({ yieldToTimers: false });
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

// Seed 33 (and 56, 67, 74), layout 1: a takeover decided on a stale view
// claimed at the revision the view held *after* the owner re-read, without
// re-checking it, and CASed over a split that had completed meanwhile. In
// layout 2 the leader takes over; its view can be just as stale.
Deno.test("regression (sim seed 33): a takeover never writes over a split that completed while the leader re-read the owner", async () => {
  const mem = new MemoryStore({ yieldToTimers: false });
  const bStore = new FaultyStore(mem);
  await using f = new Fleet(mem);
  // B leads and holds nothing (a standby); A gets the split.
  const b = new Member(
    await SplitCoordinator.join({ store: bStore, job: "job1", instance: "b", clock: f.clock, planner: finalPlanner(splits(1)), maxInFlight: 0, ...FAST }),
  );
  f.members.push(b);
  assert.ok(await f.until(() => b.c.isLeader && (b.c.status().plan?.generation ?? 0) > 0, 2000));
  const a = await f.join({ instance: "a" });
  assert.ok(await f.until(() => a.held.length === 1, 2000));
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
  assert.ok(await f.until(() => b.has("allComplete"), 2000), "the job completes");
});

/** Applies the first matching write at once but hands its reply back only when told. */
class HeldReply extends MemoryStore {
  pending: (() => void)[] = [];
  held = 0;
  constructor(readonly match: (key: string, value: string) => boolean) {
    super({ yieldToTimers: false });
  }
  override async update(key: string, value: string, revision: number): Promise<WriteResult> {
    const r = await super.update(key, value, revision);
    if (this.match(key, value) && this.held++ === 0) await new Promise<void>((res) => this.pending.push(res));
    return r;
  }
}

// Seed 76 (found with the working tree of 2026-11-30): a final commit's CAS
// lands, and between its reply and the end of the tenancy (a few microtasks)
// the tenancy's record is the completed one while the split still counts as
// held: close() then releases it, CASing over the completed record. Every
// interleaving of close() after the reply is tried.
Deno.test("regression (sim seed 76): nothing is written to a split after its final commit landed", async () => {
  const bad: number[] = [];
  for (let hops = 0; hops <= 12; hops++) {
    const store = new HeldReply((key, value) => key === "split.s000" && value.includes('"completed"'));
    await using f = new Fleet(store);
    const a = await f.join({ instance: "a", planner: finalPlanner(splits(1)) });
    assert.ok(await f.until(() => a.held.length === 1, 2000));
    const h = a.c.status().held[0];
    const committing = a.c.commit(h.id, h.epoch, { watermark: 1 }, { final: true });
    await f.advance(1);
    assert.equal(store.pending.length, 1);
    const completedAt = (await store.get("split.s000"))!.revision;
    store.pending.shift()!();
    for (let i = 0; i < hops; i++) await Promise.resolve();
    await Promise.all([committing.catch(() => {}), a.c.close()]);
    if ((await store.get("split.s000"))!.revision !== completedAt) bad.push(hops);
  }
  assert.deepEqual(bad, [], `close() wrote over the completed split after ${bad.join(", ")} microtask hops`);
});

// Seed 1726 (committed coordinator of 2026-11-30): fail()'s CAS lands, its
// watch echo arrives before its reply, the tenancy is lost ("revoked") and the
// split re-claimed at epoch + 1; then fail()'s reply ends whatever tenancy of
// the split is held now: the new one, silently (no lost), and the claimer
// gains the split a third time.
Deno.test("regression (sim seed 1726): a slow fail() reply never ends a newer tenancy of the split", async () => {
  const store = new HeldReply((key, value) => key === "split.s000" && value.includes('"lastFailure"'));
  await using f = new Fleet(store);
  const a = await f.join({ instance: "a", planner: finalPlanner(splits(1)) });
  assert.ok(await f.until(() => a.held.length === 1, 2000));
  const h = a.c.status().held[0];
  const failing = a.c.fail(h.id, h.epoch, "poison");
  await f.advance(50);
  assert.equal(store.pending.length, 1);
  store.pending.shift()!();
  await failing;
  await f.advance(100);
  const epochs = a.gained().map((g) => g.epoch);
  assert.deepEqual(epochs, [h.epoch, h.epoch + 1], `gained epochs ${epochs.join(", ")}; lost ${JSON.stringify(a.lost())}`);
  assert.deepEqual(a.c.status().held.map((x) => x.epoch), [h.epoch + 1]);
});
