// Faults of the second hardening round (issue 21) that are not about one
// member's own records, defined once and run on every backend. Each
// scenario fails without the fix it is named after.
import assert from "node:assert/strict";
import type { CoordinationEvent, Store } from "../../mod.ts";
import { cancelSplit, requeueSplit, keys } from "../../admin.ts";
import { PlanRecordSchema, safeDecodeRecord } from "../../src/records.ts";
import { FaultyStore } from "./faulty_store.ts";
import { type Backend, finalPlanner, type Fleet, type Member, rawStore, splits } from "./fleet.ts";

/** The outcome the plan record holds now. */
async function planOutcome(store: Store): Promise<unknown> {
  const cur = await store.get(keys.plan);
  if (!cur) return undefined;
  const r = safeDecodeRecord(cur.key, cur.value, PlanRecordSchema);
  return r.ok ? r.value.outcome : "unreadable";
}

/**
 * One leading member (maxAttempts 1) with two splits: one fails (quarantined
 * at once), one completes. The leader decides `stalled`, and its `plan`
 * write is parked by the fault layer (slow to land) until `released`.
 */
async function stallInFlight(f: Fleet): Promise<{ a: Member; poison: string; release: () => void }> {
  const faulty = f.store as FaultyStore;
  const a = await f.join({ instance: "a", planner: finalPlanner(splits(2)), maxAttempts: 1 });
  assert.ok(await f.until(() => a.held.length === 2, 3000), "a holds both splits");
  const [poison, good] = a.c.status().held;
  const hold = faulty.hold((op, key, value) => op === "update" && key === keys.plan && (value ?? "").includes('"stalled"'));
  await a.c.fail(poison.id, poison.epoch, "bad input");
  await a.c.commit(good.id, good.epoch, {}, { final: true });
  assert.ok(await f.until(() => hold.count() === 1, 3000), "the leader decided stalled; its plan write is on its way");
  return { a, poison: poison.id, release: () => hold.release() };
}

/** The types of `m`'s job-outcome events, in order. */
function outcomes(m: Member): CoordinationEvent["type"][] {
  return m.events.map((e) => e.type).filter((t) => t === "stalled" || t === "allComplete" || t === "reopened");
}

export function hardeningIIScenarios(b: Backend): void {
  const t = (name: string, fn: () => Promise<void>) =>
    Deno.test({ name: `${b.name}: ${name}`, fn, sanitizeOps: false, sanitizeResources: false });

  t("H14. a held split whose record was garbage while its holder wrote (completion and fail refused; progress commits land in the progress record), then repaired: the leader re-grants it and the holder resumes it at its position; the job completes", async () => {
    await using f = await b.fleet();
    const raw = rawStore(f);
    const a = await f.join({ instance: "a", planner: finalPlanner(splits(1)) });
    assert.ok(await f.until(() => a.held.length === 1, 3000), "a holds the split");
    const [h] = a.c.status().held;
    const good = (await raw.get(keys.split(h.id)))!;
    const garbage = await raw.update(keys.split(h.id), "{garbage", good.revision);
    assert.ok(garbage.ok);
    // A progress commit does not read the split record; the holder's completion and its fail report meet the unreadable record: its lane gives up.
    await a.c.commit(h.id, h.epoch, { watermark: 1 });
    await assert.rejects(() => a.c.commit(h.id, h.epoch, { watermark: 2 }, { final: true }), /Invalid record/);
    await assert.rejects(() => a.c.fail(h.id, h.epoch, "commit failed"), /Invalid record/);
    // Repaired by CAS: the record as it was (runnable, owned by a at its epoch).
    assert.ok((await raw.update(keys.split(h.id), good.value, garbage.revision)).ok);
    assert.ok(
      await f.until(() => a.gained().some((g) => g.split.id === h.id && g.epoch > h.epoch), 6 * f.timings.leaseMs),
      `the split is resumed at a new epoch (held ${JSON.stringify(a.c.status().held)})`,
    );
    assert.deepEqual(a.gained().filter((g) => g.split.id === h.id).at(-1)?.progress, { watermark: 1 }, "resumed where it committed");
    await a.completeAll();
    assert.ok(await f.until(() => a.has("allComplete"), 3000), "the job completes");
    assert.ok(a.lost().some((l) => l.splitId === h.id), "the given-up tenancy ended with lost");
  });

  t("H14b. a release refused by a garbage record (what a worker does with a split nothing runs) is retried at every beat and resumes the split once the record is repaired", async () => {
    await using f = await b.fleet();
    const raw = rawStore(f);
    const a = await f.join({ instance: "a", planner: finalPlanner(splits(1)) });
    assert.ok(await f.until(() => a.held.length === 1, 3000), "a holds the split");
    const [h] = a.c.status().held;
    const good = (await raw.get(keys.split(h.id)))!;
    const garbage = await raw.update(keys.split(h.id), "{garbage", good.revision);
    assert.ok(garbage.ok);
    await assert.rejects(() => a.c.release([h.id]), /Invalid record/);
    // Several beats with the record still unreadable: the split is not forgotten.
    await f.advance(f.timings.leaseMs);
    assert.ok((await raw.update(keys.split(h.id), good.value, garbage.revision)).ok, "repaired by CAS");
    assert.ok(
      await f.until(() => a.gained().some((g) => g.split.id === h.id && g.epoch > h.epoch), 6 * f.timings.leaseMs),
      `the split is resumed at a new epoch (held ${JSON.stringify(a.c.status().held)})`,
    );
    await a.completeAll();
    assert.ok(await f.until(() => a.has("allComplete"), 3000), "the job completes");
  });

  t("H14c. a fail report lost to an outage and never retried: the leader's anti-entropy notices the split its live holder does not run, and the holder resumes it", async () => {
    await using f = await b.fleet((s) => new FaultyStore(s));
    const faulty = f.store as FaultyStore;
    const a = await f.join({ instance: "a", planner: finalPlanner(splits(1)) });
    assert.ok(await f.until(() => a.held.length === 1, 3000), "a holds the split");
    const [h] = a.c.status().held;
    const outage = faulty.fail((op, key) => op === "update" && key === keys.split(h.id));
    await assert.rejects(() => a.c.fail(h.id, h.epoch, "poison?"), /unavailable|outage/i);
    outage.stop();
    // Nothing runs it now, and the record (unchanged) still names a: only the leader can notice.
    assert.ok(
      await f.until(() => a.gained().some((g) => g.split.id === h.id && g.epoch > h.epoch), 6 * f.timings.leaseMs),
      `the split is resumed at a new epoch (held ${JSON.stringify(a.c.status().held)})`,
    );
    await a.completeAll();
    assert.ok(await f.until(() => a.has("allComplete"), 3000), "the job completes");
  });

  t("H12. a stalled decision still in flight when an operator cancels the quarantined split loses its CAS: the job completes, nobody is told it stalled", async () => {
    await using f = await b.fleet((s) => new FaultyStore(s));
    const { a, poison, release } = await stallInFlight(f);
    const r = await cancelSplit(rawStore(f), poison);
    assert.equal(r.outcome, "cancelled", r.message);
    release(); // the stalled outcome lands now, after the cancel
    assert.ok(await f.until(() => a.has("allComplete"), 3000), `the job completes (events ${outcomes(a).join(", ")})`);
    assert.deepEqual(outcomes(a), ["allComplete"], "a stalled outcome decided before the cancel never reached a member");
    assert.deepEqual(await planOutcome(rawStore(f)), { kind: "allComplete", completed: 1, cancelled: 1 });
  });

  t("H12b. a stalled decision still in flight when an operator requeues the quarantined split: the split runs again and the job completes, nobody is told it stalled", async () => {
    await using f = await b.fleet((s) => new FaultyStore(s));
    const { a, poison, release } = await stallInFlight(f);
    const r = await requeueSplit(rawStore(f), poison);
    assert.equal(r.outcome, "requeued", r.message);
    release();
    assert.ok(await f.until(() => a.held.includes(poison), 3000), "the requeued split is offered and claimed again");
    await a.completeAll();
    assert.ok(await f.until(() => a.has("allComplete"), 3000), `the job completes (events ${outcomes(a).join(", ")})`);
    assert.deepEqual(outcomes(a), ["allComplete"], "members announce outcomes once: a wrong stalled would have made them exit");
  });

  t("H12c. an operator that dies between its cancel and the plan write: the stalled outcome that lands is revisited (cleared, decided again) and members act on the withdrawal", async () => {
    await using f = await b.fleet((s) => new FaultyStore(s));
    const { a, poison, release } = await stallInFlight(f);
    // The operator's process dies after its split write, before its plan write.
    const operator = new FaultyStore(rawStore(f));
    operator.fail((op, key) => op === "update" && key === keys.plan);
    await cancelSplit(operator, poison).catch(() => {}); // it throws where it dies (an outage), if it writes the plan at all
    assert.match((await rawStore(f).get(keys.split(poison)))?.value ?? "", /"cancelled"/, "the split write landed");
    release(); // stalled lands, against a store that holds no quarantined split
    assert.ok(await f.until(() => a.has("allComplete"), 3000), `the leader revisits the outcome (events ${outcomes(a).join(", ")})`);
    assert.deepEqual(outcomes(a), ["stalled", "reopened", "allComplete"], "the withdrawal reaches the member, which announces the new outcome");
    assert.deepEqual(await planOutcome(rawStore(f)), { kind: "allComplete", completed: 1, cancelled: 1 });
  });
}
