/**
 * The single-file bundle imported by URL, as the README shows: dist/ served
 * on a loopback HTTP server, a Deno program outside the repository (no
 * config, no node_modules, an empty module cache) type-checked and run with
 * `--allow-import=127.0.0.1:<port>`.
 */
import assert from "node:assert/strict";
import { runCmd } from "../helpers/cmd.ts";
import { withTimeout } from "../helpers/deadline.ts";
import { bin, packOnce, root, tempDir } from "./pack.ts";

/** Content types a static server should send (Deno ignores declarations served as anything else). */
function contentType(path: string): string {
  if (path.endsWith(".d.ts")) return "application/typescript; charset=utf-8";
  if (path.endsWith(".js")) return "text/javascript; charset=utf-8";
  return "application/octet-stream";
}

const PROGRAM = (base: string) => `
import { MemoryStore, runSlice, splitIdFrom, type SliceResult, type SplitSource } from "${base}/splitlease.bundle.js";
import { NatsStore, createSliceHandler } from "${base}/splitlease.bundle.js";

const source: SplitSource<{ n: number }> = {
  fingerprint: () => "url-v1",
  async plan() {
    return { splits: [{ id: await splitIdFrom(["a"]), descriptor: { n: 7 } }], finality: "final" as const };
  },
  async run(lane) {
    // @ts-expect-error the descriptor is typed
    lane.descriptor.missing;
    await lane.commit({ watermark: lane.descriptor.n }, { records: lane.descriptor.n });
    await lane.complete();
  },
};
const store = new MemoryStore();
const result: SliceResult = await runSlice({
  store, source, job: "url", budgetMs: 4000, leaseMs: 1000, opTimeoutMs: 400, drainDeadlineMs: 1000, logger: () => {},
});
await store.close();
// @ts-expect-error outcome is a string union
const wrong: number = result.outcome;
console.log(JSON.stringify({
  outcome: result.outcome,
  records: result.recordsCommitted,
  nats: typeof NatsStore.connect,
  handler: typeof createSliceHandler,
  wrong: typeof wrong,
}));
`;

Deno.test({
  name: "url import: deno check and deno run of a program importing dist/splitlease.bundle.js by URL, types included",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await packOnce(); // builds dist/
    const head = (await Deno.readTextFile(`${root}dist/splitlease.bundle.js`)).split("\n", 1)[0];
    assert.equal(head, '// @ts-self-types="./splitlease.bundle.d.ts"');

    const served: string[] = [];
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
      const path = new URL(req.url).pathname;
      served.push(path);
      if (!/^\/[\w.-]+$/.test(path)) return new Response("not found", { status: 404 });
      try {
        const body = await Deno.readFile(`${root}dist${path}`);
        return new Response(body, { headers: { "content-type": contentType(path) } });
      } catch {
        return new Response("not found", { status: 404 });
      }
    });
    try {
      const host = `127.0.0.1:${server.addr.port}`;
      const dir = tempDir("splitlease-url-");
      await Deno.writeTextFile(`${dir}/main.ts`, PROGRAM(`http://${host}`));
      // Outside the repository: no deno.json, no node_modules, a fresh cache.
      const env = { ...Deno.env.toObject(), DENO_DIR: `${dir}/.deno`, NO_COLOR: "1" };
      const opts = { cwd: dir, env, timeoutMs: 60_000 };

      const refused = await runCmd(bin("deno"), ["run", "main.ts"], { ...opts, check: false, what: "deno run without --allow-import" });
      assert.notEqual(refused.code, 0);
      assert.match(refused.out, /--allow-import/);

      // The program's @ts-expect-error lines fail the check if the types are missing (any).
      await runCmd(bin("deno"), ["check", `--allow-import=${host}`, "main.ts"], { ...opts, what: "deno check by URL" });
      assert.ok(served.includes("/splitlease.bundle.d.ts"), "deno fetched the declarations named by @ts-self-types");

      const run = await runCmd(bin("deno"), ["run", `--allow-import=${host}`, "main.ts"], { ...opts, what: "deno run by URL" });
      assert.deepEqual(JSON.parse(run.stdout.trim().split("\n").pop()!), {
        outcome: "complete",
        records: 7,
        nats: "function",
        handler: "function",
        wrong: "string",
      });

    } finally {
      await withTimeout(server.shutdown(), 15_000, "the loopback server of dist/ to shut down");
    }
  },
});
