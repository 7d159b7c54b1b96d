/**
 * A worker whose NATS server is not there yet (issue 21, item 4): on every
 * runtime `NatsStore.connect` waits a bounded, logged time for it and then
 * fails naming the URLs and the time waited, or, with `connectWaitMs:
 * Infinity`, waits for as long as it takes, logging every attempt, and joins
 * once the server appears. On Node 24 a connect to `ws://127.0.0.1:1` (a port
 * undici refuses without touching the network) used to stay pending for ever:
 * the WebSocket failed before the NATS transport had set its handlers, and
 * the socket wrapper dropped the events.
 */
import assert from "node:assert/strict";
import { freePort, NatsServer } from "../helpers/nats_server.ts";
import { buildOnce, kill, type Proc, RUNTIMES, spawn, withTimeout } from "../helpers/worker_procs.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };
const tail = (p: Proc) => `${p.rt}:\n${p.raw.slice(-12).join("\n")}`;
const retries = (p: Proc) => p.lines.filter((l) => l.event === "storeConnectRetry");

Deno.test({
  name: "connect: an unreachable NATS server fails startup after connectWaitMs on every runtime, each attempt logged",
  ...opts,
  fn: async () => {
    await buildOnce();
    const waitMs = 1500;
    // A port the fetch standard blocks (Node fails it synchronously), and a refused one.
    for (const url of ["ws://127.0.0.1:1", `ws://127.0.0.1:${freePort()}`]) {
      const procs = RUNTIMES.map((rt) =>
        spawn(rt, {
          STORE: "nats",
          NATS_URL: url,
          JOB: `wait-${rt}`,
          OP_TIMEOUT_MS: "1000",
          CONNECT_WAIT_MS: String(waitMs),
        })
      );
      try {
        for (const p of procs) {
          const s = await withTimeout(p.status, waitMs + 15_000, `${p.rt} exits (connecting to ${url})`);
          assert.equal(s.code, 1, tail(p));
          const failed = p.lines.find((l) => l.event === "startupFailed");
          assert.ok(failed, `a startupFailed line\n${tail(p)}`);
          const err = failed.error as { code: string; message: string };
          assert.equal(err.code, "STORE_UNAVAILABLE", tail(p));
          assert.ok(err.message.includes(`no NATS server reachable at ${url} after `), `${p.rt}: ${err.message}`);
          const waited = Number(/after (\d+) ms/.exec(err.message)?.[1]);
          assert.ok(waited >= waitMs && waited < waitMs + 1500, `${p.rt} waited ${waited} ms: ${err.message}`);
          assert.ok(retries(p).length >= 2, `${p.rt}: every failed attempt is logged\n${tail(p)}`);
          for (const r of retries(p)) assert.equal(r.servers, url);
        }
      } finally {
        await Promise.all(procs.map(kill));
      }
    }
  },
});

Deno.test({
  name: "connect: with connectWaitMs Infinity a worker started before NATS logs each attempt and joins once it is up",
  ...opts,
  fn: async () => {
    await buildOnce();
    await using server = await NatsServer.start();
    // The workers' URL refuses connections until the "server" appears: a
    // forwarder to nats-server opened on that port a few seconds later.
    const port = freePort();
    const procs = RUNTIMES.map((rt) =>
      spawn(rt, {
        STORE: "nats",
        NATS_URL: `ws://127.0.0.1:${port}`,
        JOB: `late-nats-${rt}`,
        OP_TIMEOUT_MS: "1000",
        CONNECT_WAIT_MS: "Infinity",
        SPLITS: "1",
        RECORDS: "1000000",
      })
    );
    let listener: Deno.Listener | undefined;
    const conns: Deno.Conn[] = [];
    try {
      // Each worker has failed to reach the server at least twice: it is waiting, and says so.
      await Promise.all(procs.map((p) => p.line(() => retries(p).length >= 2, "two storeConnectRetry lines", 20_000)));
      for (const p of procs) assert.ok(!p.lines.some((l) => l.event === "startupFailed"), tail(p));
      listener = Deno.listen({ hostname: "127.0.0.1", port });
      const l = listener;
      void (async () => {
        for await (const c of l) {
          conns.push(c);
          Deno.connect({ hostname: "127.0.0.1", port: server.wsPort }).then((up) => {
            conns.push(up);
            c.readable.pipeTo(up.writable).catch(() => {});
            up.readable.pipeTo(c.writable).catch(() => {});
          }, () => c.close());
        }
      })().catch(() => {});
      for (const p of procs) {
        await p.line((l) => l.event === "serving", "serving once NATS is up", 20_000);
        const r = retries(p);
        assert.equal(r[r.length - 1].connectWaitMs, "Infinity", tail(p));
        assert.ok(r.every((x, i) => x.attempt === i + 1), `${p.rt}: attempts numbered 1, 2, …\n${tail(p)}`);
      }
    } finally {
      await Promise.all(procs.map(kill));
      listener?.close();
      for (const c of conns) {
        try {
          c.close();
        } catch { /* closed */ }
      }
    }
  },
});
