/**
 * The mixed fleet: one Deno, one Bun and one Node 24 worker (the fixture app
 * of tests/runtime/fixtures) complete one backfill on a real store; every
 * record comes out once, every runtime does part of the work, every split
 * is completed and every worker left. Run on nats-server by fleet_test.ts
 * and on PostgreSQL by tests/postgres/fleet_test.ts.
 */
import assert from "node:assert/strict";
import type { Store } from "../../mod.ts";
import { SplitRecordSchema } from "../../src/records.ts";
import { buildOnce, kill, type Proc, type Runtime, RUNTIMES, spawn, withTimeout } from "../helpers/worker_procs.ts";

/** Spawns one worker per runtime, runs `fn`, and kills whatever is still running. */
export async function withFleet(
  env: (rt: Runtime) => Record<string, string>,
  fn: (procs: Proc[]) => Promise<void>,
  runtimes: readonly Runtime[] = RUNTIMES,
): Promise<void> {
  const procs = runtimes.map((rt) => spawn(rt, env(rt)));
  try {
    await fn(procs);
  } finally {
    await Promise.all(procs.map(kill));
  }
}

/** The worker's `finished` line. */
export const finished = (p: Proc): { stats: Record<string, number>; outcome: string } | undefined =>
  p.lines.find((l) => l.event === "finished") as { stats: Record<string, number>; outcome: string } | undefined;
/** The worker's last lines, for a failure message. */
export const tail = (p: Proc): string => `${p.rt}:\n${p.raw.slice(-12).join("\n")}`;

/**
 * Runs the mixed fleet with `storeEnv` (the fixture's STORE and its URL);
 * `open(job)` opens the same store from the test to check the records.
 */
export async function mixedFleet(storeEnv: Record<string, string>, open: (job: string) => Promise<Store>): Promise<void> {
    await buildOnce();
    const dir = await Deno.makeTempDir({ prefix: "splitlease-fleet-" });
    const SPLITS = 12, RECORDS = 40;
    try {
      const out = (rt: Runtime) => `${dir}/${rt}.out`;
      const job = `mixed-fleet-${crypto.randomUUID().slice(0, 8)}`;
      await withFleet((rt) => ({
        ...storeEnv,
        JOB: job,
        INSTANCE: `w-${rt}`,
        SPLITS: String(SPLITS),
        RECORDS: String(RECORDS),
        RECORD_MS: "10",
        MAX_IN_FLIGHT: "4",
        // A fleet of three (tests/runtime/fixtures/app.ts): the plan waits for
        // all three members, and no split completes until each of the three
        // workers has processed a record. A worker holds at most 4 splits, so
        // two cannot finish the 12 and free their lanes before the third
        // joins: every runtime does part of the work, however slowly one of
        // them starts (the barrier fails the run, naming who processed a
        // record, if one never does).
        EXPECT_MEMBERS: String(RUNTIMES.length),
        OUT: out(rt),
      }), async (procs) => {
        const codes = await withTimeout(
          Promise.all(procs.map((p) => p.status.then((s) => s.code))),
          30_000,
          "the fleet completes",
        ).catch((e) => {
          throw new Error(`${e.message}\n${procs.map(tail).join("\n")}`);
        });
        for (const [i, p] of procs.entries()) {
          assert.equal(codes[i], 0, `exit 0\n${tail(p)}`);
          assert.ok(p.lines.some((l) => l.event === "finished" && l.reason === "complete"), `complete on ${p.rt}`);
          assert.deepEqual(finished(p)?.stats.lost ?? {}, {}, `no lane lost on ${p.rt}`);
        }
        // The output of the whole fleet: every record of every split, counted.
        const seen = new Map<string, number>();
        const perWorker: Record<string, number> = {};
        for (const rt of RUNTIMES) {
          const text = await Deno.readTextFile(out(rt)).catch(() => "");
          const lines = text.split("\n").filter(Boolean);
          perWorker[rt] = lines.length;
          for (const l of lines) seen.set(l, (seen.get(l) ?? 0) + 1);
        }
        const missing: string[] = [];
        for (let s = 0; s < SPLITS; s++) {
          for (let r = 1; r <= RECORDS; r++) if (!seen.has(`r${s} ${r}`)) missing.push(`r${s} ${r}`);
        }
        const duplicates = [...seen.values()].reduce((n, c) => n + c - 1, 0);
        console.log(`  records per worker ${JSON.stringify(perWorker)}, duplicates ${duplicates}`);
        assert.deepEqual(missing, [], "no record lost");
        assert.equal(seen.size, SPLITS * RECORDS, "nothing but input records");
        assert.equal(duplicates, 0, "no takeover happened, so cooperative handovers replay nothing");
        for (const rt of RUNTIMES) assert.ok(perWorker[rt] > 0, `${rt} did part of the work`);
        const committed = procs.reduce((n, p) => n + (finished(p)?.stats.recordsCommitted ?? 0), 0);
        assert.equal(committed, SPLITS * RECORDS, "commits add up");
      });
      const store = await open(job);
      try {
        const splits = await store.list("split.");
        assert.equal(splits.length, SPLITS);
        for (const e of splits) assert.equal(SplitRecordSchema.parse(JSON.parse(e.value)).status, "completed");
        assert.equal((await store.list("member.")).length, 0, "every worker left");
      } finally {
        await store.close();
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
}
