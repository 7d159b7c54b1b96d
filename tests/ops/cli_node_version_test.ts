// The npm package's command on a Node.js it does not support (issue 21,
// item 6): `npx splitlease` on Node 20 used to wait on a connection that
// could never open (Node 20 has no WebSocket) and exit 13 without a word.
// It now says it needs Node.js 22 and exits 1 at once, before loading
// anything else; on Node 24 it runs as before.
import assert from "node:assert/strict";
import { runCmd } from "../helpers/cmd.ts";
import { bin, buildOnce, root } from "../helpers/worker_procs.ts";

/** A Node.js older than 22 on the PATH, outside node_modules (the machine's own), if any. */
async function oldNode(): Promise<string | undefined> {
  const dirs = (Deno.env.get("PATH") ?? "").split(":").filter((d) => d && !d.includes("node_modules"));
  for (const dir of [...dirs, "/usr/bin", "/usr/local/bin"]) {
    const path = `${dir}/node`;
    try {
      const r = await runCmd(path, ["--version"], { cwd: root, check: false, timeoutMs: 10_000 });
      const major = Number(/^v(\d+)/.exec(r.stdout.trim())?.[1]);
      if (r.code === 0 && major < 22) return path;
    } catch { /* not there */ }
  }
  return undefined;
}

const old = await oldNode();

Deno.test({
  name: "cli: dist/cli.js on Node < 22 says it needs Node.js 22 and exits 1 at once; on Node 24 it runs",
  ignore: old === undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await buildOnce();
    const args = ["dist/cli.js", "status", "--job", "x", "--servers", "ws://127.0.0.1:1"];
    const t0 = Date.now();
    const r = await runCmd(old!, args, { cwd: root, env: { NO_COLOR: "1" }, check: false, timeoutMs: 30_000 });
    const took = Date.now() - t0;
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /splitlease: needs Node\.js 22 or later \(this is Node\.js 2?\d\.\d+\.\d+\)/);
    assert.ok(took < 5000, `at once, not after a connection attempt: ${took} ms`);
    const help = await runCmd(bin("node"), ["dist/cli.js", "--help"], { cwd: root, check: false, timeoutMs: 30_000 });
    assert.equal(help.code, 0, help.out);
    assert.match(help.stdout, /^usage: splitlease/);
  },
});
