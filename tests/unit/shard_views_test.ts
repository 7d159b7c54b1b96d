// A sharded job's fleet view (src/fleet/shard_views.ts; issue 39, item 4):
// the view folded from K shards' views says of the job what one view of
// all its records would — the counts, every page of every query (its
// splits, `matched`, the cursor), the result summary, the rate's totals,
// the recent completions and each member's load — whatever the split of
// the records over the shards (a property, against one store holding
// them all). And the folds of outcomes, standings and run histories.
import assert from "node:assert/strict";
import fc from "fast-check";
import { buildFleetView } from "../../src/fleet/fleet_view.ts";
import { mergeShardViews } from "../../src/fleet/shard_views.ts";
import { foldOutcomes, foldResults, foldRuns, outcomeShards } from "../../src/fleet/shard_fold.ts";
import { jobResultOf } from "../../src/fleet/job_result.ts";
import type { FleetQuery } from "../../src/fleet/fleet_query.ts";
import type { FleetSnapshot, FleetView } from "../../src/fleet/types.ts";
import { seedRecord } from "../../src/records/transitions.ts";
import type { SplitRecord } from "../../admin.ts";
import { shardJob } from "../../admin.ts";

const NOW = 10_000_000;
const entry = (key: string, value: unknown) => ({ key, value: JSON.stringify(value), revision: 1 });
const members = [
  entry("member.a", { v: 2, session: "sa", maxInFlight: 4, runtime: "deno", version: "0.2.0", beat: 7, at: NOW - 100 }),
  entry("member.b", { v: 2, session: "sb", maxInFlight: 4, runtime: "bun", version: "0.2.0", beat: 3, at: NOW - 200 }),
];

/** One split: its status, owner, weight, records and when it ran. */
const splitArb = fc.record({
  status: fc.constantFrom("runnable", "runnable", "completed", "completed", "quarantined", "cancelled"),
  owner: fc.constantFrom(null, "a", "b"),
  weight: fc.integer({ min: 1, max: 5 }),
  records: fc.option(fc.integer({ min: 0, max: 1000 }), { nil: undefined }),
  from: fc.integer({ min: 0, max: 900_000 }),
  took: fc.integer({ min: 1, max: 60_000 }),
  failedFirst: fc.boolean(),
  // Which shard holds it (mod the shard count): shard 0 half the time, so that a page often comes from one shard alone.
  shard: fc.oneof(fc.constant(0), fc.nat(4)),
});

type SplitSpec = typeof splitArb extends fc.Arbitrary<infer T> ? T : never;

function recordOf(s: SplitSpec): SplitRecord {
  const r: SplitRecord = { ...seedRecord(s.weight, { w: s.weight }), status: s.status as SplitRecord["status"] };
  const owner = s.owner ?? "a";
  const from = NOW - 1_000_000 + s.from;
  const tenancies: NonNullable<SplitRecord["tenancies"]> = [];
  if (s.failedFirst) tenancies.push({ epoch: 1, owner, from: from - 5000, to: from - 1000, end: "failed" });
  if (s.status === "completed") tenancies.push({ epoch: 2, owner, from, to: from + s.took, end: "completed" });
  else if (s.status === "runnable" && s.owner) tenancies.push({ epoch: 2, owner, from });
  if (tenancies.length) r.tenancies = tenancies;
  if (s.status === "runnable" && s.owner) r.owner = { instance: s.owner, session: `s${s.owner}` };
  if (s.records !== undefined) r.records = s.records;
  return r;
}

function snapshot(splits: [string, SplitRecord][], planned: number): FleetSnapshot {
  return {
    job: entry("job", { v: 3, fingerprint: "fp", createdAt: 0 }),
    plan: entry("plan", { v: 2, term: 2, finality: "final", generation: 1, planned }),
    leader: entry("leader", { v: 2, instance: "a", session: "sa", term: 2, beat: 9 }),
    members,
    splits: splits.map(([id, r]) => entry(`split.${id}`, r)),
    at: NOW,
  };
}

const queryArb = fc.record({
  state: fc.option(fc.subarray(["runnable", "owned", "unclaimed", "completed", "quarantined", "cancelled"] as const, { minLength: 1 }), { nil: undefined }),
  owner: fc.option(fc.constantFrom("a", "b"), { nil: undefined }),
  limit: fc.integer({ min: 1, max: 12 }),
  match: fc.option(fc.constantFrom("1", "s0", "w\":3"), { nil: undefined }),
});

/** What must agree between the job's one view and the shards' folded view. */
function essentials(v: FleetView) {
  return {
    counts: v.counts,
    splits: v.splits.map((s) => s.id),
    matched: v.page.matched,
    next: v.page.next,
    summary: { ...v.summary, perMinute: v.summary.perMinute === null ? null : Math.round(v.summary.perMinute * 1e6) },
    recent: v.recent.map((s) => s.id),
    members: v.members.map((m) => [m.instance, m.owned, m.liveness]),
    rate: {
      windowMs: v.rate.windowMs,
      startedAt: v.rate.startedAt,
      completedInWindow: v.rate.completedInWindow,
      weightInWindow: v.rate.weightInWindow,
      timed: v.rate.timed,
      untimed: v.rate.untimed,
      remainingWeight: v.rate.remainingWeight,
      partialWeight: v.rate.partialWeight,
      eta: v.rate.eta.state,
      sparkTotal: v.rate.spark.counts.reduce((n, c) => n + c, 0),
      bucketMs: v.rate.spark.bucketMs,
    },
    planned: v.plan?.planned,
  };
}

Deno.test("shard views: the shards' folded view is the job's one view, for every query and page, however the splits fall over the shards", () => {
  fc.assert(
    fc.property(fc.array(splitArb, { minLength: 0, maxLength: 40 }), fc.integer({ min: 2, max: 5 }), queryArb, (specs, k, query) => {
      const all: [string, SplitRecord][] = specs.map((s, i) => [`s${String(i).padStart(3, "0")}`, recordOf(s)]);
      // The fold holds for any split of the records over the shards (the routing rule is the coordinator's).
      const byShard = Array.from({ length: k }, (_, i) => all.filter((_, j) => specs[j].shard % k === i));
      const jobs = byShard.map((_, i) => shardJob("j", i));
      // Every page of the query, from the first to the last, both ways.
      let q: FleetQuery = { ...query };
      for (let pages = 0; pages < 50; pages++) {
        const one = buildFleetView(snapshot(all, all.length), q);
        const merged = mergeShardViews(byShard.map((s) => buildFleetView(snapshot(s, s.length), q)), jobs);
        assert.deepEqual(essentials(merged), essentials(one), `query ${JSON.stringify(q)}`);
        assert.equal(merged.shards!.length, k);
        assert.deepEqual(merged.shards!.map((s) => s.counts.total), byShard.map((s) => s.length));
        if (one.page.next === null) return;
        q = { ...q, after: one.page.next };
      }
      assert.fail("paging did not end");
    }),
    { numRuns: 150 },
  );
});

Deno.test("shard views: a page whose splits all lie in one shard keeps its cursor to the next", () => {
  const all: [string, SplitRecord][] = ["a", "b", "c", "d", "e"].map((id) => [id, seedRecord(1, {})]);
  const views = [buildFleetView(snapshot(all, 5), { limit: 2 }), buildFleetView(snapshot([], 0), { limit: 2 })];
  const page = mergeShardViews(views, ["j", "j--shard1"]);
  assert.deepEqual([page.splits.map((s) => s.id), page.page.next, page.page.matched], [["a", "b"], "b", 5]);
});

Deno.test("shard views: one view is returned as it is (an unsharded job's view is unchanged)", () => {
  const v = buildFleetView(snapshot([["a", seedRecord(1, {})]], 1));
  assert.equal(mergeShardViews([v], ["j"]), v);
  assert.equal(v.shards, undefined);
});

Deno.test("shard views: the job's plan stands where its shards do; a member's liveness is the worst any shard judges", () => {
  const plan = (extra: Record<string, unknown>) => entry("plan", { v: 2, term: 1, finality: "final", generation: 1, planned: 1, ...extra });
  const snap = (p: ReturnType<typeof entry> | undefined, beatAt: number): FleetSnapshot => ({
    job: undefined,
    plan: p,
    leader: undefined,
    members: [entry("member.a", { v: 2, session: "sa", maxInFlight: 4, runtime: "deno", version: "0.2.0", beat: 1, at: beatAt, lease: 1000 })],
    splits: [],
    at: NOW,
  });
  const done = plan({ outcome: { kind: "allComplete", completed: 1 } });
  const v = (snaps: FleetSnapshot[]) => mergeShardViews(snaps.map((s) => buildFleetView(s)), snaps.map((_, i) => shardJob("j", i)));
  // One shard done, one running: the job runs; both done: complete, their counts summed.
  assert.equal(v([snap(done, NOW), snap(plan({}), NOW)]).plan!.result.state, "running");
  const both = v([snap(done, NOW), snap(done, NOW)]).plan!;
  assert.deepEqual([both.outcome, both.result.outcome], ["allComplete", { kind: "allComplete", completed: 2 }]);
  // One shard paused: the job is paused (a member hands back its lanes in every shard).
  assert.equal(v([snap(plan({ paused: { at: 1, by: "ops" } }), NOW), snap(plan({}), NOW)]).plan!.result.state, "paused");
  // No plan in one shard yet: planning, not new.
  assert.equal(v([snap(undefined, NOW), snap(plan({}), NOW)]).plan!.result.state, "planning");
  assert.equal(v([snap(undefined, NOW), snap(undefined, NOW)]).plan, null);
  // Alive in one shard, past its lease in another: unresponsive splits cannot name it here, so gone; its worst.
  const m = v([snap(done, NOW - 10), snap(done, NOW - 60_000)]).members;
  assert.deepEqual(m.map((x) => [x.instance, x.liveness, x.lastBeatAt]), [["a", "gone", NOW - 10]]);
});

Deno.test("shard folds: outcomes, standings and runs", () => {
  assert.equal(foldOutcomes([{ kind: "allComplete", completed: 1 }, undefined]), undefined, "no outcome until every shard has one");
  assert.deepEqual(foldOutcomes([{ kind: "allComplete", completed: 1, cancelled: 2 }, { kind: "allComplete", completed: 3 }]), {
    kind: "allComplete",
    completed: 4,
    cancelled: 2,
  });
  assert.deepEqual(
    foldOutcomes([{ kind: "stalled", completed: 1, quarantined: 2, permanent: 1 }, { kind: "allComplete", completed: 3 }]),
    { kind: "stalled", completed: 4, quarantined: 2, permanent: 1 },
  );
  const failed = { kind: "planFailed" as const, error: "boom", attempts: 3, term: 2 };
  assert.deepEqual(foldOutcomes([undefined, failed]), failed, "a failed plan decides at once");
  assert.deepEqual(outcomeShards([{ kind: "allComplete", completed: 1 }, { kind: "stalled", completed: 0, quarantined: 1 }, { kind: "stalled", completed: 0, quarantined: 2 }]), [1, 2]);
  assert.deepEqual(outcomeShards([undefined, failed]), [1]);
  assert.deepEqual(outcomeShards([undefined, { kind: "allComplete", completed: 1 }]), []);
  const r = foldResults([
    jobResultOf({ v: 2, term: 1, finality: "final", generation: 1, planned: 1, outcome: { kind: "stalled", completed: 0, quarantined: 1 } }),
    jobResultOf({ v: 2, term: 1, finality: "final", generation: 1, planned: 1, outcome: { kind: "allComplete", completed: 1, cancelled: 1 } }),
  ]);
  assert.deepEqual([r.state, r.skipped], ["stalled", { cancelled: 1, quarantined: 1, permanent: 0 }]);
  const run = (completed: number, startedAt: number, finishedAt: number) => ({
    run: 1,
    outcome: { kind: "allComplete" as const, completed },
    planned: completed,
    startedAt,
    finishedAt,
    tookMs: finishedAt - startedAt,
    records: completed * 10,
  });
  assert.deepEqual(foldRuns([[run(2, 100, 300)], [run(3, 50, 200)]]), [{
    run: 1,
    outcome: { kind: "allComplete", completed: 5 },
    planned: 5,
    startedAt: 50,
    finishedAt: 300,
    tookMs: 250,
    records: 50,
  }]);
});
