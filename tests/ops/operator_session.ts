// The operator session of the CLI (tests/ops/cli_test.ts on nats-server,
// tests/postgres/cli_test.ts on PostgreSQL): a live two-worker fleet, then
// status, the quarantined split with its failures, requeue, drain of a named
// member and cancel of a held split through `deno run -A cli.ts` and
// `node dist/cli.js`, ending in a completed job.
import assert from "node:assert/strict";
import { SplitCoordinator, startWorker, type Worker } from "../../mod.ts";
import { createApp } from "../../host.ts";
import type { SplitSource, Store } from "../../mod.ts";
import { runCmd } from "../helpers/cmd.ts";
import { withTimeout } from "../helpers/deadline.ts";
import { bin, buildOnce, root } from "../helpers/worker_procs.ts";

/** Runs the CLI on `rt`; returns its exit code, stdout and everything it printed. */
export async function cli(rt: "deno" | "node", args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; out: string }> {
  const [cmd, pre] = rt === "deno" ? [bin("deno"), ["run", "-A", "cli.ts"]] : [bin("node"), ["dist/cli.js"]];
  const r = await runCmd(cmd, [...pre, ...args], {
    cwd: root,
    env: { PATH: Deno.env.get("PATH") ?? "", HOME: Deno.env.get("HOME") ?? "/tmp", NO_COLOR: "1", ...env },
    check: false,
    timeoutMs: 30_000,
    what: `splitlease ${args.join(" ")} on ${rt}`,
  });
  return { code: r.code, stdout: r.stdout, out: r.out };
}

/** Waits until `cond` holds, for at most `ms`. */
export async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * The session on job `job`: `storeEnv` points the CLI at the store (NATS_URL
 * or STORE_URL), `open(job)` opens a worker's store on it.
 */
export async function operatorSession(job: string, storeEnv: Record<string, string>, open: (job: string) => Promise<Store>): Promise<void> {
    const built = buildOnce();
    const env = { ...storeEnv, JOB: job };
    let poisoned = true;
    const aborted = new Set<string>();
    const ids = ["p0", "p1", "p2", "p3", "p4", "p5"];
    const source: SplitSource<{ n: number }> = {
      fingerprint: () => "ops-cli-v1",
      plan: () => Promise.resolve({ finality: "final", splits: ids.map((id, n) => ({ id, descriptor: { n } })) }),
      async run(lane) {
        if (lane.splitId === "p5" && poisoned) throw new Error("poison p5: unexpected token at line 7");
        if (lane.splitId === "p4") {
          // Runs until it is cancelled (lost) or handed over (revoked).
          await new Promise<void>((r) => {
            lane.signal.addEventListener("abort", () => r());
            lane.revokeSignal.addEventListener("abort", () => r());
          });
          // Dropped (lost) by the cancel, or revoked by the drain of the job it completed (whichever
          // reaches the worker first: the leader writes both at once).
          aborted.add(`${lane.splitId}@${lane.epoch}`);
          return;
        }
        await lane.commit({ watermark: 1 });
        await lane.complete({ watermark: 2 });
      },
    };
    const stores: Store[] = [];
    const workers: Worker[] = [];
    const tunables = { leaseMs: 1000, opTimeoutMs: 400, drainDeadlineMs: 1000, maxAttempts: 2, retryBackoffMs: 50, maxInFlight: 3 };
    try {
      for (const instance of ["w1", "w2"]) {
        const store = await open(job);
        stores.push(store);
        const coordinator = await SplitCoordinator.join({
          store, job, instance, fingerprint: source.fingerprint(), planner: instance === "w1" ? (c) => source.plan(c) : undefined,
          ...tunables,
        });
        workers.push(startWorker({ coordinator, source, logger: () => {}, abortGraceMs: 500 }));
      }
      const [w1, w2] = workers;
      const splitOf = async (id: string) => JSON.parse((await stores[0].get(`split.${id}`))?.value ?? "null");
      await until("p5 quarantined", async () => (await splitOf("p5"))?.status === "quarantined");
      await until("p0-p3 completed", async () => {
        for (const id of ["p0", "p1", "p2", "p3"]) if ((await splitOf(id))?.status !== "completed") return false;
        return true;
      });
      // Settled: each member has beaten since it took its share (a member's first record, written
      // at join, carries no count of held splits; the two reads below would straddle its next beat).
      await until("both members' beats report what they hold", async () => {
        const held = [];
        for (const m of ["w1", "w2"]) held.push(JSON.parse((await stores[0].get(`member.${m}`))?.value ?? "{}").held);
        return held.every((h) => typeof h === "number") && held[0] + held[1] === 1;
      });
      await built;

      // status, the same on Deno and on Node.
      const [sd, sn] = await Promise.all([cli("deno", ["status", "--json"], env), cli("node", ["status", "--json"], env)]);
      assert.equal(sd.code, 0, sd.out);
      assert.equal(sn.code, 0, sn.out);
      const status = JSON.parse(sd.stdout);
      // The same view on both runtimes, aside from what moves between the two
      // runs: heartbeats and read times, and the rates measured up to each read.
      const stable = (
        v: { at?: number; rate?: unknown; leader: { beat?: number }; members: { beat?: number; lastBeatAt?: unknown; perMinute?: number }[] },
      ) => {
        delete v.at;
        delete v.rate;
        delete v.leader.beat;
        for (const m of v.members) delete m.beat, delete m.lastBeatAt, delete m.perMinute;
        return v;
      };
      assert.deepEqual(stable(JSON.parse(sn.stdout)), stable(JSON.parse(sd.stdout)));
      assert.deepEqual([status.counts.total, status.counts.completed, status.counts.quarantined, status.counts.owned], [6, 4, 1, 1]);
      assert.deepEqual(status.members.map((m: { instance: string }) => m.instance), ["w1", "w2"]);
      const text = await cli("node", ["status"], env);
      assert.match(text.stdout, /splits 6: 4 completed, 1 runnable \(1 owned, 0 unclaimed\), 1 quarantined, 0 cancelled/);
      assert.match(text.stdout, /w1 \(leader\)/);
      // The STATE column says what each member does (it was blank for workers).
      const states = text.stdout.split("\n").filter((l) => /^w[12]/.test(l)).map((l) => l.trim().split(/ +/).at(-1)).sort();
      assert.deepEqual(states, ["idle", "working"], text.stdout);
      // Asked for owned splits, it prints "owned" (it printed runnable).
      const owned = await cli("deno", ["splits", "--state", "owned"], env);
      assert.match(owned.stdout, /^p4 +owned +w[12] /m, owned.stdout);
      assert.doesNotMatch(owned.stdout, /runnable/);
      // The server's jobs: this one running (its size where the backend knows it); delete refuses
      // it (live members), even with --force.
      const jobs = await cli("node", ["jobs"], storeEnv);
      assert.equal(jobs.code, 0, jobs.out);
      assert.match(jobs.stdout, new RegExp(`^${job} +1 +running +4/6 +0 +1 +2/2 +\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\dZ +- +(\\d+ kB|-)$`, "m"), jobs.stdout);
      const refused = await cli("deno", ["delete", "--yes", "--force"], env);
      assert.equal(refused.code, 3, refused.out);
      assert.match(refused.stdout, new RegExp(`^not deleted: job "${job}" has 2 live member\\(s\\) \\(w1, w2\\): stop its workers first`));

      // The quarantined split, with its failures.
      const q = await cli("deno", ["splits", "--state", "quarantined"], env);
      assert.equal(q.code, 0, q.out);
      assert.match(q.stdout, /^SPLIT +STATE +OWNER/);
      assert.match(q.stdout, /p5 +quarantined +- +\d+ +2 /);
      assert.equal(q.stdout.match(/w[12]: run threw: Error: poison p5: unexpected token at line 7/g)?.length, 2, q.stdout);
      assert.match(q.stdout, /1 of 1 \(quarantined\)/);
      // Each failure's first stack frame under it (the source's run, in this file), and where the rest is.
      assert.equal(q.stdout.match(/\n {6}at .*operator_session\.ts:\d+:\d+.* \(full stack: --json\)\n/g)?.length, 2, q.stdout);
      const qj = JSON.parse((await cli("node", ["splits", "--state", "quarantined", "--json"], env)).stdout);
      for (const f of qj.splits[0].failures) {
        const frames = f.stack.split("\n");
        assert.ok(frames.length >= 2 && frames.length <= 8 && f.stack.length <= 800, f.stack);
        assert.match(frames[0], /^at .*operator_session\.ts:\d+:\d+/);
      }
      const page = JSON.parse((await cli("node", ["splits", "--limit", "2", "--json"], env)).stdout);
      assert.deepEqual([page.splits.map((s: { id: string }) => s.id), page.page.next], [["p0", "p1"], "p1"]);

      // The HTTP view of the leader (no sockets) takes the leader's judgement (elsewhere a view judges by each lease).
      const leaderApp = createApp({ worker: w1.coordinator.status().isLeader ? w1 : w2, store: stores[0] });
      const fleet = await (await leaderApp.request("/fleet")).json();
      assert.equal(fleet.liveness.judgedBy, "here");
      assert.ok(fleet.members.every((m: { alive: boolean }) => m.alive === true));
      const p5 = (await (await leaderApp.request("/fleet?state=quarantined")).json()).splits[0];
      assert.match(p5.failures[0].stack, /^at .*operator_session\.ts:\d+:\d+/, "/fleet carries the failures' stacks");

      // Requeue: fixed input, the split runs again and completes.
      poisoned = false;
      const rq = await cli("deno", ["requeue", "p5"], env);
      assert.equal(rq.code, 0, rq.out);
      assert.match(rq.stdout, /Split "p5" requeued at epoch \d+/);
      await until("p5 completed after the requeue", async () => (await splitOf("p5"))?.status === "completed");
      const rq2 = await cli("node", ["requeue", "p5", "--json"], env);
      assert.equal(rq2.code, 3, "not quarantined any more: not applied");
      assert.equal(JSON.parse(rq2.stdout).status, "completed");
      assert.equal((await cli("deno", ["requeue", "--all"], env)).stdout.trim(), "0 of 0 quarantined split(s) requeued");

      // Drain w2: it hands over what it holds and its worker ends `drained`, as after SIGTERM.
      const dr = await cli("node", ["drain", "w2"], env);
      assert.equal(dr.code, 0, dr.out);
      const outcome = await Promise.race([
        w2.done,
        new Promise<never>((_, rej) => setTimeout(() => rej(new Error("w2 did not finish within 10 s of the drain")), 10_000)),
      ]);
      assert.equal(outcome.kind, "drained");
      assert.equal((await cli("deno", ["drain", "w2"], env)).code, 3, "w2 left: no such member");

      // Cancel the split that never ends: its owner stops it at once; the job completes without it.
      await until("w1 holds p4 (handed over by w2 if it had it)", async () => (await splitOf("p4"))?.owner?.instance === "w1");
      const heldAt = (await splitOf("p4")).epoch as number;
      const cn = await cli("deno", ["cancel", "p4", "--json"], env);
      assert.equal(cn.code, 0, cn.out);
      assert.deepEqual([JSON.parse(cn.stdout).outcome, JSON.parse(cn.stdout).previousOwner], ["cancelled", "w1"]);
      const done = await Promise.race([
        w1.done,
        new Promise<never>((_, rej) => setTimeout(() => rej(new Error("w1 did not finish the job within 10 s")), 10_000)),
      ]);
      assert.equal(done.kind, "drained");
      assert.ok(aborted.has(`p4@${heldAt}`), `the cancelled lane (p4@${heldAt}) was stopped: ${[...aborted].join(", ")}`);
      const end = JSON.parse((await cli("node", ["status", "--json"], env)).stdout);
      assert.deepEqual([end.counts.completed, end.counts.cancelled, end.plan.outcome], [5, 1, "allComplete"]);
      // A finished job's status leads with its result: p5 failed twice and ran again after each.
      assert.deepEqual([end.summary.failures, end.summary.retries], [2, 2]);
      const endText = (await cli("deno", ["status"], env)).stdout;
      assert.match(endText, /^result: 5 split\(s\) completed · no records reported · 2 retries · 2 failure\(s\) · 0 cut\(s\) · took /m, endText);
      assert.equal((await cli("deno", ["cancel", "p0"], env)).code, 3, "a completed split is not cancelled");
      assert.equal((await cli("deno", ["cancel", "nope"], env)).code, 3);
    } finally {
      await withTimeout(
        Promise.all(workers.map((w) => w.shutdown({ deadlineMs: 0 }).catch(() => {}))),
        20_000,
        "the workers to shut down",
      );
      for (const s of stores) await s.close().catch(() => {});
    }
}
