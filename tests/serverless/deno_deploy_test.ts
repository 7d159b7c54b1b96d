/**
 * Deno Deploy: examples/serverless/deno_deploy.ts run as a Deno process the
 * way Deno Deploy runs it (`Deno.serve`, env configuration, `Deno.cron`
 * registered), against nats-server over WebSocket; HTTP invocations, two at
 * a time, finish a job with no loss. (Cron runs at most once a minute, so
 * the test drives the HTTP trigger; both call the same slice, and a cron
 * slice that falls due during the test is counted with the others.)
 */
import assert from "node:assert/strict";
import { eachLine, parseLogLine } from "../helpers/lines.ts";
import { freePort, NatsServer } from "../helpers/nats_server.ts";
import { waitFor, withTimeout } from "../helpers/worker_procs.ts";
import { assertNoLoss, bin, BUDGET_MS, jobEnv, root, type Slice } from "./common.ts";

Deno.test({
  name: "deno deploy: Deno.serve + Deno.cron app finishes a job through HTTP invocations with no loss",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using server = await NatsServer.start();
    const port = freePort();
    const child = new Deno.Command(bin("deno"), {
      // The permissions Deno Deploy grants that the app uses; --unstable-cron provides Deno.cron locally.
      args: ["run", "--no-prompt", "--unstable-cron", "--allow-net", "--allow-env", "examples/serverless/deno_deploy.ts"],
      cwd: root,
      env: { ...jobEnv(server.wsUrl, "deploy"), PORT: String(port), BUDGET_MS: String(BUDGET_MS), NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const raw: string[] = [];
    const lines: Record<string, unknown>[] = [];
    const pump = (s: ReadableStream<Uint8Array>) =>
      eachLine(s, (l) => {
        raw.push(l);
        const p = parseLogLine(l);
        if (p) lines.push(p);
      });
    const pumps = Promise.all([pump(child.stdout), pump(child.stderr)]);
    try {
      await waitFor("the app to listen and register its cron", () =>
        Promise.resolve(lines.some((l) => l.event === "cronRegistered") ? lines.find((l) => l.event === "listening") : undefined), 20_000)
        .catch((e) => {
          throw new Error(`${e.message}\nthe app said:\n${raw.slice(-15).join("\n")}`);
        });
      assert.ok(lines.some((l) => l.event === "cronRegistered"), "Deno.cron registered the slice schedule");
      const slices: Slice[] = [];
      const invoke = async (): Promise<Slice> => {
        const res = await fetch(`http://127.0.0.1:${port}/`, { method: "POST" });
        const body = await res.json();
        assert.equal(res.status, 200, JSON.stringify(body));
        slices.push(body);
        return body;
      };
      await withTimeout(
        (async () => {
          for (let round = 0; round < 10; round++) {
            if ((await Promise.all([invoke(), invoke()])).some((r) => r.outcome === "complete")) return;
          }
        })(),
        180_000,
        "invocations to finish the job",
      );
      // Deno.cron fires at every wall-clock minute: a slice it ran meanwhile did part of the job too.
      await waitFor("cron slices that started to finish", () => {
        const started = lines.filter((l) => l.event === "cronStarted").length;
        const done = lines.filter((l) => l.event === "cronSlice");
        return Promise.resolve(done.length >= started ? done : undefined);
      }, 20_000).then((done) => slices.push(...(done as unknown as Slice[])));
      try {
        assertNoLoss(slices, "deno deploy");
      } catch (e) {
        // What each split went through, by the app's log lines (gained with its progress, released, completed).
        const trail = lines.filter((l) => ["gained", "released", "completed"].includes(String(l.event)))
          .map((l) => `${l.splitId} ${l.event} e${l.epoch} ${JSON.stringify(l.progress ?? null)} ${l.instance ?? ""} ${l.reason ?? ""}`)
          .sort();
        throw new Error(`${(e as Error).message}\n${trail.join("\n")}`);
      }
      for (const s of slices) assert.match(s.instance, /^deno-deploy-/);
      assert.ok(!raw.some((l) => /error/i.test(l) && !l.startsWith("{")), `no errors:\n${raw.join("\n")}`);
    } finally {
      try {
        child.kill("SIGKILL");
      } catch { /* exited */ }
      await withTimeout(child.status, 15_000, "the Deno Deploy app to exit after SIGKILL");
      await withTimeout(pumps, 15_000, "the Deno Deploy app's stdout and stderr to close after SIGKILL");
    }
  },
});
