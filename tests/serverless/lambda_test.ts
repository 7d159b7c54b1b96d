/**
 * AWS Lambda: examples/serverless/aws_lambda.ts bundled as a deployment
 * (one ESM file) and invoked as the Node.js runtime invokes it
 * (tests/serverless/lambda_invoke.mjs on Node 24: realistic EventBridge and
 * function URL events, a context counting down to the function timeout),
 * against nats-server over WebSocket.
 */
import assert from "node:assert/strict";
import { runCmd } from "../helpers/cmd.ts";
import { NatsServer } from "../helpers/nats_server.ts";
import { assertNoLoss, bin, BUDGET_MS, bundle, jobEnv, root, type Slice } from "./common.ts";

const HANDLER = "dist/serverless/lambda/index.mjs";

interface Invocation {
  n: number;
  kind: "scheduled" | "functionUrl";
  ok: boolean;
  result?: Slice | { statusCode: number; headers: Record<string, string>; body: string };
  error?: string;
  durationMs: number;
  remainingMs: number;
}

/** Runs one execution environment: up to `max` invocations of `timeoutMs` each. */
async function environment(env: Record<string, string>, timeoutMs: number, max: number): Promise<Invocation[]> {
  const r = await runCmd(bin("node"), ["tests/serverless/lambda_invoke.mjs", HANDLER, String(timeoutMs), String(max)], {
    cwd: root,
    env,
    timeoutMs: max * timeoutMs + 15_000,
    what: `a Lambda execution environment (${max} invocations of at most ${timeoutMs} ms, then exit with nothing left open)`,
  });
  // The handler logs JSON lines too (as it would to CloudWatch); the harness's lines carry `n`.
  return r.stdout.split("\n").flatMap((l) => {
    try {
      const v = JSON.parse(l);
      return typeof v?.n === "number" ? [v as Invocation] : [];
    } catch {
      return [];
    }
  });
}

Deno.test({
  name: "aws lambda: scheduled and function URL invocations in two execution environments finish a job with no loss, each within its timeout",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await bundle("examples/serverless/aws_lambda.ts", HANDLER, [
      "--platform=node",
      "--target=node22",
      // tweetnacl (via nkeys) calls require("crypto") on Node: give the ESM bundle a require.
      "--banner:js=import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
    ]);
    await using server = await NatsServer.start();
    const env = jobEnv(server.wsUrl, "lambda");
    const timeoutMs = BUDGET_MS; // the smallest these options allow is 6500: drain margin 2000 + 2 × leaseMs 2000 + the handler's 500 ms reserve
    const runs = await Promise.all([environment(env, timeoutMs, 12), environment(env, timeoutMs, 12)]);
    const invocations = runs.flat();

    const slices: Slice[] = [];
    for (const inv of invocations) {
      assert.ok(inv.ok, `invocation ${inv.n} (${inv.kind}) failed: ${inv.error}`);
      assert.ok(inv.remainingMs > 0, `invocation ${inv.n} returned before its timeout (${inv.durationMs} ms)`);
      if (inv.kind === "functionUrl") {
        const res = inv.result as { statusCode: number; headers: Record<string, string>; body: string };
        assert.equal(res.statusCode, 200);
        assert.match(res.headers["content-type"], /^application\/json/);
        slices.push(JSON.parse(res.body));
      } else {
        slices.push(inv.result as Slice);
      }
    }
    assert.ok(invocations.some((i) => i.kind === "functionUrl") && invocations.some((i) => i.kind === "scheduled"));
    // Each slice took at most what the context said was left, minus the reserve.
    for (const s of slices) assert.ok(s.durationMs <= timeoutMs - 500, `${s.instance} took ${s.durationMs} ms`);
    assertNoLoss(slices, "aws lambda");

    // A function timeout too short for the options: the invocation fails saying what to change.
    const [short] = await environment(jobEnv(server.wsUrl, "lambda-short"), 2000, 1);
    assert.equal(short.ok, false);
    assert.match(short.error!, /has \d+ ms left, but a slice with these options needs at least .*= 6500 ms.*raise the function's timeout/);
  },
});
