// Issue 33 item 6: maxInFlight and the job name each have one source. Real
// processes, as a user composes them: a worker's lanes follow the join's
// maxInFlight (a different one is refused), and serve refuses a NATS store
// connected with another job than its own, naming both.
import assert from "node:assert/strict";
import { NatsServer } from "../helpers/nats_server.ts";
import { bin, root, spawn } from "../helpers/worker_procs.ts";
import { runCmd } from "../helpers/cmd.ts";

async function lanes(env: Record<string, string>): Promise<Record<string, unknown>> {
  const r = await runCmd(bin("deno"), ["run", "-A", "tests/runtime/fixtures/lanes_main.ts"], {
    cwd: root,
    env: { ...env, NO_COLOR: "1" },
    timeoutMs: 60_000,
    what: "the hand-composed worker",
  });
  const last = r.stdout.trim().split("\n").pop()!;
  return JSON.parse(last);
}

Deno.test("one source: a worker composed by hand runs the lanes its coordinator joined with", async () => {
  // Joined with 16, no maxInFlight given to runWorker: 16 lanes, not the default 8.
  const ran = await lanes({ JOIN_LANES: "16" });
  assert.equal(ran.outcome, "drained", JSON.stringify(ran));
  assert.ok((ran.most as number) > 8 && (ran.most as number) <= 16, `at most 16 lanes ran at once, more than 8: ${JSON.stringify(ran)}`);
  // Given twice, differently: refused, naming both values.
  const refused = await lanes({ JOIN_LANES: "16", WORKER_LANES: "8" });
  assert.equal(refused.error, "INVALID_CONFIG", JSON.stringify(refused));
  assert.match(refused.message as string, /maxInFlight 8 differs from the coordinator's maxInFlight 16/);
  // Given twice, the same: fine.
  const same = await lanes({ JOIN_LANES: "4", WORKER_LANES: "4" });
  assert.equal(same.outcome, "drained", JSON.stringify(same));
  assert.ok((same.most as number) <= 4, JSON.stringify(same));
});

Deno.test("one source: serve refuses a NATS store connected with another job, naming both, and exits 1", async () => {
  await using server = await NatsServer.start();
  const p = spawn("deno", { STORE: "nats", NATS_URL: server.wsUrl, JOB: "beta", STORE_JOB: "alpha", SPLITS: "1" });
  const status = await p.status;
  assert.equal(status.code, 1, p.raw.join("\n"));
  const failed = p.lines.find((l) => l.event === "startupFailed");
  assert.ok(failed, p.raw.join("\n"));
  const text = JSON.stringify(failed);
  assert.match(text, /bound to job \\"alpha\\" but was given job \\"beta\\"/, text);
});
