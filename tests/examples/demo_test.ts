/**
 * Smoke tests of `npm run demo` on tiny datasets. In-process: the summary
 * shows no loss (records out >= records in, every record seen) and the
 * demo's /status and /metrics answered while it ran. `--nats` and `--pg`:
 * three worker processes over a nats-server or a PostgreSQL, one killed
 * halfway; the progress shows completed/total splits and the output tells
 * takeovers from handoffs.
 */
import assert from "node:assert/strict";
import { Deadline, withTimeout } from "../helpers/deadline.ts";

const root = new URL("../../", import.meta.url).pathname;

Deno.test({
  name: "demo: the in-process fleet processes a tiny dataset with no loss and serves /status and /metrics",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const tmp = await Deno.makeTempDir({ prefix: "splitlease-demo-test-" });
    const summaryPath = `${tmp}/summary.json`;
    const child = new Deno.Command(`${root}node_modules/.bin/deno`, {
      args: [
        "run",
        "-A",
        "examples/demo/main.ts",
        "--records",
        "400",
        "--files",
        "7",
        "--split-bytes",
        "6000",
        "--delay-ms",
        "10",
        "--batch",
        "5",
        "--linger-ms",
        "1500",
        "--summary-json",
        summaryPath,
      ],
      cwd: root,
      env: { NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    let out = "";
    const stderr = new Response(child.stderr).text();
    const d = new Deadline(120_000);
    try {
      const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
      let url: string | undefined;
      while (!url) {
        const { done, value } = await d.wait("the demo to print its status URL", reader.read());
        if (done) throw new Error(`demo exited before printing its URL:\n${out}\n${await stderr}`);
        out += value;
        url = /status:\s+(http:\/\/127\.0\.0\.1:\d+)\/status/.exec(out)?.[1];
      }
      const status = await d.wait("GET /status", fetch(`${url}/status`).then((r) => r.json()));
      assert.equal(status.mode, "in-process");
      assert.equal(status.recordsIn, 400);
      const metrics = await d.wait("GET /metrics", fetch(`${url}/metrics`).then((r) => r.text()));
      assert.match(metrics, /^splitlease_demo_records_in 400$/m);
      for (;;) {
        const { done, value } = await d.wait("the demo to finish its output", reader.read());
        if (done) break;
        out += value;
      }
      const code = (await d.wait("the demo to exit", child.status)).code;
      assert.equal(code, 0, `${out}\n${await stderr}`);
      const s = JSON.parse(await Deno.readTextFile(summaryPath));
      assert.equal(s.recordsIn, 400);
      assert.ok(s.recordsOut >= s.recordsIn, "records out >= records in");
      assert.equal(s.unique, 400);
      assert.equal(s.missing, 0);
      assert.equal(s.statusServed, true);
      assert.equal(s.splits.completed, s.splits.planned);
      assert.ok(s.splits.planned >= 3);
      assert.equal(s.workers.length, 3);
      assert.equal(s.workers.reduce((a: number, w: { records: number }) => a + w.records, 0), s.recordsOut);
      assert.match(out, /no record lost/);
      assert.match(out, /records in\s+400/);
      assert.match(out, /splits \d+\/\d+/, "the progress line shows completed/total splits");
      assert.match(out, new RegExp(`splits ${s.splits.planned}/${s.splits.planned}`), "the last progress line shows every split completed");
      assert.match(out, /splits moved\s+\d+ takeovers, \d+ reclaims .*\d+ handoffs/);
      assert.equal(s.gains.takeover, 0, "nobody died in process");
    } finally {
      try {
        child.kill("SIGKILL");
      } catch { /* exited */ }
      await withTimeout(child.status, 15_000, "the demo to exit after SIGKILL");
      await withTimeout(stderr.catch(() => {}), 15_000, "the demo's stderr to close after SIGKILL");
      await Deno.remove(tmp, { recursive: true });
    }
  },
});

/** Runs `deno run examples/demo/main.ts …args`, collecting its output, within `limitMs`. */
async function runDemo(args: string[], limitMs: number): Promise<{ code: number; out: string }> {
  const child = new Deno.Command(`${root}node_modules/.bin/deno`, {
    args: ["run", "-A", "examples/demo/main.ts", ...args],
    cwd: root,
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const out = Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const limit = new Promise<"timeout">((r) => (timer = setTimeout(() => r("timeout"), limitMs)));
  try {
    const first = await Promise.race([child.status, limit]);
    if (first === "timeout") {
      child.kill("SIGINT"); // the demo kills its nats-server and workers on SIGINT
      const [o, e] = await withTimeout(out, 15_000, `the output of demo ${args.join(" ")} to end after SIGINT`)
        .catch((err) => [`(${err.message})`, ""]);
      throw new Error(`demo ${args.join(" ")} did not finish within ${limitMs} ms:\n${o}\n${e}`);
    }
    const [o, e] = await withTimeout(out, 15_000, `the output of demo ${args.join(" ")} to end after its exit`);
    return { code: first.code, out: o + e };
  } finally {
    clearTimeout(timer);
    try {
      child.kill("SIGKILL");
    } catch { /* exited */ }
    await withTimeout(child.status, 15_000, `demo ${args.join(" ")} to exit after SIGKILL`);
  }
}

/**
 * `demo --nats` / `--pg` / `--redis`: three worker processes over a store the demo starts,
 * one killed halfway; the progress shows completed/total splits and the
 * output tells takeovers from handoffs.
 */
async function demoFleet(flag: "--nats" | "--pg" | "--redis"): Promise<void> {
    const tmp = await Deno.makeTempDir({ prefix: `splitlease-demo${flag.slice(1)}-test-` });
    try {
      const summaryPath = `${tmp}/summary.json`;
      const { code, out } = await runDemo(
        [flag, "--records", "1200", "--files", "10", "--split-bytes", "5000", "--delay-ms", "20", "--batch", "5", "--summary-json", summaryPath],
        90_000,
      );
      assert.equal(code, 0, out);
      const s = JSON.parse(await Deno.readTextFile(summaryPath));
      assert.equal(s.missing, 0, out);
      assert.equal(s.splits.completed, s.splits.planned, out);
      // Completed/total from the workers' status().counts while it ran, all done at the end.
      assert.match(out, /splits \d+\/\d+/, out);
      assert.match(out, new RegExp(`splits ${s.splits.planned}/${s.splits.planned}(\\s|$)`, "m"), out);
      const killed = /killed (worker-\w+) \(SIGKILL, pid \d+, holding (\d+) splits\)/.exec(out);
      assert.ok(killed, `a worker was killed halfway:\n${out}`);
      assert.equal(killed[1], s.killed);
      assert.ok(Number(killed[2]) >= 1, `the killed worker held splits:\n${out}`);
      // Its splits moved by takeover (attempt charged, tail replayed), each printed as such.
      const takeovers = out.match(/^  worker-\w+ took over split \S+ from a dead worker \(takeover, epoch \d+\): .*the uncommitted tail replays$/gm) ?? [];
      assert.ok(takeovers.length >= 1, `a takeover line:\n${out}`);
      assert.equal(takeovers.length, s.gains.takeover, "one line per takeover");
      assert.ok(takeovers.every((l) => !l.includes(s.killed)), "nobody takes over from itself");
      // Rebalancing (workers joining at different times) is told apart: handoffs replay nothing.
      const handoffs = out.match(/^  worker-\w+ was handed split \S+ by a rebalance or a drain \(handoff, epoch \d+\): .*nothing replays$/gm) ?? [];
      assert.equal(handoffs.length, s.gains.handoff, "one line per handoff");
      assert.match(out, new RegExp(`splits moved\\s+${s.gains.takeover} takeovers, ${s.gains.reclaim} reclaims .* ${s.gains.handoff} handoffs`));
      assert.match(out, /no record lost/);
      assert.match(out, new RegExp(`3 worker processes \\(deno, bun, node\\) on ${flag === "--pg" ? "PostgreSQL" : flag === "--redis" ? "redis-server" : "nats-server"}`));
    } finally {
      await Deno.remove(tmp, { recursive: true });
    }
}

Deno.test({
  name: "demo --nats: completed/total splits in the progress, a killed worker's splits reported as takeovers, handoffs apart",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () => demoFleet("--nats"),
});

Deno.test({
  name: "demo --pg: the same fleet on a PostgreSQL the demo starts: no record lost, takeovers reported",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () => demoFleet("--pg"),
});

Deno.test({
  name: "demo --redis: the same fleet on a redis-server the demo starts: no record lost, takeovers reported",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () => demoFleet("--redis"),
});
