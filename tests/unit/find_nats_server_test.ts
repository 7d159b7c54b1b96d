// Which nats-server `splitlease dev` and the demo's --nats run (cli/nats_server.ts):
// the order the test command uses, the pinned release before Debian's 2.9,
// NATS_SERVER as an alias of NATS_SERVER_BIN, and what to install when none is found.
import assert from "node:assert/strict";
import { findNatsServer, type Machine, PINNED_NATS_VERSION } from "../../cli/nats_server.ts";
import { DEV_PORTS, parseDevArgs } from "../../cli/dev.ts";

const CACHED = `/home/u/.cache/splitlease/nats-server/${PINNED_NATS_VERSION}/nats-server`;

/** A machine with these binaries (path -> version; undefined: present but broken). */
function machine(bins: Record<string, string | undefined>, env: Record<string, string> = {}): Machine {
  return {
    env: { PATH: "/opt/bin:/usr/local/bin", ...env },
    home: "/home/u",
    exists: (p) => p in bins,
    versionOf: (p) => bins[p],
  };
}

Deno.test("nats-server lookup: the cached pinned release wins over PATH and Debian's 2.9.10", () => {
  const all = { [CACHED]: "2.15.2", "/usr/local/bin/nats-server": "2.11.0", "/usr/sbin/nats-server": "2.9.10" };
  assert.deepEqual(findNatsServer(machine(all)), {
    path: CACHED,
    version: "2.15.2",
    why: `the cached build of the pinned ${PINNED_NATS_VERSION}`,
  });
  const { [CACHED]: _, ...noCache } = all;
  assert.deepEqual(findNatsServer(machine(noCache)), { path: "/usr/local/bin/nats-server", version: "2.11.0", why: "found on PATH" });
  assert.deepEqual(findNatsServer(machine({ "/usr/sbin/nats-server": "2.9.10" })), {
    path: "/usr/sbin/nats-server",
    version: "2.9.10",
    why: "Debian's package",
  });
  // XDG_CACHE_HOME moves the cache, as the test command's does.
  const xdg = "/xdg/splitlease/nats-server/v2.15.2/nats-server";
  assert.equal((findNatsServer(machine({ [xdg]: "2.15.2", "/usr/sbin/nats-server": "2.9.10" }, { XDG_CACHE_HOME: "/xdg" })) as { path: string }).path, xdg);
  // A binary that does not run is skipped.
  assert.equal((findNatsServer(machine({ [CACHED]: undefined, "/usr/sbin/nats-server": "2.9.10" })) as { path: string }).path, "/usr/sbin/nats-server");
});

Deno.test("nats-server lookup: NATS_SERVER_BIN first, NATS_SERVER as its alias, a broken one named", () => {
  const bins = { [CACHED]: "2.15.2", "/x/nats-server": "2.14.1", "/y/nats-server": "2.12.0" };
  assert.deepEqual(findNatsServer(machine(bins, { NATS_SERVER_BIN: "/x/nats-server", NATS_SERVER: "/y/nats-server" })), {
    path: "/x/nats-server",
    version: "2.14.1",
    why: "NATS_SERVER_BIN is set",
  });
  assert.deepEqual(findNatsServer(machine(bins, { NATS_SERVER: "/y/nats-server" })), {
    path: "/y/nats-server",
    version: "2.12.0",
    why: "NATS_SERVER is set",
  });
  assert.deepEqual(findNatsServer(machine(bins, { NATS_SERVER_BIN: "/nope" })), { error: "NATS_SERVER_BIN=/nope is not a runnable nats-server" });
});

Deno.test("nats-server lookup: none found says where it looked and exactly what to install", () => {
  const r = findNatsServer(machine({}));
  assert.ok("error" in r);
  assert.match(r.error, /^no nats-server found \(looked at NATS_SERVER_BIN, \/home\/u\/\.cache\/splitlease\/nats-server\/v2\.15\.2\/nats-server, PATH and \/usr\/sbin\)/);
  assert.match(r.error, /go install github\.com\/nats-io\/nats-server\/v2@v2\.15\.2/);
  assert.match(r.error, /apt-get install nats-server/);
  assert.match(r.error, /NATS_SERVER_BIN=\/path\/to\/nats-server/);
});

Deno.test("splitlease dev: flags, defaults and usage errors", () => {
  assert.deepEqual(parseDevArgs([]), { store: "nats", ...DEV_PORTS, storeDir: undefined, json: false, help: false });
  assert.deepEqual(parseDevArgs(["--port", "0", "--ws-port=0", "--http-port", "9", "--store-dir", "/d", "--json"]), {
    store: "nats",
    port: 0,
    wsPort: 0,
    httpPort: 9,
    storeDir: "/d",
    json: true,
    help: false,
  });
  assert.deepEqual(parseDevArgs(["--port", "x"]), { error: '--port must be a port number (0-65535), got "x"' });
  assert.deepEqual(parseDevArgs(["--port", "70000"]), { error: '--port must be a port number (0-65535), got "70000"' });
  assert.deepEqual(parseDevArgs(["--servers", "x"]), { error: 'unknown option "--servers" of dev' });
  assert.deepEqual(parseDevArgs(["--ws-port"]), { error: "--ws-port needs a value" });
  assert.deepEqual(parseDevArgs(["--json=1"]), { error: "--json takes no value" });
  // --store: the registry's backends with a local server; Redis's own port and flags.
  assert.deepEqual(parseDevArgs(["--store", "redis"]), { store: "redis", ...DEV_PORTS, port: 6379, storeDir: undefined, json: false, help: false });
  assert.equal((parseDevArgs(["--store=redis", "--port", "7000"]) as { port: number }).port, 7000);
  assert.deepEqual(parseDevArgs(["--store", "redis", "--ws-port", "1"]), { error: "--ws-port is for --store nats (a redis-server has one port: --port)" });
  assert.match((parseDevArgs(["--store", "memcached"]) as { error: string }).error, /^--store must be nats or redis, got "memcached"$/);
});
