/**
 * The single-file bundle imported by URL, as the README shows: dist/ served
 * on a loopback HTTP server, a Deno program outside the repository (no
 * config, no node_modules, an empty module cache) type-checked and run with
 * `--allow-import=127.0.0.1:<port>`.
 */
import assert from "node:assert/strict";
import { runCmd } from "../helpers/cmd.ts";
import { checkByUrl, DistServer, programDir } from "./by_url.ts";
import { bin } from "./pack.ts";

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
    await using dist = await DistServer.start("splitlease.bundle.js");
    const opts = await programDir("splitlease-url-", PROGRAM(`http://${dist.host}`));

    const refused = await runCmd(bin("deno"), ["run", "main.ts"], { ...opts, check: false, what: "deno run without --allow-import" });
    assert.notEqual(refused.code, 0);
    assert.match(refused.out, /--allow-import/);

    await checkByUrl(dist, "splitlease.bundle.js", opts);

    const run = await runCmd(bin("deno"), ["run", `--allow-import=${dist.host}`, "main.ts"], { ...opts, what: "deno run by URL" });
    assert.deepEqual(JSON.parse(run.stdout.trim().split("\n").pop()!), {
      outcome: "complete",
      records: 7,
      nats: "function",
      handler: "function",
      wrong: "string",
    });
  },
});
