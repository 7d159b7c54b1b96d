/**
 * What the README tells Deno users to use — `serve()` and `denoWebSocket`
 * from the Deno entry — by URL (issue 21, item 6): the single-file bundle
 * had neither. `dist/splitlease.bundle.deno.js` is the runtime-neutral
 * bundle plus the Deno adapter; a Deno program outside the repository (no
 * config, no node_modules, a fresh cache) type-checks and runs a worker with
 * it, serving its HTTP app, over nats-server through `denoWebSocket`.
 */
import assert from "node:assert/strict";
import { runCmd } from "../helpers/cmd.ts";
import { NatsServer } from "../helpers/nats_server.ts";
import { checkByUrl, DistServer, programDir } from "./by_url.ts";
import { bin } from "./pack.ts";

const PROGRAM = (base: string, natsUrl: string) => `
import { denoWebSocket, MemoryStore, NatsStore, serve, type Service, type SplitSource } from "${base}/splitlease.bundle.deno.js";

const source: SplitSource<{ n: number }> = {
  fingerprint: () => "url-deno-v1",
  plan: () => Promise.resolve({ splits: [{ id: "a", descriptor: { n: 3 } }], finality: "final" as const }),
  async run(lane) {
    // @ts-expect-error the descriptor is typed
    lane.descriptor.missing;
    await lane.commit({ watermark: lane.descriptor.n }, { records: lane.descriptor.n });
    await lane.complete();
  },
};
const store = await NatsStore.connect({ servers: "${natsUrl}", job: "url-deno", wsFactory: denoWebSocket, logger: () => {} });
const service: Service = await serve({
  store, source, job: "url-deno", port: 0, hostname: "127.0.0.1", exit: false, logger: () => {},
  leaseMs: 2000, opTimeoutMs: 500, drainDeadlineMs: 1000, shutdownMarginMs: 500,
});
const { exitCode } = await service.done;
await store.close();
// Never called: only type-checked.
// @ts-expect-error serve's options are typed
const _typed = () => serve({ store: new MemoryStore(), source, job: 1 });
console.log(JSON.stringify({ exitCode, ws: typeof denoWebSocket }));
`;

Deno.test({
  name: "url import: a Deno program runs serve() with denoWebSocket from dist/splitlease.bundle.deno.js by URL, types included",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using dist = await DistServer.start("splitlease.bundle.deno.js");
    await using nats = await NatsServer.start();
    const opts = await programDir("splitlease-url-deno-", PROGRAM(`http://${dist.host}`, nats.wsUrl));
    await checkByUrl(dist, "splitlease.bundle.deno.js", opts);
    const run = await runCmd(bin("deno"), ["run", "--no-check", `--allow-import=${dist.host}`, "--allow-net", "--allow-env", "main.ts"], {
      ...opts,
      what: "deno run by URL",
    });
    assert.deepEqual(JSON.parse(run.stdout.trim().split("\n").pop()!), { exitCode: 0, ws: "function" });
  },
});
