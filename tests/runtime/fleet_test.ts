/**
 * Real worker processes beyond a single adapter: a mixed Deno + Bun + Node 24
 * fleet completing one backfill over nats-server, and bad input (invalid
 * config, unreachable store, a source that throws) handled as process
 * outcomes rather than crashes.
 */
import assert from "node:assert/strict";
import { NatsStore } from "../../nats.ts";
import { freePort, NatsServer } from "../helpers/nats_server.ts";
import { buildOnce, withTimeout } from "../helpers/worker_procs.ts";
import { finished, mixedFleet, tail, withFleet } from "./mixed_fleet.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };

Deno.test({
  name:
    "fleet: one Deno, one Bun and one Node 24 worker complete a backfill on nats-server: every record out, none twice",
  ...opts,
  fn: async () => {
    await using server = await NatsServer.start();
    await mixedFleet(
      { STORE: "nats", NATS_URL: server.wsUrl },
      (job) => NatsStore.connect({ servers: server.wsUrl, job }),
    );
  },
});

Deno.test({
  name: "bad input: invalid config exits 1 on every runtime with an error naming each broken rule",
  ...opts,
  fn: async () => {
    await buildOnce();
    await withFleet(
      (rt) => ({ STORE: "memory", JOB: `bad-config-${rt}`, LEASE_MS: "100", MAX_IN_FLIGHT: "-1" }),
      async (procs) => {
        for (const p of procs) {
          const s = await withTimeout(p.status, 20_000, `${p.rt} exits`);
          assert.equal(s.code, 1, tail(p));
          const failed = p.lines.find((l) => l.event === "startupFailed") as {
            error: { code: string; message: string };
          };
          assert.ok(failed, `a startupFailed line\n${tail(p)}`);
          assert.equal(failed.error.code, "INVALID_CONFIG");
          assert.match(failed.error.message, /leaseMs: .*500/, "the lease rule (>= 500)");
          assert.match(failed.error.message, /maxInFlight: .*0/, "the lane rule (>= 0)");
          assert.ok(!p.lines.some((l) => l.event === "serving"), "never served");
        }
      },
    );
  },
});

Deno.test({
  name: "bad input: an unreachable NATS store fails startup with a clear error within opTimeoutMs, exit 1",
  ...opts,
  fn: async () => {
    await buildOnce();
    // Nothing listening (connection refused), and a listener that accepts but never answers.
    const silent = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const conns: Deno.Conn[] = [];
    const accepting = (async () => {
      for await (const c of silent) conns.push(c);
    })().catch(() => {});
    try {
      const cases = [
        { name: "refused", url: `ws://127.0.0.1:${freePort()}`, opTimeoutMs: 1000, detail: /connect/i },
        {
          name: "silent",
          url: `ws://127.0.0.1:${(silent.addr as Deno.NetAddr).port}`,
          opTimeoutMs: 2000,
          detail: /timeout/i,
        },
      ];
      for (const c of cases) {
        await withFleet((rt) => ({
          STORE: "nats",
          NATS_URL: c.url,
          JOB: `unreachable-${rt}`,
          OP_TIMEOUT_MS: String(c.opTimeoutMs),
          LEASE_MS: String(2 * c.opTimeoutMs),
        }), async (procs) => {
          for (const p of procs) {
            const s = await withTimeout(p.status, c.opTimeoutMs + 10_000, `${p.rt} exits`);
            assert.equal(s.code, 1, tail(p));
            const i = p.lines.findIndex((l) => l.event === "startupFailed");
            assert.ok(i >= 0, `a startupFailed line\n${tail(p)}`);
            const err = p.lines[i].error as { code: string; message: string };
            assert.equal(err.code, "STORE_UNAVAILABLE", tail(p));
            assert.match(err.message, /Store operation "connect" failed/);
            assert.match(err.message, c.detail);
            // From the process's own first line (config read) to the error line, by its clock.
            const boot = Date.parse(String(p.lines.find((l) => l.event === "config")?.time));
            const took = Date.parse(String(p.lines[i].time)) - boot;
            console.log(`  ${c.name} ${p.rt}: startup failed after ${took} ms (opTimeoutMs ${c.opTimeoutMs})`);
            assert.ok(took <= c.opTimeoutMs + 250, `${p.rt} ${c.name}: ${took} ms`);
          }
        });
      }
    } finally {
      silent.close();
      for (const c of conns) c.close();
      await accepting;
    }
  },
});

Deno.test({
  name: "bad input: refused NATS credentials exit 1 at once with STORE_AUTH_FAILED on every runtime, no secret logged",
  ...opts,
  fn: async () => {
    await buildOnce();
    await using server = await NatsServer.start({ extra: 'authorization { user: "sl", password: "right-pw" }' });
    const opTimeoutMs = 10_000;
    await withFleet((rt) => ({
      STORE: "nats",
      // Credentials in the URL are used (not ignored): the wrong password is refused.
      NATS_URL: server.wsUrl.replace("ws://", "ws://sl:wrong-pw@"),
      JOB: `auth-${rt}`,
      OP_TIMEOUT_MS: String(opTimeoutMs),
      LEASE_MS: String(2 * opTimeoutMs),
      // A valid configuration (drainDeadlineMs >= opTimeoutMs): it is checked before the store is opened.
      DRAIN_DEADLINE_MS: String(opTimeoutMs),
    }), async (procs) => {
      for (const p of procs) {
        const s = await withTimeout(p.status, opTimeoutMs, `${p.rt} exits before the connect timeout`);
        assert.equal(s.code, 1, tail(p));
        const failed = p.lines.find((l) => l.event === "startupFailed");
        assert.ok(failed, `a startupFailed line\n${tail(p)}`);
        const err = failed.error as { code: string; message: string };
        assert.equal(err.code, "STORE_AUTH_FAILED", tail(p));
        assert.match(err.message, /refused the login with user "sl" and a password/);
        assert.ok(!p.raw.some((l) => l.includes("wrong-pw") || l.includes("right-pw")), `no password in the output\n${tail(p)}`);
        assert.ok(!p.lines.some((l) => l.event === "serving"), "never served");
      }
    });
  },
});

Deno.test({
  name: "bad input: a source whose run throws is a failed tenancy (retried, then quarantined), not a process crash",
  ...opts,
  fn: async () => {
    await buildOnce();
    await withFleet((rt) => ({
      STORE: "memory",
      JOB: `throws-${rt}`,
      SPLITS: "4",
      RECORDS: "5",
      RECORD_MS: "1",
      MAX_ATTEMPTS: "2",
      FAIL_SPLITS: "r1", // always throws: two failed tenancies, then quarantined
      FAIL_ONCE: "r2", // throws once: retried, then completes
    }), async (procs) => {
      for (const p of procs) {
        const s = await withTimeout(p.status, 20_000, `${p.rt} exits`);
        assert.equal(s.code, 3, `stalled (a quarantined split remains), not a crash\n${tail(p)}`);
        const laneFailed = p.lines.filter((l) => l.event === "laneFailed");
        assert.deepEqual(laneFailed.map((l) => l.splitId).sort(), ["r1", "r1", "r2"]);
        const f = finished(p)!;
        assert.equal(f.outcome, "stalled");
        assert.equal(f.stats.failed, 3, "three failed tenancies");
        assert.equal(f.stats.completed, 3, "r0, r2, r3 completed");
        assert.equal(f.stats.recordsCommitted, 15);
        assert.ok(p.lines.some((l) => l.event === "stalled" && l.quarantined === 1 && l.completed === 3), tail(p));
        assert.ok(!p.raw.some((l) => /uncaught|unhandled/i.test(l)), `no uncaught error\n${tail(p)}`);
      }
    });
  },
});

Deno.test({
  name: "bad input: a planner that keeps failing ends the job with exit code 4 on every runtime, after backing off between attempts",
  ...opts,
  fn: async () => {
    await buildOnce();
    await withFleet((rt) => ({
      STORE: "memory",
      JOB: `planfail-${rt}`,
      PLAN_ERROR: "bucket listing denied (on purpose)",
      PLAN_ATTEMPTS: "3",
    }), async (procs) => {
      for (const p of procs) {
        const s = await withTimeout(p.status, 20_000, `${p.rt} exits after the planner fails for good`);
        assert.equal(s.code, 4, `planner failed: exit code 4\n${tail(p)}`);
        assert.ok(p.raw.some((l) => l.includes("bucket listing denied (on purpose)")), `the planner's error is logged\n${tail(p)}`);
        const retries = p.lines.filter((l) => l.msg === "Planning failed; retrying");
        assert.equal(retries.length, 2, `two retries before the third failure ends the job\n${tail(p)}`);
        assert.ok(!p.raw.some((l) => /uncaught|unhandled/i.test(l)), `no uncaught error\n${tail(p)}`);
      }
    });
  },
});
