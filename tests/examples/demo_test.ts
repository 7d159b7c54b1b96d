/**
 * Smoke test of `npm run demo` (in-process mode) on a tiny dataset: the
 * summary shows no loss (records out >= records in, every record seen) and
 * the demo's /status and /metrics answered while it ran.
 */
import assert from "node:assert/strict";
import { Deadline } from "../helpers/deadline.ts";

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
    } finally {
      try {
        child.kill("SIGKILL");
      } catch { /* exited */ }
      await child.status;
      await stderr.catch(() => {});
      await Deno.remove(tmp, { recursive: true });
    }
  },
});
