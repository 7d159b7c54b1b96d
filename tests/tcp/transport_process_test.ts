/**
 * The TCP transport as a user's process meets it, on Deno, Bun and Node 24
 * (tests/tcp/fixtures/connect.ts): a nats:// connection that reads and
 * writes; the one-transport-per-process rule; and a URL at the wrong
 * listener of a server failing fast with one message on all three runtimes
 * (the NATS client port behind ws://, the WebSocket or monitoring port
 * behind nats://, the monitoring port behind ws://). In-process cases cover
 * the configuration errors that need no server.
 */
import assert from "node:assert/strict";
import { NatsStore } from "../../nats.ts";
import { tcpTransport } from "../../adapters/nats_tcp.ts";
import { SplitleaseError } from "../../mod.ts";
import { NatsServer } from "../helpers/nats_server.ts";
import { runCmd } from "../helpers/cmd.ts";
import { makeCertificates } from "../helpers/certs.ts";
import { bin, bundleForNode, root, type Runtime, RUNTIMES } from "../helpers/worker_procs.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };
const NODE_BUNDLE = "dist/fixtures/tcp_connect.mjs";

function command(rt: Runtime): [string, string[]] {
  switch (rt) {
    case "deno":
      return [bin("deno"), ["run", "-A", "tests/tcp/fixtures/connect.ts"]];
    case "bun":
      return [bin("bun"), ["run", "tests/tcp/fixtures/connect.ts"]];
    case "node":
      return [bin("node"), [NODE_BUNDLE]];
  }
}

/** The fixture's JSON lines on `rt`. */
async function runFixture(rt: Runtime, env: Record<string, string>): Promise<Record<string, any>[]> {
  const [cmd, args] = command(rt);
  const r = await runCmd(cmd, args, { cwd: root, env: { ...env, NO_COLOR: "1" }, timeoutMs: 60_000, check: false });
  assert.equal(r.code, 0, `${rt} fixture exit code\n${r.out.slice(-3000)}`);
  return r.stdout.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
}

Deno.test({
  name: "tcp transport: Deno, Bun and Node 24 connect with nats:// and tls://, refuse a second transport, and name a wrong listener fast",
  ...opts,
  fn: async () => {
    await bundleForNode("tests/tcp/fixtures/connect.ts", NODE_BUNDLE);
    await using server = await NatsServer.start();
    const certs = await Deno.makeTempDir({ prefix: "splitlease-tls-" });
    await makeCertificates(certs);
    await using secure = await NatsServer.start({
      extra: `tls { cert_file: "${certs}/tls/tls.crt", key_file: "${certs}/tls/tls.key" }`,
    });
    const wrong = [
      `ws://127.0.0.1:${server.clientPort}`,
      `ws://127.0.0.1:${server.monitorPort}`,
      `nats://127.0.0.1:${server.wsPort}`,
      `nats://127.0.0.1:${server.monitorPort}`,
    ];
    const host = "127.0.0.1";
    const pointed = [`http://${host}:${server.monitorPort}`, `http://${host}:${server.wsPort}`, `${host}:${server.clientPort}`];
    const env = {
      POINTED_URLS: pointed.join(","),
      NATS_URL: server.clientUrl,
      WS_URL: server.wsUrl,
      WRONG_URLS: wrong.join(","),
      TLS_URL: `tls://localhost:${secure.clientPort}`,
      CA_FILE: `${certs}/tls/ca.crt`,
    };
    const results = await Promise.all(RUNTIMES.map((rt) => runFixture(rt, { ...env, JOB: `process-${rt}` })))
      .finally(() => Deno.remove(certs, { recursive: true }));
    const messages: Record<string, string[]> = {};
    const pointedMessages: Record<string, string[]> = {};
    for (const [i, rt] of RUNTIMES.entries()) {
      const lines = results[i];
      const tcp = lines.find((l) => l.step === "tcp");
      assert.deepEqual(tcp, { step: "tcp", server: `127.0.0.1:${server.clientPort}`, updated: true, value: "v2" }, rt);
      assert.deepEqual(lines.find((l) => l.step === "tls"), { step: "tls", created: true, value: "yes" }, `${rt} over tls://`);
      const mix = lines.filter((l) => l.step === "mix");
      assert.equal(mix[0]?.whileOpen?.code, "INVALID_CONFIG", `${rt}: ${JSON.stringify(mix)}`);
      assert.match(mix[0].whileOpen.message, /already has a NATS connection over TCP .* cannot open one over WebSocket/);
      assert.equal(mix[1]?.afterClose, "v2", `${rt}: WebSocket works once the TCP store is closed`);
      const w = lines.filter((l) => l.step === "wrong");
      assert.deepEqual(w.map((l) => l.url), wrong, rt);
      for (const l of w) {
        assert.equal(l.code, "INVALID_CONFIG", `${rt} ${l.url}: ${l.message}`);
        // Fast: the connect timeout is 5 s; the listener is named well before it.
        assert.ok(l.ms < 2500, `${rt} ${l.url} took ${l.ms} ms`);
      }
      messages[rt] = w.map((l) => l.message);
      const p = lines.filter((l) => l.step === "pointed");
      assert.deepEqual(p.map((l) => [l.url, l.code]), pointed.map((u) => [u, "INVALID_CONFIG"]), `${rt}: ${JSON.stringify(p)}`);
      pointedMessages[rt] = p.map((l) => l.message);
      console.log(`  ${rt}: wrong listener named in ${w.map((l) => `${l.url.split(":")[0]}->${l.ms} ms`).join(", ")}`);
    }
    // One message per case, whatever the runtime.
    assert.deepEqual(messages.bun, messages.deno);
    assert.deepEqual(messages.node, messages.deno);
    const [wsAtClient, wsAtMonitor, natsAtWs, natsAtMonitor] = messages.deno;
    assert.match(wsAtClient, /is not a WebSocket listener: it answered in a protocol other than HTTP, as the NATS client port does/);
    assert.match(wsAtClient, new RegExp(`nats://127\\.0\\.0\\.1:${server.clientPort} through the TCP transport`));
    assert.match(wsAtClient, /import \{ tcpTransport \} from "@splitlease\/splitlease\/nats\/tcp"/);
    assert.match(wsAtMonitor, /is the NATS monitoring port \(HTTP: it serves \/varz and \/healthz\), not a WebSocket listener/);
    assert.match(natsAtWs, new RegExp(`is a NATS WebSocket listener \\(HTTP\\), not the NATS client port: connect to it with ws://127\\.0\\.0\\.1:${server.wsPort}`));
    assert.match(natsAtMonitor, /is the NATS monitoring port .*, not the NATS client port/);
    // A URL no transport takes, at a listener of the server: the error names the listener and the URL to give.
    assert.deepEqual(pointedMessages.bun, pointedMessages.deno);
    assert.deepEqual(pointedMessages.node, pointedMessages.deno);
    const [atMonitor, atWs, bare] = pointedMessages.deno;
    const accepted = "is not a NATS URL: give ws:// or wss:// \\(WebSocket\\), or nats:// or tls:// with the TCP transport";
    assert.match(
      atMonitor,
      new RegExp(`"${pointed[0]}" ${accepted}; it is the NATS monitoring port of nats-server s1, which takes no clients: its client port is nats://${host}:${server.clientPort}, its WebSocket listener ws://${host}:${server.wsPort}$`),
    );
    assert.match(atWs, new RegExp(`"${pointed[1]}" ${accepted}; it is a NATS WebSocket listener: give ws://${host}:${server.wsPort}$`));
    assert.match(bare, new RegExp(`"${pointed[2]}" ${accepted}; it answered in a protocol other than HTTP, as the NATS client port does: if it is one, give nats://${host}:${server.clientPort}$`));
  },
});

Deno.test({
  name: "tcp transport: a nats:// URL without it says what to import; a ws:// URL with it, and mixed schemes, are refused",
  ...opts,
  fn: async () => {
    const refused = async (options: Parameters<typeof NatsStore.connect>[0], pattern: RegExp) => {
      const e = await NatsStore.connect(options).then(() => undefined, (e) => e);
      assert.ok(e instanceof SplitleaseError && e.code === "INVALID_CONFIG", String(e));
      assert.match(e.message, pattern);
    };
    await refused(
      { servers: "nats://127.0.0.1:1", job: "j" },
      /server "nats:\/\/127\.0\.0\.1:1" is a NATS TCP URL, which needs the TCP transport: import \{ tcpTransport \} from "@splitlease\/splitlease\/nats\/tcp" and pass transport: tcpTransport\(\)/,
    );
    await refused({ servers: "tls://u:secret@nats.example:1", job: "j" }, /"tls:\/\/\*\*\*@nats\.example:1" is a NATS TCP URL/);
    await refused(
      { servers: "ws://127.0.0.1:1", job: "j", transport: tcpTransport() },
      /is a WebSocket URL, but the transport is TCP \(nats:\/\/ or tls:\/\/\): drop the transport option/,
    );
    await refused(
      { servers: ["nats://127.0.0.1:1", "ws://127.0.0.1:2"], job: "j", transport: tcpTransport() },
      /"ws:\/\/127\.0\.0\.1:2" is a WebSocket URL/,
    );
    // Nothing listens there: the registry's guess (tests/unit/store_urls_test.ts has the near misses).
    await refused(
      { servers: "http://127.0.0.1:1", job: "j" },
      /"http:\/\/127\.0\.0\.1:1" is not a NATS URL: give ws:\/\/ or wss:\/\/ \(WebSocket\), or nats:\/\/ or tls:\/\/ with the TCP transport; NATS, PostgreSQL and Redis take no HTTP URL/,
    );
    await refused({ servers: "http://127.0.0.1:1", job: "j", transport: tcpTransport() }, /is not a NATS URL: give nats:\/\/ or tls:\/\/ \(TCP\), or ws:\/\/ or wss:\/\/ without the transport option/);
    await refused(
      { servers: "nats://127.0.0.1:1", job: "j", transport: tcpTransport(), wsFactory: () => Promise.reject(new Error("unused")) },
      /wsFactory applies to the WebSocket transport only, not to TCP/,
    );
  },
});

Deno.test({
  name: "tcp transport: a WebSocket store open refuses a TCP one (the other direction of the per-process rule), a tls:// URL needs TLS",
  ...opts,
  fn: async () => {
    await using server = await NatsServer.start();
    const transport = tcpTransport();
    {
      await using ws = await NatsStore.connect({ servers: server.wsUrl, job: "mix" });
      const e = await NatsStore.connect({ servers: server.clientUrl, job: "mix", transport }).then(() => undefined, (e) => e);
      assert.ok(e instanceof SplitleaseError && e.code === "INVALID_CONFIG", String(e));
      assert.match(e.message, new RegExp(`already has a NATS connection over WebSocket \\(${server.wsUrl}\\), so it cannot open one over TCP`));
      assert.ok((await ws.create("still", "fine")).ok, "the open store is untouched");
    }
    // A tls:// URL at a plain-text server: refused at once, not retried until the timeout.
    const t0 = Date.now();
    const e = await NatsStore.connect({ servers: `tls://127.0.0.1:${server.clientPort}`, job: "mix", transport, opTimeoutMs: 5000 })
      .then(() => undefined, (e) => e);
    assert.ok(e instanceof SplitleaseError && e.code === "INVALID_CONFIG", String(e));
    assert.match(e.message, /offers no TLS, and tls:\/\/ requires it: use nats:\/\/ for a plain-text server/);
    assert.ok(Date.now() - t0 < 2000, `refused after ${Date.now() - t0} ms`);
    await using tcp = await NatsStore.connect({ servers: server.clientUrl, job: "mix", transport });
    assert.equal((await tcp.get("still"))?.value, "fine");
  },
});
