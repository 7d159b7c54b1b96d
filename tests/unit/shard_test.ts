// The pure rules of a sharded job (docs/DESIGN.md, "Sharded jobs"): where a
// split lives, the shard jobs' names, the shard count's check and the one
// outcome of K shards.
import assert from "node:assert/strict";
import fc from "fast-check";
import { checkShards, MAX_SHARDS, parseShardJob, shardJob, shardOf } from "../../src/coordinator/shard.ts";
import { jobOutcomeOfShards, type ShardOutcome } from "../../src/coordinator/shard_outcome.ts";
import { SplitleaseError } from "../../src/errors.ts";

Deno.test("shardOf: one shard per id, the same every time, in range", () => {
  fc.assert(fc.property(fc.string({ minLength: 1, maxLength: 64 }), fc.integer({ min: 1, max: MAX_SHARDS }), (id, k) => {
    const s = shardOf(id, k);
    assert.ok(Number.isInteger(s) && s >= 0 && s < k);
    assert.equal(shardOf(id, k), s);
  }));
  assert.equal(shardOf("anything", 1), 0);
});

Deno.test("shardOf spreads ids of one shape evenly: each of 4 shards gets 25 ± 2 % of 20,000 numbered ids", () => {
  const n = [0, 0, 0, 0];
  for (let i = 0; i < 20_000; i++) n[shardOf(`s${String(i).padStart(6, "0")}`, 4)]++;
  for (const c of n) assert.ok(Math.abs(c / 20_000 - 0.25) < 0.02, `shares ${n}`);
});

Deno.test("shardJob and parseShardJob round-trip; shard 0 is the job itself, and a plain job name is no other shard", () => {
  fc.assert(fc.property(fc.stringMatching(/^[a-z][a-z0-9_-]{0,20}$/), fc.integer({ min: 1, max: MAX_SHARDS - 1 }), (job, i) => {
    assert.deepEqual(parseShardJob(shardJob(job, i)), { job, index: i });
  }));
  assert.equal(shardJob("backfill", 0), "backfill");
  assert.equal(parseShardJob("backfill"), undefined);
  assert.equal(parseShardJob("backfill--shard0"), undefined);
});

Deno.test("checkShards: 1 to 64 whole shards; anything else is refused naming the value and the range", () => {
  assert.equal(checkShards("j", 1), 1);
  assert.equal(checkShards("j", MAX_SHARDS), MAX_SHARDS);
  for (const bad of [0, -1, 1.5, MAX_SHARDS + 1, "4", Number.NaN, null]) {
    assert.throws(() => checkShards("j", bad), (e: unknown) =>
      e instanceof SplitleaseError && e.code === "INVALID_CONFIG" && e.message.includes(String(bad)) && e.message.includes(String(MAX_SHARDS)), `refuses ${String(bad)}`);
  }
});

const done = (completed: number, cancelled?: number): ShardOutcome => ({ type: "allComplete", completed, ...(cancelled ? { cancelled } : {}) });
const stalled = (completed: number, quarantined: number): ShardOutcome => ({ type: "stalled", completed, quarantined });

Deno.test("jobOutcomeOfShards: none while a shard has none; complete when every shard is, with the counts of all", () => {
  assert.equal(jobOutcomeOfShards([done(3), undefined, done(2)]), undefined);
  assert.deepEqual(jobOutcomeOfShards([done(3), done(4, 1), done(2)]), { event: { type: "allComplete", completed: 9, cancelled: 1 }, shards: [] });
});

Deno.test("jobOutcomeOfShards: stalled naming the shards that stalled, once every shard has an outcome; a failed plan decides at once", () => {
  assert.equal(jobOutcomeOfShards([stalled(1, 2), undefined]), undefined);
  assert.deepEqual(jobOutcomeOfShards([done(5), stalled(1, 2), stalled(0, 1)]), { event: { type: "stalled", completed: 6, quarantined: 3 }, shards: [1, 2] });
  const failed: ShardOutcome = { type: "planFailed", error: "boom", attempts: 3 } as ShardOutcome;
  assert.deepEqual(jobOutcomeOfShards([undefined, failed, done(1)]), { event: failed, shards: [1] });
});
