// The simulation under stale reads at high rates (issue 40, item 1; see
// tests/sim/stale_reads.ts and docs/DESIGN.md, "Fresh reads"). Ordinary
// seeds draw stale reads at varied rates (`SimConfig.staleReads`); these
// runs fix them high, on the schedule the issue reported: three members,
// most member reads stale, one write in ten maybe-landed. On the code
// before the fixes 117 of the first 300 such seeds failed: the plan stayed
// `{finality: open, generation: 0}` with nothing seeded, or splits stayed
// with members that no longer ran them, or restarts were refused as twins.
//
//   STALE_SEEDS=n        seeds of the schedule (default 100)
//   STALE_SEED_BASE=b    first seed (default 1)
import assert from "node:assert/strict";
import { configFor, report, Sim, type SimConfig, type SimResult } from "./sim.ts";

/** The schedule at `seed`: three members, 90 % of member reads and 60 % of other reads stale (1–30 revisions), 10 % of writes maybe-landed. */
export function staleSchedule(seed: number): SimConfig {
  const cfg = configFor(seed);
  cfg.initialWorkers = cfg.maxWorkers = 3;
  cfg.faults.maybe = 0.1;
  cfg.staleReads = { rate: 0.6, memberRate: 0.9, depth: 30 };
  return cfg;
}

async function failures(seeds: readonly number[], config: (seed: number) => SimConfig): Promise<SimResult[]> {
  const failed: SimResult[] = [];
  for (const seed of seeds) {
    const r = await new Sim(config(seed)).run();
    if (!r.ok) failed.push(r);
    if (failed.length >= 5) break;
  }
  return failed;
}

const count = Number(Deno.env.get("STALE_SEEDS") ?? 100);
const base = Number(Deno.env.get("STALE_SEED_BASE") ?? 1);

Deno.test(`stale reads: ${count} schedules of three members with most member reads stale keep every invariant`, async () => {
  const failed = await failures(Array.from({ length: count }, (_, i) => base + i), staleSchedule);
  assert.deepEqual(failed.map((r) => r.seed), [], failed.map(report).join("\n"));
});

/**
 * Seeds of the schedule that fail when one fix is undone alone (each was
 * checked that way; all but 702 also fail on 687bebe, most on the planner):
 * - 208, 650: a new leader's read of `plan` answered with the term before
 *   its own; planning took it for a newer leader's and never ran in the
 *   term (planning). 208 also: a spare's record read "absent" made its
 *   claim give up, and the offer, marked tried, was never claimed while the
 *   leader kept it offered (claims);
 * - 937: a commit whose CAS lost to its own landed write re-read a record
 *   from before its claim and was fenced, its split left naming a member
 *   that no longer ran it (the split CAS); and a heartbeat that lost to its
 *   own landed beat read the predecessor's record and stopped with
 *   DUPLICATE_INSTANCE (the heartbeat's conflict);
 * - 10, 837: every restart of a crashed member was refused as a twin, 128
 *   of them (registration; 10 also the split CAS);
 * - 154, 702: the leader's member watch lagged and its re-read answered the
 *   silent revision: it judged itself dead and took its own split over
 *   (the death judge).
 * The leader beat's and the election's re-reads are covered by
 * tests/coordinator/stale_reads_test.ts.
 */
const FOUND = [208, 650, 937, 10, 837, 154, 702];

Deno.test(`stale reads: the seeds that found each fix (${FOUND.join(", ")}) keep every invariant`, async () => {
  const failed = await failures(FOUND, staleSchedule);
  assert.deepEqual(failed.map((r) => r.seed), [], failed.map(report).join("\n"));
});
