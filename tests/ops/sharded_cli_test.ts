// The splitlease CLI on a sharded job over nats-server (issue 39, item 4;
// docs/OPERATIONS.md, "Sharding a job"): two members of a job of 3 shards
// (a bucket each); `jobs` lists the job once with its shard count,
// `status` shows the job folded from its shards with a line per shard,
// `status --job <job>--shard1` reaches that one shard, `pause`/`resume`
// act on every shard, `splits` lists across shards, `wait` ends on the one
// stall naming the shard and split, `requeue` finds the split's shard, and
// `delete` removes every shard's bucket. A shard whose bucket is missing,
// and shards that disagree on their count, are refused naming the fix.
import assert from "node:assert/strict";
import { NatsStore } from "../../nats.ts";
import { ShardedCoordinator, type SplitSource, startWorker, type Store, type Worker } from "../../mod.ts";
import { shardJob, shardOf } from "../../admin.ts";
import { freePort, NatsServer } from "../helpers/nats_server.ts";
import { eachLine } from "../helpers/lines.ts";
import { bin, root, waitFor, withTimeout } from "../helpers/worker_procs.ts";
import { cli, until } from "./operator_session.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };
const K = 3;

Deno.test({
  name: "cli: a job of 3 shards over nats-server is one job to jobs, status, pause, splits, wait, requeue and delete; a shard is reached by its name",
  ...opts,
  fn: async () => {
    await using server = await NatsServer.start();
    const job = `shcli-${crypto.randomUUID().slice(0, 6)}`;
    const env = { NATS_URL: server.wsUrl, JOB: job };
    const ids = Array.from({ length: 12 }, (_, i) => `p${String(i).padStart(2, "0")}`);
    const poison = ids.find((id) => shardOf(id, K) === 1)!;
    let fixed = false;
    let hold = true;
    const source: SplitSource<null> = {
      fingerprint: () => "shcli-v1",
      plan: () => Promise.resolve({ finality: "final", splits: ids.map((id) => ({ id, descriptor: null })) }),
      async run(lane) {
        if (lane.splitId === poison && !fixed) throw new Error(`poison ${poison}: bad row 7`);
        while (hold && !lane.signal.aborted && !lane.revokeSignal.aborted) await new Promise((r) => setTimeout(r, 20));
        if (lane.signal.aborted || lane.revokeSignal.aborted) return;
        await lane.complete({ watermark: 1 });
      },
    };
    const stores: Store[] = [];
    const workers: Worker[] = [];
    // Lanes for every split at once: the poison split runs (and quarantines) while the others are held.
    const tunables = { leaseMs: 1500, opTimeoutMs: 500, drainDeadlineMs: 1000, maxAttempts: 1, retryBackoffMs: 50, maxInFlight: 6 };
    try {
      for (const instance of ["w1", "w2"]) {
        const coordinator = await ShardedCoordinator.join({
          job,
          shards: K,
          instance,
          fingerprint: source.fingerprint(),
          planner: (c) => source.plan(c),
          stores: async ({ job }) => {
            const s = await NatsStore.connect({ servers: server.wsUrl, job, opTimeoutMs: 500 });
            stores.push(s);
            return s;
          },
          ...tunables,
          // Members stay through the stall (as serve's afterStall "wait"): a requeued split runs again.
          leadWhileStalled: true,
        });
        workers.push(startWorker({ coordinator, source, logger: () => {}, abortGraceMs: 500, afterStall: "wait" }));
      }
      const status = async (args: string[] = []) => {
        const r = await cli("deno", ["status", "--json", ...args], env);
        assert.equal(r.code, 0, r.out);
        return JSON.parse(r.stdout);
      };
      let last: unknown;
      await until("every shard planned and the poison split quarantined", async () => {
        const s = last = await status();
        return s.plan?.planned === 12 && s.counts.quarantined === 1;
      }, 30_000).catch((e) => {
        throw new Error(`${e.message}: ${JSON.stringify(last)}`);
      });

      // jobs: the job once, its shard count beside its name; no line per shard.
      const jobs = await cli("deno", ["jobs"], env);
      assert.equal(jobs.code, 0, jobs.out);
      assert.match(jobs.stdout, new RegExp(`^${job} \\(3 shards\\) `, "m"));
      assert.doesNotMatch(jobs.stdout, /--shard\d/, "no shard listed on its own");
      const listed = JSON.parse((await cli("deno", ["jobs", "--json"], env)).stdout).jobs;
      assert.deepEqual(listed.map((j: { job: string; shards: number }) => [j.job, j.shards]), [[job, 3]]);
      assert.deepEqual(listed[0].liveMembers, ["w1", "w2"]);

      // status: the job's counts from every shard, a line per shard.
      const text = await cli("deno", ["status"], env);
      assert.match(text.stdout, /splits 12: /);
      assert.match(text.stdout, /shards \(3; each with its own leader and records\)/);
      for (let i = 0; i < K; i++) assert.match(text.stdout, new RegExp(`^${i}\\s+${shardJob(job, i)}\\s+running\\s+w[12] \\(term \\d+\\)`, "m"));
      const json = await status();
      assert.equal(json.shards.length, 3);
      assert.deepEqual(json.members.map((m: { instance: string }) => m.instance), ["w1", "w2"], "one line per member");
      // One shard, by its name: that shard alone.
      const one = await status(["--job", shardJob(job, 1)]);
      assert.equal(one.shards, undefined);
      assert.equal(one.counts.total, ids.filter((id) => shardOf(id, K) === 1).length);

      // pause and resume: every shard's plan record.
      const paused = await cli("deno", ["pause", "--reason", "db maintenance"], env);
      assert.equal(paused.code, 0, paused.out);
      assert.match(paused.stdout, /Job paused in its 3 shards/);
      for (let i = 0; i < K; i++) {
        const s = await status(["--job", shardJob(job, i)]);
        assert.equal(s.result.state, "paused", `shard ${i}`);
      }
      assert.equal((await status()).result.state, "paused");
      const resumed = await cli("deno", ["resume"], env);
      assert.match(resumed.stdout, /Job resumed in its 3 shards/);

      // splits across shards: the quarantined one, and every split paged by id.
      const q = JSON.parse((await cli("deno", ["splits", "--state", "quarantined", "--json"], env)).stdout);
      assert.deepEqual(q.splits.map((s: { id: string }) => s.id), [poison]);
      const p1 = JSON.parse((await cli("deno", ["splits", "--limit", "7", "--json"], env)).stdout);
      const p2 = JSON.parse((await cli("deno", ["splits", "--limit", "7", "--after", p1.page.next, "--json"], env)).stdout);
      assert.deepEqual([...p1.splits, ...p2.splits].map((s: { id: string }) => s.id), ids);

      // The rest completes: the job stalls on its one quarantined split, named with its shard.
      hold = false;
      const w = await cli("deno", ["wait", "--timeout", "60s"], env);
      assert.equal(w.code, 3, w.out);
      assert.match(w.out, new RegExp(`stalled: 11 split\\(s\\) completed, 1 quarantined \\(shard 1 \\(${shardJob(job, 1)}\\): ${poison}\\)`));
      const wj = JSON.parse((await cli("deno", ["wait", "--json", "--timeout", "10s"], env)).stdout);
      assert.deepEqual(wj.stalled, [{ index: 1, job: shardJob(job, 1), quarantined: 1, splits: [poison] }]);
      assert.equal(wj.shards.length, 3);

      // delete: refused while the stalled job's members live.
      const refused = await cli("deno", ["delete", "--yes"], env);
      assert.equal(refused.code, 3, refused.out);
      assert.match(refused.out, /has 2 live member\(s\)/);

      // splitlease ui on the sharded job: a member of every shard serving the job's one page and /fleet.
      const port = freePort();
      const out: string[] = [];
      const ui = new Deno.Command(bin("deno"), {
        args: ["run", "-A", "cli.ts", "ui", "--port", String(port), "--lease-ms", "1500", "-j", job, "-s", server.wsUrl],
        cwd: root,
        env: { NO_COLOR: "1", PATH: Deno.env.get("PATH") ?? "" },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const pumps = Promise.all([ui.stdout, ui.stderr].map((x) => eachLine(x, (l) => void out.push(l))));
      try {
        const view = await waitFor("the ui's /fleet of the sharded job", async () => {
          const r = await fetch(`http://127.0.0.1:${port}/fleet`).catch(() => undefined);
          const v = r?.ok ? await r.json() : (await r?.body?.cancel(), undefined);
          return v?.shards?.length === 3 && v.counts.quarantined === 1 ? v : undefined;
        }, 30_000).catch((e) => {
          throw new Error(`${e.message}\n${out.slice(-15).join("\n")}`);
        });
        assert.deepEqual([view.job, view.counts.total, view.counts.completed], [job, 12, 11]);
        assert.ok(view.members.some((m: { ui: boolean }) => m.ui), "the ui is a member of the job, in every shard");
        const st = await (await fetch(`http://127.0.0.1:${port}/status`)).json();
        assert.deepEqual(st.shards.map((x: { job: string }) => x.job), [0, 1, 2].map((i) => shardJob(job, i)));
      } finally {
        ui.kill("SIGINT");
        assert.equal((await withTimeout(ui.status, 30_000, "the ui to exit on SIGINT")).code, 0, out.slice(-15).join("\n"));
        await pumps;
      }

      // requeue finds the split's shard; the job completes.
      fixed = true;
      const rq = JSON.parse((await cli("deno", ["requeue", poison, "--json"], env)).stdout);
      assert.deepEqual([rq.outcome, rq.shard, rq.reopened], ["requeued", 1, true]);
      const done = await cli("deno", ["wait", "--timeout", "60s"], env);
      assert.equal(done.code, 0, done.out);
      assert.match(done.out, /complete: 12 split\(s\) completed/);

      // The members leave the completed job; delete removes every shard's bucket.
      await Promise.all(workers.map((x) => x.done));
      const del = await cli("deno", ["delete", "--yes"], env);
      assert.equal(del.code, 0, del.out);
      assert.match(del.out, new RegExp(`deleted job "${job}" \\(complete; 3 shards: bucket splitlease_${job}, bucket splitlease_${job}--shard1, bucket splitlease_${job}--shard2\\)`));
      for (let i = 0; i < K; i++) {
        await assert.rejects(NatsStore.connect({ servers: server.wsUrl, job: shardJob(job, i), createBucket: false }), /has no bucket/);
      }
    } finally {
      await Promise.all(workers.map((x) => x.shutdown({ reason: "test", deadlineMs: 0 }).catch(() => {})));
      await Promise.all(stores.map((s) => s.close().catch(() => {})));
    }
  },
});

Deno.test({
  name: "cli: a sharded job with a shard's bucket missing, or shards that disagree on their count, exits 1 naming the shard and the fix",
  ...opts,
  fn: async () => {
    await using server = await NatsServer.start();
    const record = (index: number, count: number) => JSON.stringify({ v: 3, fingerprint: "fp", createdAt: 0, shard: { index, count } });
    const make = async (job: string, value: string) => {
      await using s = await NatsStore.connect({ servers: server.wsUrl, job });
      await s.create("job", value);
    };
    await make("gap", record(0, 3));
    await make("gap--shard1", record(1, 3));
    const gap = await cli("deno", ["status", "--job", "gap"], { NATS_URL: server.wsUrl });
    assert.equal(gap.code, 1, gap.out);
    assert.match(gap.out, /job "gap" has 3 shards \(its job record says so\), but shard 2's records \(job "gap--shard2"\) cannot be opened: .*splitlease_gap--shard2.*start a worker of the job/);
    const listed = await cli("deno", ["jobs"], { NATS_URL: server.wsUrl });
    assert.match(listed.stdout, /^gap \(3 shards\) /m);
    assert.match(listed.stdout, /gap: shard 2 \(gap--shard2\) of its 3 has no records/);
    const del = await cli("deno", ["delete", "--yes", "--job", "gap"], { NATS_URL: server.wsUrl });
    assert.equal(del.code, 3, del.out);
    assert.match(del.out, /--force deletes the shards it has/);

    await make("mix", record(0, 2));
    await make("mix--shard1", record(1, 3));
    const mix = await cli("deno", ["splits", "--job", "mix"], { NATS_URL: server.wsUrl });
    assert.equal(mix.code, 1, mix.out);
    assert.match(mix.out, /the shards of job "mix" disagree on their count: shard 0's job record says 2 shards, shard 1's \(job "mix--shard1"\) says 3 shards\. Every member of a job must run with the same shards: delete the job/);
    // The stray shard, reached by its name: that shard alone.
    const stray = await cli("deno", ["status", "--json", "--job", "mix--shard1"], { NATS_URL: server.wsUrl });
    assert.equal(stray.code, 0, stray.out);
  },
});
