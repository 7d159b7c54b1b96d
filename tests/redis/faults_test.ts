/**
 * Redis as the store under real faults: a fleet of real worker processes
 * (Deno, Bun and Node) copying a table into a fenced sink
 * (`examples/pg_range`), coordinating through a redis-server of the test's
 * own (AOF with `appendfsync always`: a store must never lose an
 * acknowledged write) while that server is, in turn, killed with SIGKILL
 * mid-job and restarted from its AOF, stripped of every client connection
 * (`CLIENT KILL`), frozen with SIGSTOP for longer than a lease, and stopped
 * and restarted from its AOF again.
 *
 * It must end with every row copied (count and checksum), 0 sink rows
 * overwritten by an older epoch (a trigger records every write), 0 zombie
 * commits (in the job's change log no split or progress record goes back
 * in epoch), every split completed with no failure charged, and every
 * worker exiting 0.
 *
 * The source and sink live on the test command's PostgreSQL (PG_URL): only
 * the store is under fault.
 */
import assert from "node:assert/strict";
import { RedisStore } from "../../adapters/redis.ts";
import { silentLogger } from "../../host.ts";
import { SplitRecordSchema } from "../../src/records.ts";
import { withTimeout } from "../helpers/deadline.ts";
import { noPg } from "../helpers/pg.ts";
import { RedisServer } from "../helpers/redis_server.ts";
import { createTables, rangeWorkerEnv, scratch, sinkAgainstSource, staleEpochWrites } from "../helpers/pg_sink.ts";
import { type Proc, reap, spawnWorker } from "../examples/fleet.ts";
import { rawCommand } from "./harness.ts";

const LEASE_MS = 4000;
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test({
  name: "redis faults: SIGKILL and restart from the AOF, client connections killed, SIGSTOP past a lease, a restart mid-job: 0 lost, 0 stale, 0 zombie commits",
  sanitizeOps: false,
  sanitizeResources: false,
  ignore: noPg,
  fn: async () => {
    await using server = await RedisServer.start();
    await using db = await scratch();
    const { sql, schema } = db;
    const workers: Proc[] = [];
    let store: RedisStore | undefined;
    const faults: string[] = [];
    try {
      const rows = 36_000;
      await createTables(sql, schema, { fenced: true, history: true, rows });
      const job = `rf-${schema}`;
      store = await RedisStore.connect({ url: server.url, job, opTimeoutMs: 1000, logger: silentLogger });
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
      const mark = () => workers.map((w) => w.lines.length);
      const since = (from: number[]) => workers.flatMap((w, i) => w.lines.slice(from[i]));

      // 1. kill -9 mid-job (writes in flight unanswered), restarted from the AOF 1.5 s later: the
      // new run id tells every watch that it cannot prove continuity, so they start over.
      await reach(0.1);
      let t = Date.now();
      let from = mark();
      await server.kill();
      await delay(1500);
      await server.restart();
      faults.push(`killed with SIGKILL and restarted from the AOF after ${Date.now() - t} ms`);
      await withTimeout((async () => {
        while (!since(from).some((l) => l.msg === "Watch re-established")) await delay(50);
      })(), 20_000, "a worker's watch re-established after the restart");

      // 2. Every client connection ended by the server: commands in flight fail, the rest reconnect.
      await reach(0.3);
      const killed = await server.killClients();
      assert.ok(killed >= 6, `the workers' connections were there to end (${killed})`);
      faults.push(`${killed} connections killed`);

      // 3. The server frozen for longer than a lease: every worker fences itself, then resumes.
      await reach(0.5);
      t = Date.now();
      from = mark();
      await server.pause();
      await delay(LEASE_MS + 1500);
      await server.resume();
      faults.push(`frozen with SIGSTOP for ${Date.now() - t} ms`);
      const fenced = since(from).filter((l) => /^Self-fenced/.test(String(l.msg))).length;

      // 4. A restart mid-job (SIGTERM, then the AOF loaded again).
      await reach(0.7);
      t = Date.now();
      await server.restart();
      faults.push(`stopped and restarted from the AOF in ${Date.now() - t} ms`);

      const statuses = await withTimeout(Promise.all(workers.map((w) => w.status)), 120_000, "every worker to finish");
      statuses.forEach((st, i) => assert.equal(st.code, 0, `${workers[i].name} exits 0\n${workers[i].raw.slice(-15).join("\n")}`));
      for (const w of workers) {
        const fin = w.lines.find((l) => l.event === "finished") as { reason?: string } | undefined;
        assert.equal(fin?.reason, "complete", `${w.name} finished on completion\n${w.raw.slice(-15).join("\n")}`);
      }

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

      // Zombie commits: in revision order (the log's entry ids), no split record and no progress record goes back
      // to an older epoch. The log must reach back to the job's first revision for the check to be complete.
      const log = (await rawCommand(["XRANGE", `splitlease:{${job}}:log`, "-", "+"], server.url)) as [string, string[]][];
      assert.equal(log[0]?.[0], "1-0", "the change log holds every change of the job");
      const lastEpoch = new Map<string, number>();
      let writes = 0;
      const zombies: string[] = [];
      for (const [, fields] of log) {
        const key = fields[1];
        if (!key.startsWith("split.") && !key.startsWith("prog.")) continue;
        if (fields[3] === undefined) continue; // a delete
        const epoch = Number((JSON.parse(fields[3]) as { epoch?: number }).epoch ?? -1);
        writes++;
        if ((lastEpoch.get(key) ?? -1) > epoch) zombies.push(`${key} went back to epoch ${epoch}`);
        lastEpoch.set(key, Math.max(lastEpoch.get(key) ?? -1, epoch));
      }
      assert.deepEqual(zombies, [], "no split or progress write at an older epoch");
      assert.ok(writes >= records.length * 3, `the change log holds the job's split and progress writes (${writes})`);
      const refused = workers.flatMap((w) => w.lines.filter((l) => l.event === "sinkRefused")).length;
      console.log(
        `  ${faults.join("; ")}; ${dst.n} rows, ${records.length} splits, 0 lost, 0 stale-epoch rows, 0 zombie commits ` +
          `(${writes} split and progress writes checked), ${dst.dups} rows replayed, ${refused} sink writes refused, ` +
          `${fenced} self-fences during the freeze, ${records.filter((r) => r.attempts > 0).length} splits taken over`,
      );
    } catch (e) {
      for (const w of workers) console.error(`--- ${w.name} (${w.rt}) ---\n${w.raw.slice(-25).join("\n")}`);
      throw e;
    } finally {
      await reap(workers);
      await store?.close().catch(() => {});
    }
  },
});
