// Issue 24 item 1: what the fleet page's second version reads from the
// records — a split's tenancies (owner, epoch, from, to, how each ended)
// kept by every transition, the source's optional estimate of the work left
// (validated), the member's last-beat time — and what the view makes of
// them: the job-wide rate and ETA from completion times (not from any
// reader's samples), fractions done, current tenancy, per-member rate,
// recent completions, search. Layout-2 records without the new fields read
// as before.
import assert from "node:assert/strict";
import { buildFleetView } from "../../src/fleet/fleet_view.ts";
import { RATE_WINDOW_MS } from "../../src/fleet/fleet_rate.ts";
import type { FleetSnapshot } from "../../src/fleet/types.ts";
import { commitRecord, failRecord, openRecord, releaseRecord, seedRecord, withTenancy } from "../../src/records/transitions.ts";
import type { SplitRecord } from "../../admin.ts";
import { estimateProblem, isSplitRecord, MemberRecordSchema, SplitRecordSchema, safeDecodeRecord, TENANCY_HISTORY } from "../../src/records.ts";
import { SplitleaseError } from "../../mod.ts";

const a = { instance: "a", session: "sa" };
const b = { instance: "b", session: "sb" };
const entry = (key: string, value: unknown) => ({ key, value: JSON.stringify(value), revision: 1 });

Deno.test("tenancies: each transition closes the open tenancy and opens the next, bounded", () => {
  let r = openRecord(seedRecord(1, { f: 1 }), a, false, 3, 1000); // claim
  assert.deepEqual(r.tenancies, [{ epoch: 1, owner: "a", from: 1000 }]);
  r = releaseRecord(r, b, 2000); // handoff to b
  assert.deepEqual(r.tenancies, [{ epoch: 1, owner: "a", from: 1000, to: 2000, end: "released" }, { epoch: 2, owner: "b", from: 2000 }]);
  r = failRecord(r, "boom", 3, "b", 3000);
  assert.equal(r.tenancies!.at(-1)!.end, "failed");
  r = openRecord(r, a, false, 3, 4000);
  r = openRecord(r, b, true, 3, 5000); // a died: taken over, an attempt charged
  assert.deepEqual(r.tenancies!.slice(-2), [
    { epoch: 3, owner: "a", from: 4000, to: 5000, end: "lost" },
    { epoch: 4, owner: "b", from: 5000 },
  ]);
  r = commitRecord("s", r, { watermark: 5, estimate: { left: 10, total: 20, unit: "ids" } }, false, 5500);
  assert.equal(r.tenancies!.length, 4, "a plain commit writes no history");
  r = commitRecord("s", r, { watermark: 9 }, true, 6000);
  assert.deepEqual(r.tenancies!.at(-1), { epoch: 4, owner: "b", from: 5000, to: 6000, end: "completed" });
  assert.deepEqual(r.progress!.estimate, { left: 0, total: 20, unit: "ids" }, "kept from the last commit, 0 left once completed");
  assert.ok(isSplitRecord(r));
  let many = r;
  for (let i = 0; i < 20; i++) many = withTenancy(many, 7000 + i, "moved", { owner: "a", epoch: 10 + i });
  assert.equal(many.tenancies!.length, TENANCY_HISTORY);
  // A quarantine closes the tenancy and opens none.
  const q = openRecord(openRecord(seedRecord(1, {}), a, false, 1, 1), b, true, 1, 2);
  assert.equal(q.status, "quarantined");
  assert.deepEqual(q.tenancies, [{ epoch: 1, owner: "a", from: 1, to: 2, end: "lost" }]);
});

Deno.test("records: a layout-2 record without the new fields reads as before; malformed ones are refused by both checks", () => {
  const old = { v: 2, epoch: 1, status: "completed", owner: null, attempts: 0, weight: 1, progress: { watermark: 3 } };
  assert.ok(isSplitRecord(old));
  assert.ok(safeDecodeRecord("split.x", JSON.stringify(old), SplitRecordSchema).ok);
  const bad: unknown[] = [
    { ...old, tenancies: [{ epoch: 1, owner: "a" }] },
    { ...old, tenancies: [{ epoch: 1, owner: "a b", from: 1 }] },
    { ...old, tenancies: [{ epoch: 1, owner: "a", from: 1, end: "exploded" }] },
    { ...old, tenancies: {} },
    { ...old, progress: { estimate: { left: 5, total: 4, unit: "ids" } } },
    { ...old, progress: { estimate: { left: 0.5, total: 2, unit: "fraction" } } },
    { ...old, progress: { estimate: { left: 1, total: 0, unit: "bytes" } } },
    { ...old, progress: { estimate: { left: 1, total: 2, unit: "rows" } } },
  ];
  for (const x of bad) {
    assert.equal(isSplitRecord(x), false, JSON.stringify(x));
    assert.equal(safeDecodeRecord("split.x", JSON.stringify(x), SplitRecordSchema).ok, false, JSON.stringify(x));
  }
  assert.equal(estimateProblem({ left: 0.25, total: 1, unit: "fraction" }), null);
  assert.match(estimateProblem({ left: -1, total: 1, unit: "fraction" })!, /left must be/);
  const m = { v: 2, session: "s", maxInFlight: 1, runtime: "deno", version: "0.2.0", beat: 3 };
  assert.ok(safeDecodeRecord("member.a", JSON.stringify(m), MemberRecordSchema).ok);
  assert.ok(safeDecodeRecord("member.a", JSON.stringify({ ...m, at: 5 }), MemberRecordSchema).ok);
  assert.equal(safeDecodeRecord("member.a", JSON.stringify({ ...m, at: "now" }), MemberRecordSchema).ok, false);
  // A commit with a malformed estimate is refused before anything is written.
  assert.throws(
    () => commitRecord("s", openRecord(seedRecord(1, {}), a, false, 3, 1), { estimate: { left: 2, total: 1, unit: "fraction" } }, false),
    (e) => e instanceof SplitleaseError && e.code === "INVALID_ARGUMENT" && /Estimate of split "s"/.test(e.message),
  );
});

Deno.test("fleet view: rate and ETA from the records' completion times, fractions, tenancy, members, recent, search", () => {
  const now = 10 * 60_000;
  const done = (id: string, owner: typeof a, from: number, to: number): [string, SplitRecord] => {
    const r = openRecord(seedRecord(1, { file: id }), owner, false, 3, from);
    return [id, commitRecord(id, r, { watermark: 1 }, true, to)];
  };
  const splits: [string, SplitRecord][] = [];
  // Started 4 min ago: 8 done in the window (6 by a, 2 by b).
  for (let i = 0; i < 8; i++) splits.push(done(`d${i}`, i < 6 ? a : b, now - 240_000, now - 200_000 + i * 20_000));
  const running = commitRecord("r1", openRecord(seedRecord(2, { file: "r1" }), a, false, 3, now - 30_000), {
    watermark: 5,
    estimate: { left: 0.25, total: 1, unit: "fraction" },
  }, false);
  splits.push(["r1", running], ["w1", seedRecord(1, { file: "waiting" })]);
  splits.push(["old", { ...seedRecord(1, {}), status: "completed" }]); // no completion time
  const snap: FleetSnapshot = {
    job: undefined,
    plan: undefined,
    leader: undefined,
    members: [
      entry("member.a", { v: 2, session: "sa", maxInFlight: 2, runtime: "deno", version: "0.2.0", beat: 9, held: 1, at: now - 1500 }),
      entry("member.b", { v: 2, session: "sb", maxInFlight: 2, runtime: "deno", version: "0.2.0", beat: 9, held: 0 }),
      entry("member.c", { v: 2, session: "sc", maxInFlight: 0, runtime: "deno", version: "0.2.0", beat: 9 }),
    ],
    splits: splits.map(([id, r]) => entry(`split.${id}`, r)),
    at: now,
  };
  const v = buildFleetView(snap, { state: "owned" });
  assert.equal(v.rate.windowMs, 240_000, "since the job began (less than the 5 min window)");
  assert.equal(v.rate.startedAt, now - 240_000);
  assert.equal(v.rate.completedInWindow, 8);
  assert.equal(v.rate.perMinute, 2);
  assert.equal(v.rate.untimed, 1);
  assert.equal(v.rate.partialWeight, 1.5);
  assert.equal(v.rate.remainingWeight, 1.5, "r1: 2 × 0.25 left, w1: 1");
  // 8 weight in 4 min = 2 per minute: 1.5 left is 45 s.
  assert.deepEqual(v.rate.eta, { state: "estimated", at: now + 45_000, inMs: 45_000, thenStalled: false });
  assert.equal(v.rate.spark.counts.reduce((x, y) => x + y, 0), 8);
  assert.equal(v.rate.spark.counts.length * v.rate.spark.bucketMs, 240_000, "the job's life so far (4 min), in 60 buckets");
  assert.equal(v.splits.length, 1);
  assert.equal(v.splits[0].fraction, 0.75);
  assert.equal(v.splits[0].since, now - 30_000);
  assert.deepEqual(v.recent.map((s) => s.id), ["d7", "d6", "d5", "d4", "d3", "d2", "d1", "d0"]);
  assert.equal(v.recent[0].completedAt, now - 60_000);
  assert.deepEqual(v.members.map((m) => [m.instance, m.activity, m.lastBeatAt, m.perMinute]), [
    ["a", "working", now - 1500, 1.5],
    ["b", "idle", null, 0.5],
    ["c", "standby", null, 0],
  ]);
  assert.ok(RATE_WINDOW_MS === 300_000);
  // Search: id, owner or descriptor, case-insensitive; with the state filter.
  assert.deepEqual(buildFleetView(snap, { match: "WAIT" }).splits.map((s) => s.id), ["w1"]);
  assert.deepEqual(buildFleetView(snap, { match: "d3" }).splits.map((s) => s.id), ["d3"]);
  assert.equal(buildFleetView(snap, { match: "d", state: "runnable" }).page.matched, 0);
  assert.throws(() => buildFleetView(snap, { match: "x".repeat(201) }), /match/);
  // Nothing completed lately: ETA unknown; only quarantined left: stalled; nothing left: done.
  assert.equal(buildFleetView({ ...snap, at: now + 3_600_000 }).rate.eta.state, "unknown");
  const q = failRecord(openRecord(seedRecord(1, {}), a, false, 1, 1), "boom", 1, "a", 2);
  assert.equal(buildFleetView({ ...snap, splits: [entry("split.q", q), entry("split.d", splits[0][1])] }).rate.eta.state, "stalled");
  assert.equal(buildFleetView({ ...snap, splits: [entry("split.d", splits[0][1])] }).rate.eta.state, "done");
});

Deno.test("lane: a commit with a malformed estimate is refused before it is written; a valid one lands in the record", async () => {
  const { MemoryStore } = await import("../../src/store/memory_store.ts");
  const { SplitCoordinator } = await import("../../src/coordinator/coordinator.ts");
  const { startWorker } = await import("../../src/runtime/worker.ts");
  const store = new MemoryStore();
  const seen: string[] = [];
  const planner = () => Promise.resolve({ finality: "final" as const, splits: [{ id: "one", descriptor: { n: 1 } }] });
  const c = await SplitCoordinator.join({
    store, job: "j", instance: "a", fingerprint: "fp", planner, maxInFlight: 1, leaseMs: 1500, opTimeoutMs: 500, drainDeadlineMs: 1000,
  });
  const w = startWorker({
    coordinator: c,
    logger: () => {},
    maxInFlight: 1,
    source: {
      fingerprint: () => "fp",
      plan: planner,
      async run(lane) {
        await lane.commit({ watermark: 1, estimate: { left: 3, total: 4, unit: "ids" } });
        try {
          await lane.commit({ watermark: 2, estimate: { left: 5, total: 4, unit: "ids" } });
        } catch (e) {
          seen.push(`${(e as SplitleaseError).code}: ${(e as Error).message}`);
        }
        const rec = JSON.parse((await store.get("prog.one"))!.value); // progress commits land in the progress record
        seen.push(JSON.stringify(rec.progress));
        await lane.complete();
      },
    },
  });
  const out = await w.done;
  await store.close();
  assert.equal((out as { reason?: string }).reason, "complete", JSON.stringify(out));
  assert.match(seen[0], /^INVALID_ARGUMENT: progress\.estimate of split one: left must be a number from 0 to total/);
  assert.equal(seen[1], '{"watermark":1,"estimate":{"left":3,"total":4,"unit":"ids"}}', "the refused commit wrote nothing");
});
