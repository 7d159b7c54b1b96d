// The summary of a large job (src/fleet/fleet_summary.ts): counts, weights,
// rate and ETA from the leader's beat (or the outcome), members' load from
// what they report holding, and no split record read — what `splitlease
// status` and `wait` show of a job of more than FULL_READ_MAX_SPLITS splits.
import assert from "node:assert/strict";
import { MemoryStore } from "../../mod.ts";
import { formatStatus } from "../../src/cli/format.ts";
import { buildFleetSummary, FULL_READ_MAX_SPLITS, readFleetOverview, type SummarySnapshot } from "../../src/fleet/fleet_summary.ts";
import { waitForOutcome } from "../../src/fleet/wait.ts";
import type { FleetView } from "../../src/fleet/types.ts";
import { encodeRecord, type JobCounts, type LeaderRecord, type MemberRecord, type PlanRecord } from "../../src/records.ts";
import { keys } from "../../src/store/keys.ts";
import type { Store } from "../../src/store/store.ts";

const AT = 1_800_000_000_000;
const counts: JobCounts = {
  members: 2,
  runnable: 600_000,
  unowned: 599_000,
  completed: 399_000,
  quarantined: 1000,
  cancelled: 0,
  weight: { total: 1_000_000, completed: 399_000, runnable: 600_000, left: 599_500 },
  rate: { at: AT - 2000, ms: 300_000, n: 60_000, w: 60_000, since: AT - 3_600_000 },
};

function snapshot(plan: Partial<PlanRecord> = {}, c: JobCounts | null = counts): SummarySnapshot {
  const p: PlanRecord = { v: 2, term: 3, finality: "final", generation: 1, planned: 1_000_000, pages: 1000, ...plan };
  const l: LeaderRecord = { v: 2, instance: "pod-a", session: "sa", term: 3, beat: 42, ...(c ? { counts: c } : {}) };
  const m = (session: string, held: number): MemberRecord => ({ v: 2, session, maxInFlight: 500, runtime: "deno", version: "test", beat: 7, held, at: AT - 1000, lease: 15_000 });
  return {
    job: { key: "job", value: JSON.stringify({ v: 3, fingerprint: "fp", createdAt: 0 }), revision: 1 },
    plan: { key: "plan", value: encodeRecord(p), revision: 2 },
    leader: { key: "leader", value: encodeRecord(l), revision: 3 },
    members: [
      { key: "member.pod-a", value: encodeRecord(m("sa", 400)), revision: 4 },
      { key: "member.pod-b", value: encodeRecord(m("sb", 600)), revision: 5 },
    ],
    at: AT,
  };
}

Deno.test("fleet summary: counts, weights, the rate and the ETA from the leader's beat; each member's load as it reports it", () => {
  const v = buildFleetSummary(snapshot());
  assert.equal(v.basis, "beat");
  assert.deepEqual(
    [v.counts.total, v.counts.runnable, v.counts.owned, v.counts.unclaimed, v.counts.completed, v.counts.quarantined],
    [1_000_000, 600_000, 1000, 599_000, 399_000, 1000],
  );
  assert.deepEqual([v.counts.weight, v.counts.completedWeight, v.rate.remainingWeight, v.rate.partialWeight], [1_000_000, 399_000, 599_500, 500]);
  assert.equal(v.rate.perMinute, 12_000);
  // 599,500 weight left at 0.2 per ms from the beat, 2 s before the view.
  assert.deepEqual(v.rate.eta, { state: "estimated", at: AT - 2000 + 2_997_500, inMs: 2_995_500, thenStalled: true });
  assert.deepEqual(v.members.map((m) => [m.instance, m.owned, m.leader, m.liveness]), [["pod-a", 400, true, "alive"], ["pod-b", 600, false, "alive"]]);
  assert.deepEqual([v.splits, v.recent, v.rate.spark.counts], [[], [], []]);
  assert.equal(buildFleetSummary(snapshot(), { state: ["owned", "quarantined"] }).page.matched, 2000, "a query's matches by the counts");
  assert.equal(buildFleetSummary(snapshot(), { owner: "pod-a" }).page.matched, 0, "an owner's splits are not counted on a beat");
});

Deno.test("fleet summary: a decided end counts from its outcome; a leader of an older version (no weights, no rate) counts each split as 1", () => {
  const done = buildFleetSummary(snapshot({ outcome: { kind: "stalled", completed: 999_990, quarantined: 10, permanent: 4 } }));
  assert.deepEqual([done.counts.total, done.counts.completed, done.counts.quarantined, done.counts.permanent, done.counts.runnable], [1_000_000, 999_990, 10, 4, 0]);
  assert.equal(done.rate.eta.state, "stalled");
  const { weight: _, rate: __, ...older } = counts;
  const v = buildFleetSummary(snapshot({}, older));
  assert.deepEqual([v.counts.weight, v.counts.completedWeight, v.rate.perMinute, v.rate.eta.state], [1_000_000, 399_000, null, "unknown"]);
  const none = buildFleetSummary(snapshot({}, null));
  assert.equal(none.counts.total, 0);
});

Deno.test("fleet summary: status prints it with its ETA and where its counts come from; a finished job's result points to --full", () => {
  const text = formatStatus("big", buildFleetSummary(snapshot()));
  assert.match(text, /splits 1000000: 399000 completed, 600000 runnable \(1000 owned, 599000 unclaimed\), 1000 quarantined, 0 cancelled \(39% of the weight completed\)/);
  assert.match(text, /12000\.0 splits\/min over the last 5 min · ETA 2027-01-15 08:\d\d:\d\dZ \(in 49 min 56 s\), then stalled on the quarantined splits/);
  assert.match(text, /counts from the leader's beat 42 \(a job of more than 10,000 splits: no split record read; splitlease status --full reads them all\)/);
  const done = formatStatus("big", buildFleetSummary(snapshot({ outcome: { kind: "allComplete", completed: 1_000_000 } })));
  assert.match(done, /result: 1,000,000 split\(s\) completed \(records, retries, failures and how long it took: splitlease status --full\)/);
});

/** A store that records which keys and listings it was asked for. */
function counting(store: Store, reads: string[]): Store {
  return new Proxy(store, {
    get: (t, p) => {
      if (p === "get") return (k: string) => (reads.push(k), t.get(k));
      if (p === "list") return (f: string) => (reads.push("list " + f), t.list(f));
      const v = Reflect.get(t, p);
      return typeof v === "function" ? v.bind(t) : v;
    },
  });
}

async function large(store: Store, planned: number): Promise<void> {
  const s = snapshot({ planned });
  for (const e of [s.job!, s.plan!, s.leader!, ...s.members]) await store.create(e.key, e.value);
  await store.create(keys.split("s1"), encodeRecord({ v: 2, epoch: 1, status: "completed", owner: null, attempts: 0, weight: 1, progress: null }));
}

Deno.test("fleet overview: a job of more than FULL_READ_MAX_SPLITS splits is summarized, reading no split record; a smaller one is read in full", async () => {
  await using store = new MemoryStore();
  await large(store, FULL_READ_MAX_SPLITS + 1);
  const reads: string[] = [];
  const v = await readFleetOverview(counting(store, reads), { wallNow: () => AT });
  assert.equal(v.basis, "beat");
  assert.deepEqual(reads.sort(), ["job", "leader", "list member.", "plan"]);
  reads.length = 0;
  const full = await readFleetOverview(counting(store, reads), { wallNow: () => AT, full: true });
  assert.equal(full.basis, "records");
  assert.ok(reads.includes("list split.") && reads.includes("list prog."));
  await using small = new MemoryStore();
  await large(small, FULL_READ_MAX_SPLITS);
  assert.equal((await readFleetOverview(small)).basis, "records");
});

Deno.test("fleet overview: wait's progress views of a large job are its summary", async () => {
  await using store = new MemoryStore();
  await large(store, 50_000);
  const seen: FleetView[] = [];
  const w = await waitForOutcome(store, { timeoutMs: 300, pollMs: 50, progressMs: 50, onProgress: (v) => seen.push(v) });
  assert.equal(w.kind, "timeout");
  assert.ok(seen.length > 0 && seen.every((v) => v.basis === "beat" && v.counts.completed === 399_000));
});
