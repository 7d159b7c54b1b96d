// What the CLI prints of a sharded job (issue 39, item 4): `status` adds a
// line per shard, `jobs` one line for the job with its shard count (and
// what is wrong with its shards under the table), `wait`'s end line names
// the stalled shards and their splits, or the shard whose planning failed.
// An unsharded job prints as it always did.
import assert from "node:assert/strict";
import { formatJobs, formatStatus } from "../../src/cli/format.ts";
import { endLine } from "../../src/cli/wait_display.ts";
import { buildFleetView } from "../../src/fleet/fleet_view.ts";
import { mergeShardViews } from "../../src/fleet/shard_views.ts";
import { type JobSummary, shardJob, summarizeJob } from "../../admin.ts";
import type { FleetSnapshot } from "../../src/fleet/types.ts";

const entry = (key: string, value: unknown) => ({ key, value: JSON.stringify(value), revision: 1 });
const snap = (i: number, planned: number): FleetSnapshot => ({
  job: entry("job", { v: 3, fingerprint: "fp", createdAt: 0, shard: { index: i, count: 2 } }),
  plan: entry("plan", { v: 2, term: 1, finality: "final", generation: 1, planned }),
  leader: entry("leader", { v: 2, instance: `w${i}`, session: "s", term: 4, beat: 1 }),
  members: [],
  splits: Array.from({ length: planned }, (_, n) => entry(`split.x${i}${n}`, { v: 2, epoch: 0, status: "completed", owner: null, attempts: 0, weight: 1, progress: null })),
  at: 1000,
});

Deno.test("shard format: status adds a line per shard; an unsharded job's status is unchanged", () => {
  const one = buildFleetView(snap(0, 3));
  assert.doesNotMatch(formatStatus("bk", one), /shards \(/);
  const v = mergeShardViews([buildFleetView(snap(0, 3)), buildFleetView(snap(1, 2))], [shardJob("bk", 0), shardJob("bk", 1)]);
  const text = formatStatus("bk", v);
  assert.match(text, /splits 5: 5 completed/);
  assert.match(text, /shards \(2; each with its own leader and records\)\nSHARD\s+RECORDS OF\s+STATE\s+LEADER/);
  assert.match(text, /^0\s+bk\s+running\s+w0 \(term 4\)\s+3\/3/m);
  assert.match(text, /^1\s+bk--shard1\s+running\s+w1 \(term 4\)\s+2\/2/m);
});

Deno.test("shard format: jobs shows a sharded job once with its count, a lone shard whose it is, and the problems", () => {
  const plain = summarizeJob({ job: "plain", record: undefined, plan: undefined, leader: undefined, members: [], bytes: null }, 0);
  const sharded: JobSummary = { ...plain, job: "bk", shards: 3, problem: "shard 2 (bk--shard2) of its 3 has no records: start a worker" };
  const lone: JobSummary = { ...plain, job: "old--shard1", shard: { index: 1, count: 2 } };
  const text = formatJobs([sharded, lone, plain]);
  assert.match(text, /^bk \(3 shards\)\s+-\s+empty/m);
  assert.match(text, /^old--shard1 \(shard 1 of 2\)\s/m);
  assert.match(text, /^plain\s+-\s+empty/m);
  assert.match(text, /\n\nproblems:\n {2}bk: shard 2 \(bk--shard2\) of its 3 has no records/);
  assert.doesNotMatch(formatJobs([plain]), /problems/);
});

Deno.test("shard format: wait's end line names the stalled shards and their splits, or the shard whose planning failed", () => {
  const result = { state: "stalled" as const, outcome: null, skipped: { cancelled: 0, quarantined: 2, permanent: 0 }, paused: null };
  const stall = { kind: "stalled" as const, completed: 9, quarantined: 3 };
  const w = { kind: "outcome" as const, outcome: stall, result, shards: [{ index: 0, job: "bk", outcome: { kind: "allComplete" as const, completed: 5 } }, { index: 1, job: "bk--shard1", outcome: stall }] };
  assert.equal(
    endLine("bk", w, undefined, 3, [{ index: 1, job: "bk--shard1", quarantined: 3, splits: ["a", "b"] }]),
    "bk: stalled: 9 split(s) completed, 3 quarantined (shard 1 (bk--shard1): a, b, …); see them with splitlease splits --state quarantined (exit 3)",
  );
  assert.equal(
    endLine("bk", { kind: "outcome", outcome: stall, result }, undefined, 3),
    "bk: stalled: 9 split(s) completed, 3 quarantined; see them with splitlease splits --state quarantined (exit 3)",
    "unsharded: as always",
  );
  const failed = { kind: "planFailed" as const, error: "no bucket", attempts: 3, term: 1 };
  assert.equal(
    endLine("bk", { kind: "outcome", outcome: failed, result: { ...result, state: "planFailed" }, shards: [{ index: 2, job: "bk--shard2", outcome: failed }] }, undefined, 4),
    "bk: planning failed in shard 2 (bk--shard2) after 3 attempt(s): no bucket (exit 4)",
  );
});

Deno.test("shard metrics: each shard's job-wide gauges come from that shard's leader, labelled shard; an unsharded job's carry no shard", async () => {
  const { renderMetrics } = await import("../../src/http/render_metrics.ts");
  const { ScriptedCoordinator } = await import("../helpers/scripted_coordinator.ts");
  const c = new ScriptedCoordinator("w1");
  c.isLeader = true;
  const plain = renderMetrics(c.status(), c.stats());
  assert.match(plain, /^etl_coordination_splits_completed\{splitlease_job="job1"\} 2$/m);
  const st = c.status();
  const line = (index: number, isLeader: boolean, completed: number) => ({
    index,
    job: shardJob("job1", index),
    state: "running" as const,
    isLeader,
    leader: isLeader ? "w1" : "w2",
    held: 0,
    outcome: index === 2 ? "stalled" as const : null,
    counts: { ...st.counts, completed },
    paused: false,
    liveMembers: ["w1", "w2"],
    members: 2,
  });
  // This member leads shards 0 and 2, not 1: shard 1's counts are the other leader's to export.
  const text = renderMetrics({ ...st, shards: [line(0, true, 5), line(1, false, 7), line(2, true, 11)] }, c.stats());
  const completed = [...text.matchAll(/^etl_coordination_splits_completed\{([^}]*)\} (\d+)$/gm)].map((m) => [m[1], Number(m[2])]);
  assert.deepEqual(completed, [['splitlease_job="job1",shard="0"', 5], ['splitlease_job="job1",shard="2"', 11]]);
  const stalled = [...text.matchAll(/^etl_coordination_job_stalled\{[^}]*shard="(\d)"\} (\d)$/gm)].map((m) => [m[1], m[2]]);
  assert.deepEqual(stalled, [["0", "0"], ["2", "1"]]);
  assert.match(text, /^etl_coordination_leader\{splitlease_job="job1"\} 1$/m);
});
