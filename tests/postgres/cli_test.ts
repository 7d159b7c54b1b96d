// The splitlease CLI with a postgres:// store URL: connection errors named
// (nothing created), the operator session of tests/ops (status, splits,
// requeue, drain, cancel on Deno and Node), `ui` serving the fleet page,
// /fleet and /metrics of a running job and then of the finished one,
// `jobs` / `delete` on the database's jobs, a SIGKILLed worker shown gone
// and a misconfigured one leaving no job row (tests/ops/dead_member.ts).
import assert from "node:assert/strict";
import { SplitCoordinator, type SplitSource, startWorker, type Worker } from "../../mod.ts";
import { PostgresStore } from "../../adapters/postgres.ts";
import { bin, root } from "../helpers/worker_procs.ts";
import { freshJob, noPg, PG_URL, sqlOnce } from "../helpers/pg.ts";
import { cli, operatorSession, until } from "../ops/operator_session.ts";
import { badConfigLeavesNothing, deadMemberShownDead } from "../ops/dead_member.ts";
import { eachLine } from "../helpers/lines.ts";

const opts = { sanitizeResources: false, sanitizeOps: false, ignore: noPg };

Deno.test({
  name: "cli on PostgreSQL: an unknown job, a database without the tables or an unreachable server exit 1 naming it; nothing is created",
  ...opts,
  fn: async () => {
    const env = { STORE_URL: PG_URL };
    // A job that exists, so the schema does: an unknown one next to it is named, not created.
    const s = await PostgresStore.connect({ url: PG_URL, job: freshJob("clijob") });
    await s.close();
    const unknown = await cli("deno", ["status", "--job", "no-such-job"], env);
    assert.equal(unknown.code, 1, unknown.out);
    assert.match(unknown.out, /no job "no-such-job" in schema splitlease/);
    assert.deepEqual(await sqlOnce("select 1 from splitlease.jobs where name = 'no-such-job'"), [], "the CLI created no job");
    const bare = await cli("deno", ["status", "--job", "x"], { STORE_URL: PG_URL.replace(/\/test$/, "/postgres") });
    assert.equal(bare.code, 1, bare.out);
    assert.match(bare.out, /schema splitlease has no splitlease tables .*postgresSchemaSql/);
    assert.deepEqual(await sqlOnce("select 1 from pg_namespace where nspname = 'splitlease'", [], PG_URL.replace(/\/test$/, "/postgres")), []);
    const down = await cli("node", ["status", "--job", "x", "--op-timeout-ms", "500"], { STORE_URL: "postgres://postgres@127.0.0.1:1/test" });
    assert.equal(down.code, 1, down.out);
    assert.match(down.out, /STORE_UNAVAILABLE/);
    const natsFlags = await cli("deno", ["status", "--job", "x", "--token", "t"], env);
    assert.equal(natsFlags.code, 1);
    assert.match(natsFlags.out, /NATS options: put PostgreSQL's user and password in the URL/);
  },
});

Deno.test({
  name: "cli on PostgreSQL: an operator session on a live fleet (deno cli.ts and node dist/cli.js)",
  ...opts,
  fn: () => operatorSession(freshJob("ops"), { STORE_URL: PG_URL }, (job) => PostgresStore.connect({ url: PG_URL, job, opTimeoutMs: 400 })),
});

Deno.test({
  name: "cli on PostgreSQL: ui serves the fleet page, /fleet and /metrics of a running job and the finished job until SIGINT; jobs lists it, delete removes it",
  ...opts,
  fn: async () => {
    const job = freshJob("ui");
    let release!: () => void;
    const hold = new Promise<void>((r) => (release = r));
    const source: SplitSource<{ n: number }> = {
      fingerprint: () => "ui-v1",
      plan: () => Promise.resolve({ finality: "final", splits: [0, 1, 2].map((n) => ({ id: `u${n}`, descriptor: { n } })) }),
      async run(lane) {
        await hold;
        await lane.complete({ watermark: 1 });
      },
    };
    const store = await PostgresStore.connect({ url: PG_URL, job, opTimeoutMs: 400 });
    let worker: Worker | undefined;
    let ui: Deno.ChildProcess | undefined;
    try {
      const coordinator = await SplitCoordinator.join({
        store, job, instance: "w1", fingerprint: "ui-v1", planner: (c) => source.plan(c), leaseMs: 1000, opTimeoutMs: 400, maxInFlight: 3,
      });
      worker = startWorker({ coordinator, source, logger: () => {} });
      await until("the splits held", () => coordinator.status().held.length === 3);
      ui = new Deno.Command(bin("deno"), {
        args: ["run", "-A", "cli.ts", "ui", "--port", "0", "--lease-ms", "1000"],
        cwd: root,
        env: { STORE_URL: PG_URL, JOB: job, NO_COLOR: "1" },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      let base = "";
      const lines: string[] = [];
      void eachLine(ui.stdout, () => {});
      void eachLine(ui.stderr, (line) => {
        lines.push(line);
        const m = /at (http:\/\/[^ ]+\/) /.exec(line);
        if (m) base = m[1];
      });
      await until("ui to serve", () => base !== "", 20_000);
      const fleet = await (await fetch(`${base}fleet`)).json() as { members: { instance: string }[]; counts: { total: number; owned: number } };
      assert.deepEqual(fleet.members.map((m) => m.instance).filter((i) => i === "w1"), ["w1"]);
      assert.deepEqual([fleet.counts.total, fleet.counts.owned], [3, 3]);
      const page = await (await fetch(base)).text();
      assert.match(page, /<html/i);
      const metrics = await (await fetch(`${base}metrics`)).text();
      assert.match(metrics, /^etl_coordination_store_op_duration_seconds_count/m);
      release();
      // The finished job stays on its page, read-only, until Ctrl-C.
      await until("ui to say the job is complete", () => lines.some((l) => l.includes("is complete; its page stays up read-only")), 20_000);
      await until("the page to show the finished job", async () => {
        const done = await (await fetch(`${base}fleet`)).json() as { counts: { completed: number }; plan: { outcome: string | null } };
        return done.counts.completed === 3 && done.plan.outcome === "allComplete";
      });
      ui.kill("SIGINT");
      assert.equal((await ui.status).code, 0, "ui exits 0 on SIGINT");
      await worker.done;
      // The database's jobs: this one, complete, no member live; delete removes its rows.
      const env = { STORE_URL: PG_URL, JOB: job };
      const jobs = await cli("node", ["jobs", "--json", "--job", job], { STORE_URL: PG_URL });
      assert.equal(jobs.code, 0, jobs.out);
      const listed = JSON.parse(jobs.stdout).jobs;
      assert.deepEqual(listed.map((j: { job: string; state: string; liveMembers: string[] }) => [j.job, j.state, j.liveMembers]), [[job, "complete", []]]);
      assert.ok(listed[0].finishedAt >= listed[0].createdAt, JSON.stringify(listed[0]));
      const del = await cli("deno", ["delete", "--yes"], env);
      assert.equal(del.code, 0, del.out);
      assert.equal(del.stdout.trim(), `deleted job "${job}" (complete; rows in PostgreSQL)`);
      assert.equal((await cli("deno", ["jobs", "--job", job], { STORE_URL: PG_URL })).stdout.trim(), "no jobs (no job rows in this database's splitlease schema)");
    } finally {
      release();
      try {
        ui?.kill("SIGKILL");
      } catch { /* gone */ }
      await ui?.status.catch(() => {});
      await worker?.shutdown({ deadlineMs: 0 }).catch(() => {});
      await store.close();
    }
  },
});

Deno.test({
  name: "cli on PostgreSQL: a SIGKILLed worker is shown gone (not working) once past its lease, jobs and delete count only the live member, and its record goes when the job is done (issue 40, item 3)",
  ...opts,
  fn: () => deadMemberShownDead(freshJob("dead"), { STORE: "postgres", PG_STORE_URL: PG_URL }, { STORE_URL: PG_URL }),
});

Deno.test({
  name: "cli on PostgreSQL: a worker refused for its configuration leaves no job row, and an empty job deletes without --force (issue 40, item 5)",
  ...opts,
  fn: async () => {
    const job = freshJob("badcfg");
    await badConfigLeavesNothing(
      job,
      { STORE: "postgres", PG_STORE_URL: PG_URL },
      { STORE_URL: PG_URL },
      async () => (await sqlOnce("select 1 from splitlease.jobs where name = $1", [job])).length === 0,
      async (empty) => await (await PostgresStore.connect({ url: PG_URL, job: empty })).close(),
    );
  },
});
