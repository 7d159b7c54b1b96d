/**
 * Cloudflare Workers: examples/serverless/cloudflare_worker.ts bundled with
 * esbuild and run in workerd (npm `workerd`, Cloudflare's runtime) with the
 * example's config, reaching nats-server through the Workers WebSocket
 * client. HTTP invocations (some concurrent, in one isolate) and scheduled
 * events finish a job with no loss.
 */
import assert from "node:assert/strict";
import { eachLine, parseLogLine } from "../helpers/lines.ts";
import { freePort, NatsServer } from "../helpers/nats_server.ts";
import { waitFor, withTimeout } from "../helpers/worker_procs.ts";
import { assertNoLoss, bin, BUDGET_MS, bundle, jobEnv, root, type Slice } from "./common.ts";

Deno.test({
  name: "cloudflare workers: the module worker in workerd finishes a job over WebSocket through fetch and scheduled invocations, with no loss",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await bundle("examples/serverless/cloudflare_worker.ts", "dist/serverless/cloudflare_worker.js", [
      "--platform=neutral",
      "--main-fields=module,main",
      "--conditions=workerd,worker,browser",
      "--external:crypto",
    ]);
    await using server = await NatsServer.start();
    const [http, cron] = [freePort(), freePort()];
    const child = new Deno.Command(bin("workerd"), {
      args: [
        "serve",
        "--experimental", // the local cron stand-in's service binding calls scheduled()
        "examples/serverless/workerd.capnp",
        "-s",
        `http=127.0.0.1:${http}`,
        "-s",
        `cron=127.0.0.1:${cron}`,
      ],
      cwd: root,
      env: { ...jobEnv(server.wsUrl, "workers"), BUDGET_MS: String(BUDGET_MS) },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const lines: Record<string, unknown>[] = [];
    const raw: string[] = [];
    const pump = (s: ReadableStream<Uint8Array>) =>
      eachLine(s, (l) => {
        raw.push(l);
        const p = parseLogLine(l);
        if (p) lines.push(p);
      });
    const pumps = Promise.all([pump(child.stdout), pump(child.stderr)]);
    try {
      await waitFor("workerd to listen", async () => {
        const r = await fetch(`http://127.0.0.1:${http}/`, { method: "DELETE" }); // 405: answered, no slice
        await r.body?.cancel();
        return r.status === 405 ? true : undefined;
      }, 20_000).catch((e) => {
        throw new Error(`${e.message}\nworkerd said:\n${raw.slice(-15).join("\n")}`);
      });

      const slices: Slice[] = [];
      const invoke = async (): Promise<Slice> => {
        const res = await fetch(`http://127.0.0.1:${http}/`, { method: "POST" });
        const body = await res.json();
        assert.equal(res.status, 200, JSON.stringify(body));
        slices.push(body);
        return body;
      };
      let scheduledSeen = 0;
      const scheduled = async (): Promise<Slice> => {
        const res = await fetch(`http://127.0.0.1:${cron}/`, { method: "POST" });
        assert.deepEqual(await res.json(), { outcome: "ok", noRetry: false }, "the scheduled event succeeded");
        // Its summary is logged (a Cron Trigger has no caller to answer).
        const line = await waitFor("the scheduled slice's summary line", () => {
          const found = lines.filter((l) => l.event === "scheduledSlice");
          return Promise.resolve(found.length > scheduledSeen ? found[scheduledSeen] : undefined);
        }, 10_000);
        scheduledSeen++;
        slices.push(line as unknown as Slice);
        return line as unknown as Slice;
      };

      await withTimeout(
        (async () => {
          let done = false;
          for (let round = 0; !done && round < 10; round++) {
            // A Cron Trigger, then two requests at once (one isolate serves both).
            const rs = [await scheduled(), ...(await Promise.all([invoke(), invoke()]))];
            done = rs.some((r) => r.outcome === "complete");
          }
        })(),
        180_000,
        "invocations to finish the job",
      );
      assert.ok(slices.length >= 3);
      assertNoLoss(slices, "cloudflare workers");
      for (const s of slices) assert.match(s.instance, /^cloudflare-workers-/);
    } finally {
      try {
        child.kill("SIGKILL");
      } catch { /* exited */ }
      await withTimeout(child.status, 15_000, "workerd to exit after SIGKILL");
      await withTimeout(pumps, 15_000, "workerd's stdout and stderr to close after SIGKILL");
    }
  },
});
