// The splitlease CLI as a process (deno run -A cli.ts, and node dist/cli.js
// as npm installs it) against nats-server: usage and connection errors, and
// an operator session on a live two-worker fleet — status, the quarantined
// split with its failures, requeue, drain of a named member, cancel of a
// held split — ending in a completed job; a SIGKILLed worker shown gone and
// a misconfigured one leaving no bucket (tests/ops/dead_member.ts).
import assert from "node:assert/strict";
import { NatsStore } from "../../nats.ts";
import { NatsServer } from "../helpers/nats_server.ts";
import { cli, operatorSession } from "./operator_session.ts";
import { badConfigLeavesNothing, deadMemberShownDead } from "./dead_member.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };

Deno.test({
  name: "cli: usage errors exit 2, an unreachable server or an unknown job exit 1 naming it, and no bucket is created",
  ...opts,
  fn: async () => {
    await using server = await NatsServer.start();
    const env = { NATS_URL: server.wsUrl };
    const help = await cli("deno", ["--help"]);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^usage: splitlease <command>/);
    const { VERSION } = await import("../../admin.ts");
    for (const args of [["--version"], ["-V"]]) {
      const v = await cli("deno", args);
      assert.deepEqual([v.code, v.stdout], [0, `splitlease ${VERSION}\n`], args.join(" "));
    }
    for (const [args, message] of [
      [["frobnicate", "-j", "x"], /unknown command "frobnicate"/],
      [["stauts", "-j", "x"], /unknown command "stauts"; did you mean status\?/],
      [["splits", "--sate", "owned", "-j", "x"], /unknown option --sate; did you mean --state\?/],
      [["status", "--jbo", "x"], /unknown option --jbo; did you mean --job\?/],
      [["delete", "-j", "x"], /add --yes to confirm/],
      [["splits", "--state", "done", "-j", "x"], /unknown state "done"/],
      [["splits", "--limit", "0", "-j", "x"], /--limit must be an integer from 1 to 1000/],
      [["requeue", "-j", "x"], /requeue needs a split id \(or --all\)/],
      [["cancel", "a.b", "-j", "x"], /"a.b" is not a split id/],
      [["status", "--bogus", "-j", "x"], /unknown option --bogus/],
      [["status"], /no job: give --job or set JOB/],
    ] as const) {
      const r = await cli("deno", [...args], env);
      assert.equal(r.code, 2, `${args.join(" ")}:\n${r.out}`);
      assert.match(r.out, message);
      assert.match(r.out, /usage: splitlease/);
    }
    const unknown = await cli("deno", ["status", "--job", "no-such-job"], env);
    assert.equal(unknown.code, 1, unknown.out);
    assert.match(unknown.out, /job "no-such-job" has no bucket splitlease_no-such-job .*check the job name/);
    await assert.rejects(
      NatsStore.connect({ servers: server.wsUrl, job: "no-such-job", createBucket: false }),
      /has no bucket splitlease_no-such-job/,
      "the CLI created no bucket",
    );
    const down = await cli("deno", ["status", "--job", "x", "--servers", "ws://127.0.0.1:1", "--op-timeout-ms", "500"]);
    assert.equal(down.code, 1);
    assert.match(down.out, /STORE_UNAVAILABLE/);
    // One scheme message (src/store/store_urls.ts): every scheme named, a near miss fixed, a listener pointed at.
    const all = "give nats://, tls://, ws:// or wss:// URLs \\(NATS\\), one postgres:// or postgresql:// URL \\(PostgreSQL\\), or one redis:// or rediss:// URL \\(Redis\\)";
    const h = "127\\.0\\.0\\.1";
    for (const [servers, fix] of [
      [`memcached://127.0.0.1:${server.clientPort}`, `${all} \\(INVALID_CONFIG\\)`],
      [`nat://127.0.0.1:${server.clientPort}`, `${all}; did you mean nats://${h}:${server.clientPort}\\?`],
      [`http://127.0.0.1:${server.monitorPort}`, `${all}; it is the NATS monitoring port of nats-server s1, which takes no clients: its client port is nats://${h}:${server.clientPort}, its WebSocket listener ws://${h}:${server.wsPort}`],
      [`127.0.0.1:${server.clientPort}`, `${all}; it answered in a protocol other than HTTP, as the NATS client port does: if it is one, give nats://${h}:${server.clientPort}`],
    ]) {
      for (const cmd of [["status", "-j", "x"], ["jobs"]]) {
        const r = await cli("deno", [...cmd, "-s", servers]);
        assert.equal(r.code, 1, `${cmd[0]} -s ${servers}:\n${r.out}`);
        assert.match(r.out, new RegExp(`--servers "${servers.replaceAll(".", "\\.")}" is not a store URL: ${fix}`), r.out);
      }
    }
  },
});

Deno.test({
  name: "cli: an operator session on a live fleet over nats-server (deno cli.ts and node dist/cli.js)",
  ...opts,
  fn: async () => {
    await using server = await NatsServer.start();
    await operatorSession("ops-cli", { NATS_URL: server.wsUrl }, (job) => NatsStore.connect({ servers: server.wsUrl, job, opTimeoutMs: 400 }));
  },
});

Deno.test({
  name: "cli: a SIGKILLed worker is shown gone (not working) once past its lease, jobs and delete count only the live member, and its record goes when the job is done (issue 40, item 3)",
  ...opts,
  fn: async () => {
    await using server = await NatsServer.start();
    await deadMemberShownDead(`dead-${crypto.randomUUID().slice(0, 6)}`, { STORE: "nats", NATS_URL: server.wsUrl }, { NATS_URL: server.wsUrl });
  },
});

Deno.test({
  name: "cli: a worker refused for its configuration leaves no bucket, and an empty bucket deletes without --force (issue 40, item 5)",
  ...opts,
  fn: async () => {
    await using server = await NatsServer.start();
    const job = `badcfg-${crypto.randomUUID().slice(0, 6)}`;
    await badConfigLeavesNothing(
      job,
      { STORE: "nats", NATS_URL: server.wsUrl },
      { NATS_URL: server.wsUrl },
      () => NatsStore.connect({ servers: server.wsUrl, job, createBucket: false }).then(async (s) => (await s.close(), false), () => true),
      async (empty) => await (await NatsStore.connect({ servers: server.wsUrl, job: empty })).close(),
    );
  },
});
