// Faults of the second hardening round (issue 21) that are not about one
// member's own records, defined once and run on every backend. Each
// scenario fails without the fix it is named after.
import assert from "node:assert/strict";
import type { CoordinationEvent } from "../../src/coordinator/types.ts";
import { cancelSplit, requeueSplit } from "../../src/fleet/actions.ts";
import { PlanRecordSchema, safeDecodeRecord } from "../../src/records.ts";
import { keys } from "../../src/store/keys.ts";
import type { Store } from "../../src/store/store.ts";
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
