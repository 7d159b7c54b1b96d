/**
 * PostgreSQL as the store under real faults: a fleet of real worker
 * processes (Deno, Bun and Node) copying a table into a fenced sink
 * (`examples/pg_range`), coordinating through a PostgreSQL server of the
 * test's own (synchronous commits: a store must never lose an acknowledged
 * write) while that server is, in turn, killed with SIGKILL mid-job and
 * restarted, stripped of every worker connection (`pg_terminate_backend`),
 * made to time statements out (`statement_timeout` while the job's counter
 * row is locked) and frozen with SIGSTOP for longer than a lease.
 *
 * It must end with every row copied (count and checksum), 0 sink rows
 * overwritten by an older epoch (a trigger records every write), 0 zombie
 * commits (in the store's change log no split record goes back in epoch),
 * every split completed with no failure charged, and every worker exiting 0.
 *
 * The source and sink live on the test command's server (PG_URL): only the
 * store is under fault.
 */
import assert from "node:assert/strict";
import { PostgresStore } from "../../adapters/postgres.ts";
import { StoreUnavailableError } from "../../store.ts";
import { SplitRecordSchema } from "../../src/records.ts";
import { withTimeout } from "../helpers/deadline.ts";
import { noPg } from "../helpers/pg.ts";
import { PgServer } from "../helpers/pg_server.ts";
import { createTables, scratch, sinkAgainstSource, staleEpochWrites, rangeWorkerEnv } from "../helpers/pg_sink.ts";
import { type Proc, reap, spawnWorker } from "../examples/fleet.ts";

const LEASE_MS = 4000;
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Writes one key of the job every 50 ms: when could a client write, and how many answers were lost? */
class Probe {
  #stop = false;
  #done: Promise<void>;
  failed = 0;
  constructor(store: PostgresStore) {
    this.#done = this.#run(store);
  }
  async #run(store: PostgresStore): Promise<void> {
    let rev = 0;
    let n = 0;
    while (!this.#stop) {
      try {
        const r = rev ? await store.update("probe", String(++n), rev) : await store.create("probe", String(++n));
        rev = r.ok ? r.revision : (await store.get("probe"))?.revision ?? 0;
      } catch (e) {
        if (!(e instanceof StoreUnavailableError)) throw e;
        this.failed++;
        rev = await store.get("probe").then((c) => c?.revision ?? rev, () => rev);
      }
      await delay(50);
    }
  }
  async stop(): Promise<void> {
    this.#stop = true;
    await this.#done;
  }
}

Deno.test({
  name: "postgres faults: SIGKILL and restart, connections terminated, statement timeouts, SIGSTOP past a lease: 0 lost, 0 stale, 0 zombie commits",
  sanitizeOps: false,
  sanitizeResources: false,
  ignore: noPg,
  fn: async () => {
    await using server = await PgServer.start();
    // Every session of the store's database times a statement out after 500 ms (the fault
    // below holds the job's counter row longer than that).
    await server.psql("postgres", "alter database test set statement_timeout = '500ms'");
    await using db = await scratch();
    const { sql, schema } = db;
    const workers: Proc[] = [];
    let probe: Probe | undefined;
    let store: PostgresStore | undefined;
    const faults: string[] = [];
    try {
      const rows = 36_000;
      await createTables(sql, schema, { fenced: true, history: true, rows });

      const job = `pgf-${schema}`;
      store = await PostgresStore.connect({ url: server.url, job, opTimeoutMs: 1000 });
      const env = rangeWorkerEnv(schema, job, { STORE_URL: server.url }, { leaseMs: LEASE_MS, opTimeoutMs: 1000, maxInFlight: 3 }, {
        splitColumn: "split_id",
        epochColumn: "epoch",
        batchSize: 100,
        batchPauseMs: 250,
        targetSplits: 72,
        planning: "exact",
        poolSize: 2,
      });
      (["deno", "bun", "node"] as const).forEach((rt, i) => workers.push(spawnWorker(rt, `w${i + 1}`, "examples/pg_range/main.ts", env)));
      const count = async () => Number((await sql.unsafe(`select count(*)::int as n from ${schema}.sink`))[0].n);
      const reach = (share: number) =>
        withTimeout(
          (async () => {
            while ((await count()) < rows * share) {
              if (workers.some((w) => w.lines.some((l) => l.event === "exit"))) throw new Error("a worker exited before the job was done");
              await delay(50);
            }
          })(),
          90_000,
          `${share * 100}% of the rows copied`,
        );
      const linesAt = () => workers.reduce((n, w) => n + w.lines.length, 0);
      /** The workers' log lines from a mark (`mark()`) on. */
      const mark = () => workers.map((w) => w.lines.length);
      const since = (from: number[]) => workers.flatMap((w, i) => w.lines.slice(from[i]));

      await reach(0.1);
      probe = new Probe(store);

      // 1. The server is killed mid-job (every connection reset, writes in flight unanswered) and
      // restarted 1.5 s later (crash recovery): watches cannot prove continuity and start over.
      let t = Date.now();
      let from = mark();
      await server.kill();
      await delay(1500);
      await server.restart();
      faults.push(`killed with SIGKILL and restarted after ${Date.now() - t} ms`);
      await withTimeout((async () => {
        while (!since(from).some((l) => l.msg === "Watch re-established")) await delay(50);
      })(), 20_000, "a worker's watch re-established after the restart");

      // 2. Every worker connection ended by the server: statements in flight fail, the rest reconnect.
      await reach(0.3);
      const ended = Number(await server.psql("test", "select count(pg_terminate_backend(pid)) from pg_stat_activity where application_name like 'splitlease:%'"));
      assert.ok(ended >= 6, `the workers' connections were there to end (${ended})`);
      faults.push(`${ended} connections terminated`);

      // 3. The job's counter row held for 2 s by another session: every write of the job waits and is
      // cancelled by statement_timeout (57014) after 500 ms.
      await reach(0.45);
      t = Date.now();
      const before = probe.failed;
      await server.psql(
        "test",
        `set statement_timeout = 0; begin; select 1 from splitlease.jobs where name = '${job}' for update; select pg_sleep(2); commit;`,
      );
      assert.ok(probe.failed > before, "the probe's writes timed out while the counter row was held");
      faults.push(`statement timeouts for ${Date.now() - t} ms (${probe.failed - before} probe writes failed)`);

      // 4. The server frozen for longer than a lease: every worker fences itself, then resumes.
      await reach(0.6);
      t = Date.now();
      from = mark();
      await server.pause();
      await delay(LEASE_MS + 1500);
      await server.resume();
      faults.push(`frozen with SIGSTOP for ${Date.now() - t} ms`);
      const fenced = since(from).filter((l) => /^Self-fenced/.test(String(l.msg))).length;

      const statuses = await withTimeout(Promise.all(workers.map((w) => w.status)), 120_000, "every worker to finish");
      statuses.forEach((st, i) => assert.equal(st.code, 0, `${workers[i].name} exits 0\n${workers[i].raw.slice(-15).join("\n")}`));
      for (const w of workers) {
        const fin = w.lines.find((l) => l.event === "finished") as { reason?: string } | undefined;
        assert.equal(fin?.reason, "complete", `${w.name} finished on completion\n${w.raw.slice(-15).join("\n")}`);
      }
      await probe.stop();

      const { src, dst } = await sinkAgainstSource(sql, schema);
      assert.equal(dst.n, src.n, "every source row is in the sink");
      assert.equal(dst.sum, src.sum, "checksums agree");
      assert.equal(await staleEpochWrites(sql, schema), 0, "no sink row overwritten by an older epoch of its split");

      const splits = await store.list("split.");
      const records = splits.map((e) => SplitRecordSchema.parse(JSON.parse(e.value)));
      assert.ok(records.length >= 60, `${records.length} splits planned`);
      records.forEach((r, i) => assert.equal(r.status, "completed", splits[i].key));
      const failed = records.flatMap((r, i) => (r.failures?.length ? [`${splits[i].key}: ${r.failures.map((f) => f.message).join("; ")}`] : []));
      assert.deepEqual(failed, [], "no split charged a failure by a fault");
      // Zombie commits: in revision order, no split record and no progress record goes back to an older epoch.
      const history = await server.psql(
        "test",
        `select string_agg(l.key || ' ' || coalesce((l.value::json->>'epoch'), 'deleted'), ',' order by l.revision)
           from splitlease.log l join splitlease.jobs j on j.id = l.job where j.name = '${job}' and (l.key like 'split.%' or l.key like 'prog.%')`,
      );
      const lastEpoch = new Map<string, number>();
      let writes = 0;
      const zombies: string[] = [];
      for (const entry of history.split(",")) {
        const [key, epoch] = entry.split(" ");
        if (epoch === "deleted") continue;
        writes++;
        if ((lastEpoch.get(key) ?? -1) > Number(epoch)) zombies.push(`${key} went back to epoch ${epoch}`);
        lastEpoch.set(key, Math.max(lastEpoch.get(key) ?? -1, Number(epoch)));
      }
      assert.deepEqual(zombies, [], "no split or progress write at an older epoch");
      assert.ok(writes >= records.length * 3, `the change log holds the job's split and progress writes (${writes})`);
      const refused = workers.flatMap((w) => w.lines.filter((l) => l.event === "sinkRefused")).length;
      console.log(
        `  ${faults.join("; ")}; ${dst.n} rows, ${records.length} splits, 0 lost, 0 stale-epoch rows, 0 zombie commits ` +
          `(${writes} split and progress writes checked), ${dst.dups} rows replayed, ${refused} sink writes refused, ` +
          `${fenced} self-fences during the freeze, ${records.filter((r) => r.attempts > 0).length} splits taken over, ` +
          `${probe.failed} probe writes failed, ${linesAt()} worker log lines`,
      );
    } catch (e) {
      for (const w of workers) console.error(`--- ${w.name} (${w.rt}) ---\n${w.raw.slice(-25).join("\n")}`);
      throw e;
    } finally {
      await probe?.stop().catch(() => {});
      await reap(workers);
      await store?.close().catch(() => {});
    }
  },
});
