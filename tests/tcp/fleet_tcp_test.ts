/**
 * A fleet over the TCP transport through a fault: one Deno, one Bun and one
 * Node 24 worker (tests/runtime/fixtures) reach nats-server with nats://,
 * the server is killed (SIGKILL) mid-job and restarted on the same ports a
 * second later, and the job still completes on every runtime with no record
 * lost: each worker's TCP connection reconnected and its watches resumed.
 */
import assert from "node:assert/strict";
import { NatsStore } from "../../nats.ts";
import { tcpTransport } from "../../adapters/nats_tcp.ts";
import { SplitRecordSchema } from "../../src/records.ts";
import { delay, NatsServer } from "../helpers/nats_server.ts";
import { whenAvailable } from "../helpers/after_fault.ts";
import { buildNodeFixture, kill, type Runtime, RUNTIMES, spawn, waitFor, withTimeout } from "../helpers/worker_procs.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };

Deno.test({
  name: "tcp fleet: Deno, Bun and Node 24 workers on nats:// finish a backfill through a nats-server crash and restart, no record lost",
  ...opts,
  fn: async () => {
    await buildNodeFixture();
    await using server = await NatsServer.start();
    const dir = await Deno.makeTempDir({ prefix: "splitlease-tcp-fleet-" });
    const SPLITS = 12, RECORDS = 150;
    const job = "tcp-fleet";
    const out = (rt: Runtime) => `${dir}/${rt}.out`;
    const lines = async (rt: Runtime) => (await Deno.readTextFile(out(rt)).catch(() => "")).split("\n").filter(Boolean);
    const procs = RUNTIMES.map((rt) =>
      spawn(rt, {
        STORE: "nats",
        NATS_URL: server.clientUrl,
        JOB: job,
        INSTANCE: `w-${rt}`,
        SPLITS: String(SPLITS),
        RECORDS: String(RECORDS),
        RECORD_MS: "20",
        MAX_IN_FLIGHT: "4",
        EXPECT_MEMBERS: String(RUNTIMES.length),
        // Longer than the outage: the crash tests the transport's reconnect, not self-fencing.
        LEASE_MS: "6000",
        OUT: out(rt),
      })
    );
    const tail = () => procs.map((p) => `${p.rt}:\n${p.raw.slice(-12).join("\n")}`).join("\n");
    try {
      // Mid-job: every runtime has processed records, most are still to do.
      await waitFor("every worker to process records", async () => {
        const n = await Promise.all(RUNTIMES.map(lines));
        return n.every((l) => l.length >= 10) ? true : undefined;
      }, 30_000).catch((e) => {
        throw new Error(`${e.message}\n${tail()}`);
      });
      const before = (await Promise.all(RUNTIMES.map(lines))).reduce((n, l) => n + l.length, 0);
      assert.ok(before < SPLITS * RECORDS / 2, `the crash comes mid-job (${before} records done)`);
      await server.kill();
      await delay(1000);
      await server.restart();
      const codes = await withTimeout(Promise.all(procs.map((p) => p.status.then((s) => s.code))), 60_000, "the fleet completes")
        .catch((e) => {
          throw new Error(`${e.message}\n${tail()}`);
        });
      for (const [i, p] of procs.entries()) {
        assert.equal(codes[i], 0, `exit 0\n${tail()}`);
        assert.ok(p.lines.some((l) => l.event === "finished" && l.reason === "complete"), `complete on ${p.rt}`);
        // The TCP connection came back on its own: the watches resumed after "reconnected to <server>".
        assert.ok(
          p.lines.some((l) => l.msg === "Watch re-established" && /^reconnected to 127\.0\.0\.1:/.test(String(l.reason))),
          `${p.rt} reconnected over TCP\n${p.raw.slice(-12).join("\n")}`,
        );
      }
      const seen = new Set((await Promise.all(RUNTIMES.map(lines))).flat());
      const missing: string[] = [];
      for (let s = 0; s < SPLITS; s++) for (let r = 1; r <= RECORDS; r++) if (!seen.has(`r${s} ${r}`)) missing.push(`r${s} ${r}`);
      assert.deepEqual(missing, [], "no record lost");
      assert.equal(seen.size, SPLITS * RECORDS, "nothing but input records");
      // Read after the crash and restart: the outage waited out as a user would, not assumed over.
      await using store = await whenAvailable("the checking store", () => NatsStore.connect({ servers: server.clientUrl, job, transport: tcpTransport() }));
      const splits = await whenAvailable("the listing of the splits", () => store.list("split."));
      assert.equal(splits.length, SPLITS);
      for (const e of splits) assert.equal(SplitRecordSchema.parse(JSON.parse(e.value)).status, "completed");
    } finally {
      await Promise.all(procs.map(kill));
      await Deno.remove(dir, { recursive: true });
    }
  },
});
