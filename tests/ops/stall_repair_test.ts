/**
 * A stalled job is repairable without restarting anything (issue 21, item
 * 5). Real worker processes (the fixture app on Deno and Bun) over
 * nats-server; one split (r1) fails until a file exists, MAX_ATTEMPTS 1
 * quarantines it at its first failure.
 *
 * - A Job's worker (the defaults: a stall is fatal) exits 3 on the stall; an
 *   observer beside it (`MAX_IN_FLIGHT=0`, `AFTER_STALL=wait`,
 *   `AFTER_COMPLETION=idle`, what deploy/k8s/observer.yaml runs) stays up:
 *   the fleet page, `/fleet` and the job-wide metrics, among them the metrics
 *   the stall alerts of deploy/prometheus/alerts.yaml name, for longer than
 *   those alerts' `for`; a requeue through its operator route reopens the
 *   job, and a worker started again (the Job created again) finishes it.
 * - A fleet with `AFTER_COMPLETION=idle` and `AFTER_STALL=wait` (what
 *   deploy/k8s/deployment.yaml runs) stays in the job on the stall; a
 *   requeue through one member's operator route has the fleet take the split
 *   and complete the job, and both processes idle, never having exited.
 * - `splitlease ui` (cli.ts) on the stalled job of exited workers: the same
 *   page, /fleet, routes and job-wide metrics from the operator's shell; a
 *   requeue through it, a worker started again; the ui stays up with the
 *   completed job (read-only) and exits 0 on SIGINT.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { freePort, NatsServer } from "../helpers/nats_server.ts";
import { eachLine } from "../helpers/lines.ts";
import { bin, buildOnce, kill, type Proc, root, spawn, waitFor, withTimeout } from "../helpers/worker_procs.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };
const TOKEN = "stall-t0ken";
const P = "etl_coordination_";

/** The stall alerts: name → `for` in ms (from deploy/prometheus/alerts.yaml). */
function stallAlerts(): Map<string, { expr: string; forMs: number }> {
  const file = parse(Deno.readTextFileSync(`${root}deploy/prometheus/alerts.yaml`)) as {
    groups: { rules: { alert: string; expr: string; for?: string }[] }[];
  };
  const out = new Map<string, { expr: string; forMs: number }>();
  for (const r of file.groups.flatMap((g) => g.rules)) {
    if (r.alert !== "SplitleaseJobStalled" && r.alert !== "SplitleaseSplitsQuarantined") continue;
    const m = /^(\d+)([smh])$/.exec(r.for ?? "0s");
    assert.ok(m, `${r.alert}: for ${r.for}`);
    out.set(r.alert, { expr: r.expr, forMs: Number(m[1]) * { s: 1000, m: 60_000, h: 3_600_000 }[m[2] as "s" | "m" | "h"] });
  }
  assert.equal(out.size, 2, "alerts.yaml has SplitleaseJobStalled and SplitleaseSplitsQuarantined");
  return out;
}

function env(server: NatsServer, job: string, dir: string, extra: Record<string, string>): Record<string, string> {
  return {
    STORE: "nats",
    NATS_URL: server.wsUrl,
    JOB: job,
    SPLITS: "4",
    RECORDS: "5",
    RECORD_MS: "5",
    MAX_ATTEMPTS: "1",
    FAIL_SPLITS: "r1",
    FIX_FILE: `${dir}/fixed`,
    DRAIN_TOKEN: TOKEN,
    ...extra,
  };
}

/** Where a process serves HTTP. */
type Target = { port: number; rt: string };

const url = (p: Target, path: string) => `http://127.0.0.1:${p.port}${path}`;

async function get(p: Target, path: string): Promise<Response> {
  return await withTimeout(fetch(url(p, path)), 10_000, `GET ${path} on ${p.rt}`);
}

/** The value of a job's sample of `name` on `p`'s /metrics, or undefined when it has none. */
async function sample(p: Target, name: string): Promise<string | undefined> {
  const text = await (await get(p, "/metrics")).text();
  return new RegExp(`^${P}${name}\\{[^}]*\\} (\\S+)$`, "m").exec(text)?.[1];
}

async function fleet(p: Target): Promise<{ status: number; counts?: Record<string, number> }> {
  const r = await get(p, "/fleet?state=quarantined");
  const body = r.ok ? await r.json() : (await r.body?.cancel(), undefined);
  return { status: r.status, counts: body?.counts };
}

async function requeue(p: Target, id: string): Promise<Record<string, unknown>> {
  const r = await withTimeout(
    fetch(url(p, `/splits/${id}/requeue`), { method: "POST", headers: { authorization: `Bearer ${TOKEN}` } }),
    10_000,
    `POST /splits/${id}/requeue`,
  );
  const body = await r.json();
  assert.equal(r.status, 200, JSON.stringify(body));
  return body;
}

/** Tracks whether a process exited (and how). */
function exitOf(p: Proc): () => number | undefined {
  let code: number | undefined;
  p.status.then((s) => (code = s.code));
  return () => code;
}

const tail = (p: Proc) => `${p.rt}:\n${p.raw.slice(-15).join("\n")}`;

Deno.test({
  name: "stall: the Job's worker exits 3, the observer keeps /fleet, the page and the stall alerts' metrics up past their for; a requeue on it reopens the job",
  ...opts,
  fn: async () => {
    const alerts = stallAlerts();
    const holdMs = Math.max(...[...alerts.values()].map((a) => a.forMs)) + 5000;
    await using server = await NatsServer.start();
    const dir = await Deno.makeTempDir({ prefix: "splitlease-stall-" });
    const job = "stall-observed";
    // The worker leads (it starts first), so the observer must take the lead of the stalled job when it exits.
    const worker = spawn("deno", env(server, job, dir, { INSTANCE: "worker-0", RECORD_MS: "200" }));
    await worker.line((l) => l.msg === "Leader elected", "the worker to lead", 30_000);
    const observer = spawn("bun", env(server, job, dir, {
      INSTANCE: "observer",
      MAX_IN_FLIGHT: "0",
      AFTER_STALL: "wait",
      AFTER_COMPLETION: "idle",
    }));
    const observerExit = exitOf(observer);
    let again: Proc | undefined;
    try {
      // The Job's worker: a stall is fatal by default.
      const code = await withTimeout(worker.status.then((s) => s.code), 60_000, "the worker to exit on the stall")
        .catch((e) => {
          throw new Error(`${e.message}\n${tail(worker)}\n${tail(observer)}`);
        });
      assert.equal(code, 3, `the worker exits 3 on the stall\n${tail(worker)}`);
      // The observer, alone in the stalled job, takes the lead and exports the job-wide gauges.
      await waitFor("the observer to export job_stalled 1", async () => (await sample(observer, "job_stalled")) === "1" || undefined, 30_000)
        .catch((e) => {
          throw new Error(`${e.message}\n${tail(observer)}`);
        });
      assert.ok(observer.lines.some((l) => l.msg === "Leader elected"), "the observer took the lead from the worker");
      const start = Date.now();
      let samples = 0;
      while (Date.now() - start < holdMs) {
        assert.equal(observerExit(), undefined, `the observer is still running\n${tail(observer)}`);
        assert.equal(await sample(observer, "job_stalled"), "1", `job_stalled after ${Date.now() - start} ms`);
        assert.equal(await sample(observer, "splits_quarantined"), "1", `splits_quarantined after ${Date.now() - start} ms`);
        assert.equal(await sample(observer, "leader"), "1");
        const f = await fleet(observer);
        assert.equal(f.status, 200, "/fleet answers");
        assert.equal(f.counts?.quarantined, 1);
        const page = await get(observer, "/");
        assert.equal(page.status, 200, "the fleet page is served");
        await page.body?.cancel();
        const ready = await get(observer, "/readyz");
        assert.equal(ready.status, 200, "the observer is ready");
        await ready.body?.cancel();
        samples++;
        await new Promise((r) => setTimeout(r, 3000));
      }
      const presentMs = Date.now() - start;
      for (const [name, a] of alerts) assert.ok(presentMs > a.forMs, `${name}'s metric stood ${presentMs} ms > for ${a.forMs} ms`);
      console.log(`  job_stalled and splits_quarantined present on the observer for ${presentMs} ms (${samples} scrapes)`);
      assert.ok(observer.lines.some((l) => l.event === "stallWait"), "the observer says it waits");
      // Fix, then requeue through the observer's operator route: the job is open again.
      await Deno.writeTextFile(`${dir}/fixed`, "");
      const answer = await requeue(observer, "r1");
      assert.equal(answer.outcome, "requeued");
      await waitFor("job_stalled 0 after the requeue", async () => (await sample(observer, "job_stalled")) === "0" || undefined, 15_000);
      // The observer holds no work; the Job created again (a worker with the same instance id) finishes it.
      again = spawn("deno", env(server, job, dir, { INSTANCE: "worker-0" }));
      const againCode = await withTimeout(again.status.then((s) => s.code), 60_000, "the restarted worker to finish the job")
        .catch((e) => {
          throw new Error(`${e.message}\n${tail(again!)}`);
        });
      assert.equal(againCode, 0, `the job completes\n${tail(again)}`);
      assert.ok(again.lines.some((l) => l.event === "gained" && l.splitId === "r1"), "the requeued split ran");
      await observer.line((l) => l.event === "idle" && l.reason === "complete", "the observer to idle on the completed job", 30_000);
      assert.equal(observerExit(), undefined, "the observer never exited");
    } finally {
      await Promise.all([observer, worker, ...(again ? [again] : [])].map(kill));
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name: "stall: a fleet with afterCompletion idle and afterStall wait stays in the stalled job; a requeue through its operator route completes it, no process restarted",
  ...opts,
  fn: async () => {
    await using server = await NatsServer.start();
    const dir = await Deno.makeTempDir({ prefix: "splitlease-stall-" });
    const job = "stall-waits";
    const fleetEnv = (instance: string) =>
      env(server, job, dir, { INSTANCE: instance, MAX_IN_FLIGHT: "2", AFTER_COMPLETION: "idle", AFTER_STALL: "wait" });
    const procs = [spawn("deno", fleetEnv("pod-a")), spawn("bun", fleetEnv("pod-b"))];
    const exits = procs.map(exitOf);
    try {
      for (const p of procs) {
        await p.line((l) => l.event === "stallWait", `the ${p.rt} member to wait on the stall`, 60_000);
      }
      // Well past the hold after which a worker in exit mode finishes on a stall (1 s).
      await new Promise((r) => setTimeout(r, 4000));
      for (const [i, p] of procs.entries()) assert.equal(exits[i](), undefined, `${p.rt} still runs on the stall\n${tail(p)}`);
      const f = await fleet(procs[0]);
      assert.equal(f.status, 200);
      assert.equal(f.counts?.quarantined, 1);
      await Deno.writeTextFile(`${dir}/fixed`, "");
      const answer = await requeue(procs[0], "r1");
      assert.equal(answer.outcome, "requeued");
      for (const p of procs) {
        await p.line((l) => l.event === "idle" && l.reason === "complete", `the ${p.rt} member to idle on the completed job`, 30_000);
      }
      assert.ok(
        procs.some((p) => p.lines.some((l) => l.event === "gained" && l.splitId === "r1" && Number(l.epoch) >= 2)),
        "a member of the fleet ran the requeued split",
      );
      for (const [i, p] of procs.entries()) {
        assert.equal(exits[i](), undefined, `${p.rt} never exited`);
        const ready = await get(p, "/readyz");
        assert.deepEqual(await ready.json(), { ready: true, reasons: [], idle: true });
      }
    } finally {
      await Promise.all(procs.map(kill));
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name: "stall: splitlease ui (deno cli.ts, node dist/cli.js) serves the stalled job of exited workers (page, /fleet, job-wide metrics, requeue), then the completed job read-only until SIGINT",
  ...opts,
  fn: async () => {
    await buildOnce();
    for (const rt of ["deno", "node"] as const) await uiThroughAStall(rt);
  },
});

async function uiThroughAStall(rt: "deno" | "node"): Promise<void> {
  await using server = await NatsServer.start();
  const dir = await Deno.makeTempDir({ prefix: "splitlease-stall-" });
  const job = `stall-ui-${rt}`;
  const worker = spawn("deno", env(server, job, dir, { INSTANCE: "worker-0" }));
  let again: Proc | undefined;
  const port = freePort();
  let ui: Deno.ChildProcess | undefined;
  const out: string[] = [];
  try {
    assert.equal(await withTimeout(worker.status.then((s) => s.code), 60_000, "the worker to exit on the stall"), 3, tail(worker));
    const [cmd, pre] = rt === "deno" ? [bin("deno"), ["run", "-A", "cli.ts"]] : [bin("node"), ["dist/cli.js"]];
    ui = new Deno.Command(cmd, {
      args: [...pre, "ui", "--port", String(port), "--lease-ms", "2000", "-j", job, "-s", server.wsUrl],
      cwd: root,
      env: { DRAIN_TOKEN: TOKEN, NO_COLOR: "1", PATH: Deno.env.get("PATH") ?? "" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const pumps = Promise.all([ui.stdout, ui.stderr].map((s) => eachLine(s, (l) => void out.push(l))));
    const status = ui.status.then(async (s) => (await pumps, s));
    const p = { port, rt: `ui on ${rt}` };
    const last = () => out.slice(-15).join("\n");
    await waitFor("the ui's /fleet with the quarantined split", async () => (await fleet(p)).counts?.quarantined === 1 || undefined, 30_000)
      .catch((e) => {
        throw new Error(`${e.message}\n${last()}`);
      });
    const page = await get(p, "/");
    assert.equal(page.status, 200, "the fleet page");
    await page.body?.cancel();
    // Alone in the job, it leads the published plan and exports the job-wide gauges.
    await waitFor("the ui to export job_stalled 1", async () => (await sample(p, "job_stalled")) === "1" || undefined, 30_000)
      .catch((e) => {
        throw new Error(`${e.message}\n${last()}`);
      });
    assert.equal(await sample(p, "splits_quarantined"), "1");
    await Deno.writeTextFile(`${dir}/fixed`, "");
    assert.equal((await requeue(p, "r1")).outcome, "requeued");
    again = spawn("deno", env(server, job, dir, { INSTANCE: "worker-0" }));
    assert.equal(await withTimeout(again.status.then((s) => s.code), 60_000, "the restarted worker to finish the job"), 0, tail(again));
    // The job is complete: the ui says so and stays up, its page showing the finished job read-only.
    await waitFor("the ui to say the job is complete", () => Promise.resolve(out.some((l) => l.includes(`splitlease ui: job ${job} is complete; its page stays up read-only`)) || undefined), 30_000)
      .catch((e) => {
        throw new Error(`${e.message}\n${last()}`);
      });
    const done = await waitFor("the ui's /fleet to show the finished job read-only", async () => {
      const v = await (await get(p, "/fleet")).json();
      return v.operator.access === "none" ? v : undefined;
    }, 10_000);
    assert.deepEqual([done.plan.outcome, done.counts.completed], ["allComplete", 4], last());
    ui.kill("SIGINT");
    const code = (await withTimeout(status, 30_000, "the ui to exit on SIGINT").catch((e) => {
      throw new Error(`${e.message}\n${last()}`);
    })).code;
    assert.equal(code, 0, last());
  } finally {
    try {
      ui?.kill("SIGKILL");
    } catch { /* exited */ }
    await ui?.status;
    await Promise.all([worker, ...(again ? [again] : [])].map(kill));
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
