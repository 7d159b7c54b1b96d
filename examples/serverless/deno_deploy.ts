/**
 * A Deno Deploy app that runs splitlease slices, triggered two ways:
 *
 * - HTTP: every GET/POST runs one slice and answers its summary as JSON
 *   (`Deno.serve` + `createSliceHandler`), for an external scheduler;
 * - cron: `Deno.cron` runs one slice every minute (Deno Deploy's cron
 *   triggers; at most one run of a schedule at a time).
 *
 * Run it locally as Deno Deploy would (the test does, see
 * tests/serverless/deno_deploy_test.ts):
 *
 *   NATS_URL=ws://127.0.0.1:8080 PORT=8000 node_modules/.bin/deno run \
 *     --unstable-cron --allow-net --allow-env examples/serverless/deno_deploy.ts
 *   curl -X POST http://127.0.0.1:8000/
 *
 * Deploy: `deployctl deploy --entrypoint=examples/serverless/deno_deploy.ts`
 * with `NATS_URL` (a `wss://` URL reachable from Deno Deploy) in the
 * project's environment variables. Deno Deploy provides `Deno.cron`
 * without a flag; keep `BUDGET_MS` well under the cron's one-minute period.
 *
 * @module
 */
import { denoWebSocket } from "../../adapters/deno.ts";
import { createSliceHandler, runSlice } from "../../adapters/serverless.ts";
import { sliceOptions } from "./config.ts";

// Deno's own WebSocket client leaves Nagle's algorithm on (bursts of writes
// wait ~40 ms): connect with the adapter's client, as every Deno process should.
const options = sliceOptions(Deno.env.toObject(), "deno-deploy", { wsFactory: denoWebSocket });
// Validates the options: a bad configuration fails at start-up, naming the rule.
const handler = createSliceHandler(options);

Deno.serve({
  port: Number(Deno.env.get("PORT") ?? 8000),
  onListen: ({ port }) => console.log(JSON.stringify({ event: "listening", port })),
}, handler);

// Deno.cron is unstable outside Deno Deploy: locally it needs --unstable-cron.
const cron = (Deno as unknown as { cron?: (name: string, schedule: string, run: () => Promise<void>) => Promise<void> }).cron;
if (cron) {
  const schedule = "* * * * *";
  cron("splitlease slice", schedule, async () => {
    console.log(JSON.stringify({ event: "cronStarted" }));
    const result = await runSlice(options);
    console.log(JSON.stringify({ event: "cronSlice", ...result }));
  });
  console.log(JSON.stringify({ event: "cronRegistered", schedule }));
}
