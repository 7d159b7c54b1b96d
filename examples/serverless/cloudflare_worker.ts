/**
 * A Cloudflare Workers module worker that runs splitlease slices:
 *
 * - `fetch`: every GET/POST runs one slice and answers its summary as JSON
 *   (`createSliceHandler`), e.g. from an external scheduler or a queue;
 * - `scheduled`: a Cron Trigger runs one slice in the background
 *   (`ctx.waitUntil`), e.g. `crons = ["* * * * *"]` in wrangler.toml.
 *
 * NatsStore reaches nats-server over WebSocket with the Workers runtime's
 * own `WebSocket` client (no `wsFactory` needed). Each invocation opens and
 * closes its own connection: Workers do not share I/O between requests.
 *
 * Build and run locally (the test does exactly this, see
 * tests/serverless/cloudflare_test.ts):
 *
 *   node_modules/.bin/esbuild examples/serverless/cloudflare_worker.ts --bundle \
 *     --format=esm --platform=neutral --main-fields=module,main \
 *     --conditions=workerd,worker,browser --external:crypto \
 *     --outfile=dist/serverless/cloudflare_worker.js
 *   NATS_URL=ws://127.0.0.1:8080 node_modules/.bin/workerd serve --experimental \
 *     examples/serverless/workerd.capnp
 *
 * workerd.capnp embeds that output file and takes the bindings from the
 * environment; `--experimental` lets its local stand-in for Cron Triggers
 * (cron_trigger.js) call `scheduled()`, and `--external:crypto` is explained
 * there.
 *
 * Deploy with wrangler: `main = "examples/serverless/cloudflare_worker.ts"`,
 * `[vars] NATS_URL = "wss://nats.example:443"`, `[triggers] crons = ["* * * * *"]`.
 * Keep `BUDGET_MS` under the platform's limits (Workers: 30 s CPU by default,
 * wall time unlimited while the client waits; Cron Triggers: 15 min).
 *
 * @module
 */
import { createSliceHandler, runSlice } from "../../adapters/serverless.ts";
import { type Env, sliceOptions } from "./config.ts";

/** The parts of the Workers types this worker uses (no dependency on @cloudflare/workers-types). */
interface ExecutionContext {
  waitUntil(promise: Promise<unknown>): void;
}
interface ScheduledController {
  readonly scheduledTime: number;
  readonly cron: string;
}

// Created on first use, not at module scope: Workers forbid I/O and random
// numbers during module evaluation, and bindings arrive with the request.
// Creation validates the options, so a bad configuration fails the first
// request with the rule it breaks.
let handler: ((request: Request) => Promise<Response>) | undefined;

export default {
  fetch(request: Request, env: Env): Promise<Response> {
    handler ??= createSliceHandler(sliceOptions(env, "cloudflare-workers"));
    return handler(request);
  },
  scheduled(controller: ScheduledController, env: Env, ctx: ExecutionContext): void {
    ctx.waitUntil(
      runSlice(sliceOptions(env, "cloudflare-workers")).then((result) =>
        console.log(JSON.stringify({ event: "scheduledSlice", cron: controller.cron, ...result }))
      ),
    );
  },
};
