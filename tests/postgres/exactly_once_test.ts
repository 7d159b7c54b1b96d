/**
 * Exactly once when the sink is the store's database: `examples/pg_range`
 * with `transaction: true` (each batch's upsert and its progress commit in
 * one transaction of the PostgresStore) on a Deno, a Bun and a Node worker.
 * One worker is frozen with SIGSTOP in the middle of a transaction (its
 * connection idle in transaction, holding the batch's rows) for longer than
 * a lease and the store's transaction idle timeout, then resumed; another
 * is killed with SIGKILL in the middle of one. Their splits are taken over
 * and copied again. Every source row must end up in the sink exactly once:
 * the sink counts every write of a row (`copies`), and a row written twice
 * (a replayed batch, a zombie's late write) has 2. A fenced sink without the
 * transaction only promises "no older epoch"; here nothing is replayed.
 */
import assert from "node:assert/strict";
import { PostgresStore } from "../../adapters/postgres.ts";
import { SplitRecordSchema } from "../../src/records.ts";
import { withTimeout } from "../helpers/deadline.ts";
import { noPg, PG_URL } from "../helpers/pg.ts";
import { createTables, rangeWorkerEnv, scratch, sinkAgainstSource, type Sql } from "../helpers/pg_sink.ts";
import { type Proc, reap, spawnWorker } from "../examples/fleet.ts";

const LEASE_MS = 3000;
const TX_IDLE_MS = 1000;
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The state of a worker's transaction connection (`splitlease:<job>:<instance>:tx`) when it is in
 * a transaction, with " (waiting for a lock)" when its statement waits for one.
 */
async function txState(sql: Sql, job: string, w: Proc): Promise<string | undefined> {
  const rows = await sql.unsafe<{ state: string; wait: string | null }[]>(
    `select state, wait_event_type as wait from pg_stat_activity where application_name = $1 and xact_start is not null`,
    [`splitlease:${job}:${w.name}:tx`.slice(0, 63)],
  );
  return rows[0] && rows[0].state + (rows[0].wait === "Lock" ? " (waiting for a lock)" : "");
}

/**
 * Stops `w` with `signal` inside one of its transactions. A batch's
 * transaction lasts a few milliseconds of each batch's cycle, so catching
 * it by chance may take longer than the whole job on a fast machine; here
 * the sink is locked (share mode) instead, so that the worker's next upsert
 * waits inside its transaction, `w` is signalled while it waits, and the
 * lock is released: the upsert then runs (its rows written, uncommitted) in
 * a transaction whose client is stopped or gone, and its commit is never
 * sent. Returns the state the transaction was seen in.
 */
async function stopMidTransaction(sql: Sql, schema: string, job: string, w: Proc, signal: "SIGSTOP" | "SIGKILL"): Promise<string> {
  for (let attempt = 0; attempt < 20; attempt++) {
    if (w.lines.some((l) => l.event === "exit")) {
      // Say why in the failure itself: CI keeps only the end of a run's output.
      const why = w.lines.filter((l) => ["finished", "exit", "stalled", "quarantined"].includes(String(l.event)) || l.level === "error");
      throw new Error(`${w.name} finished before it could be stopped:\n${why.map((l) => JSON.stringify(l)).join("\n")}\n${w.raw.slice(-8).join("\n")}`);
    }
    // Held at most ~0.5 s: the workers' statements in a transaction time out after TX_IDLE_MS.
    const caught = await sql.begin(async (tx) => {
      await tx.unsafe(`set local lock_timeout = 200`);
      await tx.unsafe(`lock table ${schema}.sink in share mode`);
      for (let i = 0; i < 15; i++) {
        const state = await txState(sql, job, w);
        if (state === "active (waiting for a lock)") {
          w.child.kill(signal);
          return state;
        }
        await delay(20);
      }
      return undefined; // holding no split right now: let the fleet go on and try again
    }).catch((e) => {
      if ((e as { code?: string }).code === "55P03") return undefined; // the lock was not granted in time
      throw e;
    });
    if (caught) return caught;
    await delay(100);
  }
  throw new Error(`${w.name} was never caught inside a transaction`);
}

Deno.test({
  name: "exactly once: workers SIGSTOPped and SIGKILLed mid-transaction; every row written exactly once (rows and progress in one transaction)",
  sanitizeOps: false,
  sanitizeResources: false,
  ignore: noPg,
  fn: async () => {
    await using db = await scratch();
    const { sql, schema } = db;
    const job = `eo-${schema}`;
    const workers: Proc[] = [];
    let store: PostgresStore | undefined;
    try {
      const rows = 45_000;
      await createTables(sql, schema, { rows });
      const env = rangeWorkerEnv(schema, job, { STORE_URL: PG_URL }, { leaseMs: LEASE_MS, opTimeoutMs: 1000, maxInFlight: 2 }, {
        transaction: true,
        batchSize: 100,
        batchPauseMs: 40,
        targetSplits: 60,
        planning: "exact",
        poolSize: 2,
      }, { PG_TX_IDLE_TIMEOUT_MS: String(TX_IDLE_MS) });
      (["deno", "bun", "node"] as const).forEach((rt, i) => workers.push(spawnWorker(rt, `w${i + 1}`, "examples/pg_range/main.ts", env)));
      const [frozen, killed] = [workers[0], workers[1]];
      const count = async () => Number((await sql.unsafe(`select count(*)::int as n from ${schema}.sink`))[0].n);
      const reach = (share: number) =>
        withTimeout((async () => {
          while ((await count()) < rows * share) await delay(50);
        })(), 60_000, `${share * 100}% of the rows copied`);

      // Frozen with its transaction open (the batch's rows written, uncommitted and locked), past a
      // lease (its splits are taken over) and past the transaction bound (the server ends its
      // transaction, which frees the rows for the new owner and rolls them back).
      await reach(0.1);
      const frozenIn = await stopMidTransaction(sql, schema, job, frozen, "SIGSTOP");
      const frozenAt = Date.now();
      // Meanwhile another is killed with its transaction open: the server rolls it back when the
      // connection drops.
      await reach(0.2);
      // The server ends the frozen worker's transaction after TX_IDLE_MS; until then it holds the
      // sink's row-exclusive lock, which the next stop's share lock would wait for.
      await withTimeout((async () => {
        while (await txState(sql, job, frozen) !== undefined) await delay(50);
      })(), TX_IDLE_MS + 5000, "the server to end the frozen worker's transaction");
      const killedIn = await stopMidTransaction(sql, schema, job, killed, "SIGKILL");
      await delay(LEASE_MS + TX_IDLE_MS + 1500 - (Date.now() - frozenAt));
      frozen.child.kill("SIGCONT");

      const statuses = await withTimeout(Promise.all(workers.map((w) => w.status)), 90_000, "every worker to finish");
      assert.equal(statuses[1].signal, "SIGKILL");
      for (const i of [0, 2]) {
        assert.equal(statuses[i].code, 0, `${workers[i].name} exits 0\n${workers[i].raw.slice(-15).join("\n")}`);
        const fin = workers[i].lines.find((l) => l.event === "finished") as { reason?: string } | undefined;
        assert.equal(fin?.reason, "complete", `${workers[i].name} finished on completion\n${workers[i].raw.slice(-15).join("\n")}`);
      }

      const { src, dst } = await sinkAgainstSource(sql, schema);
      assert.equal(dst.n, src.n, "every source row is in the sink");
      assert.equal(dst.sum, src.sum, "checksums agree");
      assert.equal(dst.dups, 0, `every row written exactly once (${dst.dups} copies beyond the first)`);

      store = await PostgresStore.connect({ url: PG_URL, job, createJob: false });
      const splits = await store.list("split.");
      const records = splits.map((e) => SplitRecordSchema.parse(JSON.parse(e.value)));
      records.forEach((r, i) => assert.equal(r.status, "completed", splits[i].key));
      const takenOver = records.filter((r) => r.attempts > 0).length;
      assert.ok(takenOver >= 2, `the frozen and the killed worker's splits were taken over (${takenOver})`);
      console.log(
        `  frozen in "${frozenIn}", killed in "${killedIn}"; ${dst.n} rows, ${records.length} splits, ` +
          `${takenOver} taken over, 0 rows written twice`,
      );
    } catch (e) {
      for (const w of workers) console.error(`--- ${w.name} (${w.rt}) ---\n${w.raw.slice(-25).join("\n")}`);
      throw e;
    } finally {
      for (const w of workers) {
        try {
          w.child.kill("SIGCONT");
        } catch { /* gone */ }
      }
      await reap(workers);
      await store?.close().catch(() => {});
    }
  },
});
