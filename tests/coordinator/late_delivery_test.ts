// A member's view of its own records never goes back (issue 40, item 11): a
// late delivery of an older revision of one key — after the member applied a
// newer one, from its watch or from a read of its own (`applyRead`) — is not
// news, and applying it would forget the newer record's directives
// (src/coordinator/member/follower.ts, the revision guard of `#apply`). A
// planted bug that dropped the guard survived every suite: no test ever
// delivered a key's revisions out of order.
import assert from "node:assert/strict";
import { requeueSplit } from "../../admin.ts";
import { keys } from "../../admin.ts";
import { SplitCoordinator } from "../../mod.ts";
import { AssignRecordSchema, decodeRecord } from "../../src/records.ts";
import { FaultyStore } from "./faulty_store.ts";
import { finalPlanner, Fleet, Member, splits } from "./fleet.ts";
import { splitRecord } from "./scenarios.ts";

const t = (name: string, fn: () => Promise<void>) =>
  Deno.test({ name: `late delivery: ${name}`, fn, sanitizeOps: false, sanitizeResources: false });

/** Joins `instance` to `f` through a fault layer over the fleet's store (`setup` runs on it before the join). */
async function joinBehind(
  f: Fleet,
  instance: string,
  extra: Record<string, unknown> = {},
  setup: (store: FaultyStore) => void = () => {},
): Promise<{ m: Member; store: FaultyStore }> {
  const store = new FaultyStore(f.store);
  setup(store);
  const m = new Member(await SplitCoordinator.join({ store, job: f.job, instance, clock: f.clock, ...f.timings, ...extra }));
  f.members.push(m);
  return { m, store };
}

t("an older assignment record delivered after a newer one does not withdraw the newer one's revocations", async () => {
  await using f = new Fleet();
  const plan = finalPlanner(splits(4));
  const [a] = await f.joinAll([{ instance: "a", planner: plan, maxInFlight: 0 }]);
  // More lanes than splits: b may be a victim of a steal (a member whose every lane is busy keeps its splits).
  // Every record b's watch hands it, from its first: the one that dealt it its splits comes before the revocation.
  let deliveries!: ReturnType<FaultyStore["record"]>;
  const { m: b } = await joinBehind(f, "b", { maxInFlight: 8 }, (s) => (deliveries = s.record((k) => k === keys.assign("b"))));
  assert.ok(await f.until(() => b.held.length === 4, 3000), "b holds all four");
  assert.ok(a.c.isLeader);
  // c joins: the leader revokes one of b's splits (one transfer per member at a time), naming c its successor.
  const c = await f.join({ instance: "c", maxInFlight: 8 });
  assert.ok(await f.until(() => b.has("revokeRequested"), 5000), "a revocation");
  const records = deliveries.events().map((e) => (e.type === "put" ? decodeRecord(e.key, e.value, AssignRecordSchema) : undefined));
  const newer = records.findIndex((r) => (r?.revokes.length ?? 0) > 0);
  assert.ok(newer > 0, "b applied a record before the one with the revocations");
  const revoked = records[newer]!.revokes.map((r) => r.id).sort();
  assert.ok(records[newer]!.revokes.every((r) => r.to?.instance === "c"), "to c");

  // The older record again, late (its revision below the one b applied): not news.
  deliveries.again(newer - 1);
  await f.advance(20);
  assert.equal(b.c.stats().revocations.cancelled ?? 0, 0, "no revocation withdrawn by the older record");

  // b's source stops the revoked splits and releases them: to the successor the newer record names.
  await b.c.release(revoked);
  assert.ok(await f.until(() => revoked.every((id) => c.held.includes(id)), 3000), "c holds the revoked splits");
  for (const id of revoked) {
    const rec = await splitRecord(f.store, id);
    assert.equal(rec.attempts, 0, `${id}: a handoff charges nothing`);
    assert.equal(rec.tenancies?.find((x) => x.owner === "b")?.end, "released", `${id}: b released it`);
  }
  assert.deepEqual(c.gained().filter((g) => revoked.includes(g.split.id)).map((g) => g.kind), revoked.map(() => "handoff"), "handed to c, not claimed");
});

t("a plan revision delivered after the leader read and wrote newer ones does not reopen the job it decided complete", async () => {
  await using f = new Fleet();
  // One member that leads: its own plan reads and writes reach its view ahead of its lagging plan watch.
  const { m: a, store: aStore } = await joinBehind(f, "a", { planner: finalPlanner(splits(2)), maxAttempts: 1 });
  assert.ok(await f.until(() => a.held.length === 2, 3000));
  const [poison, good] = a.c.status().held;
  await a.c.fail(poison.id, poison.epoch, "bad input line 7");
  await a.c.commit(good.id, good.epoch, {}, { final: true });
  assert.ok(await f.until(() => a.has("stalled"), 3000), "the job stalls");

  // From here on a's plan watch lags: it delivers nothing until released.
  const late = aStore.withhold((k) => k === keys.plan);
  const r = await requeueSplit(f.store, poison.id); // rewrites plan: the stall cleared
  assert.ok(r.outcome === "requeued" && r.reopened);
  // a learns of the cleared plan by its own read (the leader's completion judge), works the split, and decides the end.
  assert.ok(await f.until(() => a.held.includes(poison.id), 3000), "a runs the requeued split");
  const again = a.c.status().held.find((h) => h.id === poison.id)!;
  await a.c.commit(again.id, again.epoch, {}, { final: true });
  assert.ok(await f.until(() => a.has("allComplete"), 3000), "the job completes");
  assert.ok(late.count() >= 2, `the watch held back the cleared plan and the outcome (${late.count()})`);
  const reopened = a.events.filter((e) => e.type === "reopened").length;
  assert.equal(reopened, 1, "the stall was withdrawn once");

  // The watch catches up: the cleared plan (older than the outcome a wrote), then the outcome.
  late.release();
  await f.advance(50);
  assert.deepEqual(
    a.events.filter((e) => ["reopened", "allComplete", "stalled"].includes(e.type)).map((e) => e.type),
    ["stalled", "reopened", "allComplete"],
    "the late plan revisions changed nothing: the outcome stands",
  );
  assert.equal(a.c.status().outcome, "allComplete");
});
