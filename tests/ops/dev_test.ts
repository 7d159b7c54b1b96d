/**
 * `splitlease dev` as a process on Deno, Bun and Node 24: it finds a
 * nats-server the way the test command does (the cached pinned release
 * before Debian's), prints the nats:// and ws:// URLs, both of which a store
 * can use, and on Ctrl-C (SIGINT) stops the server and removes its
 * temporary data, exiting 0. A port already taken exits 1 saying so.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { NatsStore } from "../../nats.ts";
import { tcpTransport } from "../../adapters/nats_tcp.ts";
import { RedisStore } from "../../adapters/redis.ts";
import { pinnedCachePath } from "../../cli/nats_server.ts";
import { eachLine } from "../helpers/lines.ts";
import { withTimeout } from "../helpers/deadline.ts";
import { runCmd } from "../helpers/cmd.ts";
import { bin, bundleForNode, root, type Runtime, RUNTIMES, waitFor } from "../helpers/worker_procs.ts";
import { NATS_SERVER, NatsServer } from "../helpers/nats_server.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };
const NODE_CLI = "dist/fixtures/cli.mjs";

function command(rt: Runtime, args: string[]): [string, string[]] {
  switch (rt) {
    case "deno":
      return [bin("deno"), ["run", "-A", "cli.ts", ...args]];
    case "bun":
      return [bin("bun"), ["run", "cli.ts", ...args]];
    case "node":
      return [bin("node"), [NODE_CLI, ...args]];
  }
}

/** The environment a user's shell has: no variable of the test command's choosing a binary. */
function userEnv(): Record<string, string> {
  const env: Record<string, string> = { PATH: Deno.env.get("PATH") ?? "", HOME: Deno.env.get("HOME") ?? "/root", NO_COLOR: "1" };
  const xdg = Deno.env.get("XDG_CACHE_HOME");
  if (xdg) env.XDG_CACHE_HOME = xdg;
  return env;
}

function alive(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return !/^\d+ \(.*\) Z/.test(stat); // a zombie has exited
  } catch {
    return false;
  }
}

Deno.test({
  name: "splitlease dev: Deno, Bun and Node 24 run a local JetStream nats-server, print nats:// and ws:// URLs, stop cleanly on Ctrl-C",
  ...opts,
  fn: async () => {
    await bundleForNode("cli.ts", NODE_CLI);
    const home = Deno.env.get("HOME") ?? "/root";
    const cached = pinnedCachePath({ env: { XDG_CACHE_HOME: Deno.env.get("XDG_CACHE_HOME") }, home });
    for (const rt of RUNTIMES) {
      const [cmd, args] = command(rt, ["dev", "--port", "0", "--ws-port", "0", "--http-port", "0", "--json"]);
      const child = new Deno.Command(cmd, { args, cwd: root, clearEnv: true, env: userEnv(), stdout: "piped", stderr: "piped" })
        .spawn();
      const out: string[] = [];
      let first: (line: string) => void = () => {};
      const firstLine = new Promise<string>((r) => (first = r));
      const pumps = Promise.all([
        eachLine(child.stdout, (l) => {
          out.push(l);
          first(l);
        }),
        eachLine(child.stderr, (l) => out.push(l)),
      ]);
      try {
        const info = JSON.parse(await withTimeout(firstLine, 30_000, `the URLs from splitlease dev on ${rt}`));
        assert.match(info.nats, /^nats:\/\/127\.0\.0\.1:\d+$/, rt);
        assert.match(info.ws, /^ws:\/\/127\.0\.0\.1:\d+$/, rt);
        assert.equal(info.temporary, true);
        if (existsSync(cached)) {
          assert.equal(info.bin, cached, `${rt}: the cached pinned release before Debian's`);
          assert.equal(info.version, "2.15.2");
        }
        // Both URLs work, each through its transport (one at a time: one transport per process).
        {
          await using tcp = await NatsStore.connect({ servers: info.nats, job: `dev-${rt}`, transport: tcpTransport() });
          assert.ok((await tcp.create("hello", rt)).ok);
        }
        {
          await using ws = await NatsStore.connect({ servers: info.ws, job: `dev-${rt}` });
          assert.equal((await ws.get("hello"))?.value, rt);
        }
        assert.ok(existsSync(info.storeDir), "JetStream's data is there while it runs");
        child.kill("SIGINT");
        const status = await withTimeout(child.status, 10_000, `splitlease dev on ${rt} to stop after SIGINT`);
        await pumps;
        assert.equal(status.code, 0, `${rt} exit code\n${out.join("\n")}`);
        assert.match(out.join("\n"), /splitlease dev: SIGINT: nats-server stopped, its temporary data removed/);
        assert.ok(!alive(info.pid), `${rt}: the nats-server process ${info.pid} is gone`);
        assert.ok(!existsSync(info.storeDir), `${rt}: the temporary data is removed`);
        console.log(`  ${rt}: nats-server ${info.version} (${info.bin}) at ${info.nats} and ${info.ws}, stopped on SIGINT`);
      } finally {
        try {
          child.kill("SIGKILL");
        } catch { /* exited */ }
        await child.status;
      }
    }
  },
});

Deno.test({
  name: "splitlease dev --store redis: a local redis-server with appendfsync always that RedisStore accepts as it is; stopped and removed on Ctrl-C",
  ...opts,
  fn: async () => {
    const [cmd, args] = command("deno", ["dev", "--store", "redis", "--port", "0", "--json"]);
    const child = new Deno.Command(cmd, { args, cwd: root, clearEnv: true, env: userEnv(), stdout: "piped", stderr: "piped" }).spawn();
    const out: string[] = [];
    let first: (line: string) => void = () => {};
    const firstLine = new Promise<string>((r) => (first = r));
    const pumps = Promise.all([
      eachLine(child.stdout, (l) => {
        out.push(l);
        first(l);
      }),
      eachLine(child.stderr, (l) => out.push(l)),
    ]);
    try {
      const info = JSON.parse(await withTimeout(firstLine, 30_000, "the URL from splitlease dev --store redis"));
      assert.equal(info.store, "redis");
      assert.match(info.redis, /^redis:\/\/127\.0\.0\.1:\d+$/);
      {
        // The default durability ("always") accepts it: no option needed.
        await using store = await RedisStore.connect({ url: info.redis, job: "dev", logger: () => {} });
        assert.match(store.durability, /^durability "always"/);
        assert.ok((await store.create("hello", "redis")).ok);
      }
      assert.ok(existsSync(info.dataDir), "its data is there while it runs");
      child.kill("SIGINT");
      const status = await withTimeout(child.status, 10_000, "splitlease dev --store redis to stop after SIGINT");
      await pumps;
      assert.equal(status.code, 0, out.join("\n"));
      assert.match(out.join("\n"), /splitlease dev: SIGINT: redis-server stopped, its temporary data removed/);
      assert.ok(!alive(info.pid), `the redis-server process ${info.pid} is gone`);
      assert.ok(!existsSync(info.dataDir), "the temporary data is removed");
      const wrong = await runCmd(...command("deno", ["dev", "--store", "postgres"]), { cwd: root, env: userEnv(), check: false });
      assert.equal(wrong.code, 2);
      assert.match(wrong.out, /--store must be nats or redis, got "postgres" \(PostgreSQL has no local server here/);
    } finally {
      try {
        child.kill("SIGKILL");
      } catch { /* exited */ }
      await child.status;
    }
  },
});

Deno.test({
  name: "splitlease dev: a port already taken exits 1 naming it and how to pick others; --help, and an unknown option exits 2",
  ...opts,
  fn: async () => {
    using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (taken.addr as Deno.NetAddr).port;
    const [cmd, args] = command("deno", ["dev", "--port", String(port), "--ws-port", "0", "--http-port", "0"]);
    const r = await runCmd(cmd, args, { cwd: root, env: userEnv(), check: false, timeoutMs: 30_000 });
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /address already in use/);
    assert.match(r.out, /a port is taken: pick others with --port, --ws-port and --http-port, or 0 for any free port/);
    const help = await runCmd(...command("deno", ["dev", "--help"]), { cwd: root, env: userEnv(), check: false });
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^usage: splitlease dev/);
    const bad = await runCmd(...command("deno", ["dev", "--job", "x"]), { cwd: root, env: userEnv(), check: false });
    assert.equal(bad.code, 2);
    assert.match(bad.out, /unknown option "--job" of dev/);
  },
});

Deno.test({
  name: "README: the five-line local config runs a JetStream server with the client port and a WebSocket listener, as splitlease dev does",
  ...opts,
  fn: async () => {
    const readme = await Deno.readTextFile(`${root}README.md`);
    const block = [...readme.matchAll(/```conf\n([\s\S]*?)```/g)].map((m) => m[1]).find((b) => b.includes("nats-dev.conf"));
    assert.ok(block, "the README has the local config");
    const lines = block.split("\n").filter((l) => l.trim() && !l.startsWith("#"));
    assert.equal(lines.length, 4, "four settings (and a comment line)");
    const dir = await Deno.makeTempDir({ prefix: "splitlease-readme-conf-" });
    // Free ports and a temporary store instead of the documented ones; nothing else changed.
    const conf = block
      .replace(/(listen|http): 127\.0\.0\.1:\d+/g, "$1: 127.0.0.1:-1")
      .replace(/listen: "127\.0\.0\.1:\d+"/, 'listen: "127.0.0.1:-1"')
      .replace('"./nats-data"', JSON.stringify(`${dir}/js`)) + `ports_file_dir: ${JSON.stringify(dir)}\n`;
    assert.equal((conf.match(/:-1/g) ?? []).length, 3, conf);
    await Deno.writeTextFile(`${dir}/nats-dev.conf`, conf);
    const server = new Deno.Command(NATS_SERVER, { args: ["-c", `${dir}/nats-dev.conf`], stdout: "null", stderr: "null" }).spawn();
    try {
      const ports = await waitFor("the ports file", async () => {
        const f = [...Deno.readDirSync(dir)].find((e) => e.name.endsWith(".ports"));
        return f ? JSON.parse(await Deno.readTextFile(`${dir}/${f.name}`)) : undefined;
      }, 15_000);
      await waitFor("JetStream", async () => {
        const r = await fetch(`${ports.monitoring[0]}/healthz?js-enabled-only=true`);
        await r.body?.cancel();
        return r.status === 200 ? true : undefined;
      }, 15_000);
      {
        await using tcp = await NatsStore.connect({ servers: ports.nats[0], job: "readme", transport: tcpTransport() });
        assert.ok((await tcp.create("k", "v")).ok);
      }
      await using ws = await NatsStore.connect({ servers: ports.websocket[0], job: "readme" });
      assert.equal((await ws.get("k"))?.value, "v");
    } finally {
      server.kill("SIGKILL");
      await server.status;
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "cli: --servers and NATS_URL take nats:// (the TCP transport) as they take ws://, on Deno and Node",
  ...opts,
  fn: async () => {
    await bundleForNode("cli.ts", NODE_CLI);
    await using server = await NatsServer.start();
    {
      await using store = await NatsStore.connect({ servers: server.clientUrl, job: "cli-tcp", transport: tcpTransport() });
      assert.ok(store.bucket === "splitlease_cli-tcp");
    }
    for (const rt of ["deno", "node"] as const) {
      const flag = await runCmd(...command(rt, ["status", "--servers", server.clientUrl, "--job", "cli-tcp", "--json"]), {
        cwd: root,
        env: userEnv(),
        check: false,
      });
      assert.equal(flag.code, 0, `${rt}: ${flag.out}`);
      assert.equal(JSON.parse(flag.stdout).job, "cli-tcp");
      const env = await runCmd(...command(rt, ["status", "--job", "nosuch"]), {
        cwd: root,
        env: { ...userEnv(), NATS_URL: server.clientUrl },
        check: false,
      });
      assert.equal(env.code, 1, env.out);
      assert.match(env.out, new RegExp(`job "nosuch" has no bucket splitlease_nosuch on ${server.clientUrl}`));
      const wrong = await runCmd(...command(rt, ["status", "--job", "cli-tcp", "--servers", `nats://127.0.0.1:${server.wsPort}`]), {
        cwd: root,
        env: userEnv(),
        check: false,
      });
      assert.equal(wrong.code, 1, wrong.out);
      assert.match(wrong.out, /is a NATS WebSocket listener \(HTTP\), not the NATS client port: connect to it with ws:/);
    }
  },
});
