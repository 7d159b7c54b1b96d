// The pure fleet view: counts, filters, paging by cursor over 100k splits,
// descriptor previews, liveness judged by the leader where the caller is
// the leader and by each member's lease against its last beat elsewhere.
import assert from "node:assert/strict";
import { buildFleetView, jsonPreview, normalizeFleetQuery } from "../../src/fleet/fleet_view.ts";
import type { FleetSnapshot } from "../../src/fleet/types.ts";
import { failRecord, seedRecord } from "../../src/records/transitions.ts";
import type { MemberRecord, SplitRecord } from "../../admin.ts";
import { SplitRecordSchema } from "../../src/records.ts";
import { SplitleaseError } from "../../mod.ts";
import { formatStatus } from "../../src/cli/format.ts";

const a = { instance: "a", session: "sa" };
const b = { instance: "b", session: "sb" };

function entry(key: string, value: unknown, revision = 1) {
  return { key, value: typeof value === "string" ? value : JSON.stringify(value), revision };
}

function member(session: string, extra: Partial<MemberRecord> = {}): MemberRecord {
  return { v: 2, session, maxInFlight: 4, runtime: "deno 2.9.6", version: "0.2.0", beat: 7, ...extra };
}

function snapshot(splits: [string, SplitRecord][]): FleetSnapshot {
  return {
    job: entry("job", { v: 3, fingerprint: "fp", createdAt: 0 }),
    plan: entry("plan", { v: 2, term: 3, finality: "final", generation: 1, planned: splits.length }),
    leader: entry("leader", { v: 2, instance: "a", session: "sa", term: 3, beat: 40 }),
    members: [entry("member.b", member("sb", { draining: true, held: 1 })), entry("member.a", member("sa", { planner: true }))],
    splits: splits.map(([id, r]) => entry(`split.${id}`, r)),
    at: 1234,
  };
}

function fixture(): [string, SplitRecord][] {
  const seeded = seedRecord(2, { file: "x".repeat(400) });
  let poison = seedRecord(1, { file: "poison" });
  for (let i = 0; i < 6; i++) poison = failRecord({ ...poison, owner: a }, `boom ${i}`, 4, "a", 1000 + i);
  return [
    ["s1", { ...seeded, owner: a, epoch: 1, progress: { watermark: 10, state: { offset: 99 } } }],
    ["s2", { ...seedRecord(1, undefined), owner: b, epoch: 2 }],
    ["s3", seedRecord(1, { file: "free" })],
    ["s4", { ...seedRecord(5, { file: "done" }), status: "completed" }],
    ["s5", poison],
    ["s6", { ...seedRecord(1, { file: "c" }), status: "cancelled", epoch: 4 }],
    ["s7", { ...seedRecord(1, { file: "stale" }), owner: { instance: "a", session: "old" } }],
  ];
}

Deno.test("fleet view: job-wide counts, members with their load, leader and plan", () => {
  const view = buildFleetView(snapshot(fixture()));
  assert.deepEqual(view.counts, {
    total: 7, runnable: 4, owned: 3, unclaimed: 1, unowned: 1, completed: 1, quarantined: 1, permanent: 0, cancelled: 1, invalid: 0, weight: 12, completedWeight: 5,
  });
  assert.deepEqual(view.members.map((m) => [m.instance, m.owned, m.held, m.draining, m.planner, m.leader, m.alive]), [
    ["a", 1, null, false, true, true, null], // s7 names an old session of a: not counted as a's
    ["b", 1, 1, true, false, false, null],
  ]);
  assert.deepEqual(view.leader, { instance: "a", term: 3, beat: 40 });
  assert.deepEqual(view.plan, {
    term: 3, finality: "final", generation: 1, planned: 7, outcome: null,
    result: { state: "running", outcome: null, skipped: { cancelled: 0, quarantined: 0, permanent: 0 }, paused: null },
    run: 1, history: [],
  });
  assert.deepEqual(view.liveness, { judgedBy: "clock", leader: "a" });
  assert.equal(view.fingerprint, "fp");
  assert.equal(view.at, 1234);
  assert.deepEqual(view.splits.map((s) => s.id), ["s1", "s2", "s3", "s4", "s5", "s6", "s7"]);
  const s1 = view.splits[0];
  assert.equal(s1.owner, "a");
  assert.deepEqual(s1.progress, { watermark: 10, state: '{"offset":99}' });
  assert.equal(s1.descriptor!.length, 160, "descriptor preview is bounded");
  assert.ok(s1.descriptor!.endsWith("…"));
  assert.equal(view.splits[1].descriptor, null);
  assert.equal(view.splits[1].spec, true);
});

Deno.test("fleet view: failure history is bounded and a quarantined split shows it", () => {
  const view = buildFleetView(snapshot(fixture()), { state: "quarantined" });
  assert.equal(view.splits.length, 1);
  const s5 = view.splits[0];
  assert.equal(s5.status, "quarantined");
  assert.equal(s5.attempts, 6);
  assert.equal(s5.lastFailure, "boom 5");
  assert.deepEqual(s5.failures.map((f) => f.message), ["boom 1", "boom 2", "boom 3", "boom 4", "boom 5"]);
  assert.deepEqual(s5.failures[4], { at: 1005, worker: "a", message: "boom 5" });
  const long = failRecord(seedRecord(1, null), "y".repeat(5000), 4, "w", 1);
  assert.equal(long.failures![0].message.length, 300);
  assert.equal(long.lastFailure!.length, 1000);
  assert.ok(SplitRecordSchema.safeParse(long).success);
});

Deno.test("fleet view: filters by state and owner, liveness judged only when given", () => {
  const snap = snapshot(fixture());
  assert.deepEqual(buildFleetView(snap, { owner: "a" }).splits.map((s) => s.id), ["s1", "s7"]);
  assert.deepEqual(buildFleetView(snap, { state: ["cancelled", "completed"] }).splits.map((s) => s.id), ["s4", "s6"]);
  const v = buildFleetView(snap, { state: "runnable", owner: "b" });
  assert.deepEqual(v.splits.map((s) => s.id), ["s2"]);
  assert.equal(v.page.matched, 1);
  assert.deepEqual(v.page.state, ["runnable"]);
  const judged = buildFleetView(snap, {}, { by: "a", liveMembers: ["a"] });
  assert.deepEqual(judged.members.map((m) => m.alive), [true, false]);
  assert.deepEqual(judged.liveness, { judgedBy: "here", by: "a" });
});

Deno.test("fleet view: a member past its lease is unresponsive while splits name it, then gone, whoever serves the view (issue 40, item 3)", () => {
  const now = 1_764_668_000_000;
  const snap: FleetSnapshot = {
    ...snapshot(fixture()),
    at: now,
    members: [
      entry("member.a", member("sa", { planner: true, at: now - 1000, lease: 3000, held: 1 })),
      // b died holding s2 (its last report: working), not taken over yet.
      entry("member.b", member("sb", { held: 1, at: now - 5000, lease: 3000 })),
      // c died and its splits were taken over: the k-bun of the issue, "0/8 … working" for ever.
      entry("member.c", member("sc", { held: 8, maxInFlight: 8, at: now - 200_000, lease: 3000 })),
      // d names no lease (an older version): two minutes.
      entry("member.d", member("sd", { at: now - 100_000 })),
    ],
  };
  const view = buildFleetView(snap);
  assert.deepEqual(view.liveness, { judgedBy: "clock", leader: "a" });
  assert.deepEqual(view.members.map((m) => [m.instance, m.liveness, m.alive, m.activity, m.owned, m.lease]), [
    ["a", "alive", true, "working", 1, 3000],
    ["b", "unresponsive", false, "unresponsive", 1, 3000],
    ["c", "gone", false, "gone", 0, 3000],
    ["d", "alive", true, "idle", 0, 120_000],
  ]);
  const table = formatStatus("j", view).split("\n");
  assert.ok(table.includes("members (4, 2 past their lease); a member whose last beat is older than its lease is unresponsive while splits still name it, then gone"), table.join("\n"));
  const row = (i: string) => table.find((l) => l.startsWith(i + " ") || l.startsWith(i + " (leader)"))!.split(/ {2,}/);
  assert.deepEqual(row("c").slice(3), ["0/8", "3 min 20 s ago", "gone"]);
  assert.deepEqual(row("b").slice(3), ["1/4", "5.0 s ago", "unresponsive"]);
  assert.deepEqual(row("a (leader)").slice(3), ["1/4", "1.0 s ago", "working"]);
  // On the leader its own judgement decides, whatever the clocks say.
  const led = buildFleetView(snap, {}, { by: "a", liveMembers: ["a", "c"] });
  assert.deepEqual(led.members.map((m) => [m.instance, m.liveness]), [["a", "alive"], ["b", "unresponsive"], ["c", "alive"], ["d", "gone"]]);
  // A record with no time at all cannot be judged off the leader.
  const old = buildFleetView({ ...snap, members: [entry("member.e", member("se", { held: 2 }))] }).members[0];
  assert.deepEqual([old.liveness, old.alive, old.activity], ["unknown", null, "working"]);
});

Deno.test("fleet view: pages of 100k splits by cursor, in id order, whatever the listing order", () => {
  const N = 100_000;
  const rec = JSON.stringify(seedRecord(1, { n: 1 }));
  const quarantined = JSON.stringify({ ...seedRecord(1, { n: 1 }), status: "quarantined" });
  const ids = Array.from({ length: N }, (_, i) => `p${String(i).padStart(6, "0")}`);
  const entries = ids.map((id, i) => ({ key: `split.${id}`, value: i % 1000 === 7 ? quarantined : rec, revision: i + 1 }));
  const snap = (order: typeof entries): FleetSnapshot => ({
    job: undefined, plan: undefined, leader: undefined, members: [], splits: order, at: 0,
  });
  const t0 = performance.now();
  const seen: string[] = [];
  let after: string | undefined;
  for (let pages = 0; pages < 3; pages++) {
    const v = buildFleetView(snap(entries), { limit: 1000, after });
    seen.push(...v.splits.map((s) => s.id));
    assert.equal(v.page.matched, N);
    assert.equal(v.counts.total, N);
    after = v.page.next!;
  }
  console.log(`3 pages of 1000 over ${N} splits: ${(performance.now() - t0).toFixed(0)} ms`);
  assert.deepEqual(seen, ids.slice(0, 3000));
  // A shuffled listing pages the same.
  const shuffled = [...entries].reverse();
  const v = buildFleetView(snap(shuffled), { limit: 5, after: ids[10] });
  assert.deepEqual(v.splits.map((s) => s.id), ids.slice(11, 16));
  // The quarantined ones, all on one page; the last page says so.
  const q = buildFleetView(snap(entries), { state: "quarantined", limit: 1000 });
  assert.equal(q.splits.length, 100);
  assert.equal(q.page.next, null);
  assert.equal(q.counts.quarantined, 100);
});

Deno.test("fleet view: unreadable records are counted and named, never fatal", () => {
  const snap = snapshot(fixture());
  snap.splits = [...snap.splits, entry("split.bad", "{not json"), entry("split.old", { v: 1, epoch: 0 })];
  snap.members = [...snap.members, entry("member.c", { v: 2 })];
  const v = buildFleetView(snap);
  assert.equal(v.counts.invalid, 2);
  assert.equal(v.counts.total, 7);
  assert.deepEqual(v.invalid.map((i) => i.key), ["member.c", "split.bad", "split.old"]);
  assert.equal(v.members.length, 2);
});

Deno.test("fleet view: a bad query is refused naming the field and the value", () => {
  assert.throws(() => normalizeFleetQuery({ state: "done" as never }), (e: unknown) =>
    e instanceof SplitleaseError && e.code === "INVALID_ARGUMENT" && /state "done" is not one of runnable/.test(e.message));
  assert.throws(() => normalizeFleetQuery({ limit: 0 }), /limit 0 must be an integer from 1 to 1000/);
  assert.throws(() => normalizeFleetQuery({ limit: 1001 }), /limit 1001/);
  assert.throws(() => normalizeFleetQuery({ owner: "a b" }), /owner "a b" is not an instance id/);
  assert.throws(() => normalizeFleetQuery({ after: "x/y" }), /after "x\/y" is not a split id/);
  assert.deepEqual(normalizeFleetQuery({}), { state: null, owner: null, after: null, limit: 100, match: null });
});

Deno.test("jsonPreview: bounded JSON text", () => {
  assert.equal(jsonPreview({ a: 1 }), '{"a":1}');
  assert.equal(jsonPreview("x".repeat(50), 10), '"xxxxxxxx…');
  assert.equal(jsonPreview(undefined), "undefined");
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  assert.equal(jsonPreview(cyclic), "[object Object]");
});
