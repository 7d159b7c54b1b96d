/**
 * `splitlease dev`: a local coordination server on loopback until Ctrl-C —
 * by default nats-server with JetStream, its client port (`nats://`) and a
 * plain WebSocket listener (`ws://`), found the way the test command finds
 * one; with `--store redis` a redis-server with the append-only file
 * fsynced on every write. The store kinds are the registry's
 * (`src/store/store_urls.ts`) that have a local server here.
 *
 * @module
 */
import process from "node:process";
import { createServer } from "node:net";
import { NATS_URLS, REDIS_URLS, STORE_URL_KINDS } from "../src/store/store_urls.ts";
import { findNatsServer, type LocalServer, startNatsServer, thisMachine } from "./nats_server.ts";
import { findRedisServer, type LocalRedis, startRedisServer } from "./redis_server.ts";

/** The registry's backends `splitlease dev` can run locally. */
const LOCAL = [NATS_URLS.id, REDIS_URLS.id] as const;
type LocalStore = (typeof LOCAL)[number];

/** `splitlease dev --help`. */
export const DEV_USAGE = `usage: splitlease dev [--store nats|redis] [--port N] [--ws-port N] [--http-port N] [--store-dir DIR] [--json]

Runs a local coordination server for development on 127.0.0.1, until Ctrl-C, and prints the
URL values to use: by default nats-server with JetStream, the client port (nats://) and a plain
WebSocket listener (ws://); with --store redis a redis-server (redis://) whose append-only file
is fsynced on every write, as RedisStore requires by default.

  --store KIND     nats (default) or redis
  --port N         client port, for nats:// or redis:// (default 4222, or 6379 for redis; 0: any free port)
  --ws-port N      WebSocket port, for ws:// (default 8080; 0: any free port; nats only)
  --http-port N    monitoring port (default 8222; 0: any free port; nats only)
  --store-dir DIR  keep the server's data in DIR (default: a temporary directory, removed on exit)
  --json           print the URLs as one JSON line on stdout

The binaries: NATS_SERVER_BIN (or NATS_SERVER), else the cached build of the pinned release
(~/.cache/splitlease/nats-server/), else nats-server on PATH, else Debian's /usr/sbin/nats-server;
REDIS_SERVER_BIN, else redis-server on PATH, else Debian's /usr/bin/redis-server.`;

/** The ports `splitlease dev` listens on by default: nats-server's own defaults, and 8080 for WebSocket as in its docs. */
export const DEV_PORTS: { readonly port: number; readonly wsPort: number; readonly httpPort: number } = {
  port: 4222,
  wsPort: 8080,
  httpPort: 8222,
};

/** The parsed flags of `splitlease dev`, or the usage error. */
export function parseDevArgs(argv: readonly string[]):
  | { store: LocalStore; port: number; wsPort: number; httpPort: number; storeDir?: string; json: boolean; help: boolean }
  | { error: string } {
  const o = { store: "nats" as LocalStore, ...DEV_PORTS, storeDir: undefined as string | undefined, json: false, help: false };
  const given = new Set<string>();
  const ports = { "--port": "port", "--ws-port": "wsPort", "--http-port": "httpPort" } as const;
  for (let i = 0; i < argv.length; i++) {
    let a = argv[i];
    let value: string | undefined;
    const eq = a.indexOf("=");
    if (a.startsWith("--") && eq > 0) [a, value] = [a.slice(0, eq), a.slice(eq + 1)];
    if (a === "--json" || a === "--help" || a === "-h") {
      if (value !== undefined) return { error: `${a} takes no value` };
      if (a === "--json") o.json = true;
      else o.help = true;
      continue;
    }
    if (!(a in ports) && a !== "--store-dir" && a !== "--store") return { error: `unknown option ${JSON.stringify(a)} of dev` };
    value ??= argv[++i];
    if (value === undefined) return { error: `${a} needs a value` };
    given.add(a);
    if (a === "--store") {
      if (!(LOCAL as readonly string[]).includes(value)) {
        const other = STORE_URL_KINDS.find((k) => k.id === value);
        return {
          error: `--store must be ${LOCAL.join(" or ")}, got ${JSON.stringify(value)}` +
            (other ? ` (${other.name} has no local server here: run one and give its URL to the workers)` : ""),
        };
      }
      o.store = value as LocalStore;
      continue;
    }
    if (a === "--store-dir") {
      o.storeDir = value;
      continue;
    }
    const n = Number(value);
    if (!/^\d+$/.test(value) || n > 65535) return { error: `${a} must be a port number (0-65535), got ${JSON.stringify(value)}` };
    o[ports[a as keyof typeof ports]] = n;
  }
  if (o.store === "redis") {
    for (const a of ["--ws-port", "--http-port"]) if (given.has(a)) return { error: `${a} is for --store nats (a redis-server has one port: --port)` };
    if (!given.has("--port")) o.port = REDIS_URLS.defaultPort;
  }
  return o;
}

/** A free loopback port (redis-server takes no port 0). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      s.close(() => resolve(typeof a === "object" && a ? a.port : 0));
    });
  });
}

/** `splitlease dev --store redis`: a local redis-server until Ctrl-C. */
async function devRedis(o: { port: number; storeDir?: string; json: boolean }, env: Record<string, string | undefined>): Promise<number> {
  const out = (t: string) => process.stdout.write(t + "\n");
  const err = (t: string) => process.stderr.write(t + "\n");
  const found = findRedisServer(env);
  if ("error" in found) {
    err(`splitlease dev: ${found.error}`);
    return 1;
  }
  let server: LocalRedis;
  try {
    server = await startRedisServer({ bin: found.path, port: o.port === 0 ? await freePort() : o.port, dataDir: o.storeDir });
  } catch (e) {
    const busy = /address already in use/i.test(String(e));
    err(`splitlease dev: ${(e as Error).message}` + (busy ? "\n(the port is taken: pick another with --port, or 0 for any free port)" : ""));
    return 1;
  }
  if (o.json) {
    out(JSON.stringify({ store: "redis", redis: server.url, dataDir: server.dataDir, temporary: server.temporary, version: found.version, bin: found.path, pid: server.proc.pid }));
  } else {
    out(
      [
        `splitlease dev: redis-server ${found.version} (${found.why}: ${found.path}), appendonly yes, appendfsync always`,
        `  STORE_URL=${server.url}    RedisStore (@splitlease/splitlease/redis): Node, Bun and Deno`,
        `  data: ${server.dataDir}${server.temporary ? " (removed on exit; --store-dir DIR keeps it)" : ""}`,
        "Ctrl-C stops it.",
      ].join("\n"),
    );
  }
  const signalled = new Promise<string>((resolve) => {
    for (const sig of ["SIGINT", "SIGTERM"] as const) process.once(sig, () => resolve(sig));
  });
  let why = await Promise.race([signalled, server.exited.then(() => "exit")]);
  if (why === "exit") why = await Promise.race([signalled, new Promise<string>((r) => setTimeout(() => r("exit"), 500))]);
  const how = await server.stop();
  if (why === "exit") {
    err(`splitlease dev: redis-server exited by itself (${how}); its last lines:\n  ${server.logTail().join("\n  ")}`);
    return 1;
  }
  err(`splitlease dev: ${why}: redis-server stopped${server.temporary ? ", its temporary data removed" : ""}`);
  return 0;
}

/** Runs `splitlease dev`; resolves with the exit code once the server stopped. */
export async function dev(argv: readonly string[], env: Record<string, string | undefined>): Promise<number> {
  const out = (t: string) => process.stdout.write(t + "\n");
  const err = (t: string) => process.stderr.write(t + "\n");
  const o = parseDevArgs(argv);
  if ("error" in o) {
    err(`splitlease dev: ${o.error}\n\n${DEV_USAGE}`);
    return 2;
  }
  if (o.help) {
    out(DEV_USAGE);
    return 0;
  }
  if (o.store === "redis") return await devRedis(o, env);
  const found = findNatsServer(thisMachine(env));
  if ("error" in found) {
    err(`splitlease dev: ${found.error}`);
    return 1;
  }
  let server: LocalServer;
  try {
    server = await startNatsServer({ bin: found.path, port: o.port, wsPort: o.wsPort, httpPort: o.httpPort, storeDir: o.storeDir });
  } catch (e) {
    const busy = /address already in use/i.test(String(e));
    err(
      `splitlease dev: ${(e as Error).message}` +
        (busy ? "\n(a port is taken: pick others with --port, --ws-port and --http-port, or 0 for any free port)" : ""),
    );
    return 1;
  }
  if (o.json) {
    out(JSON.stringify({
      nats: server.natsUrl,
      ws: server.wsUrl,
      monitoring: server.monitorUrl,
      storeDir: server.storeDir,
      temporary: server.temporary,
      version: found.version,
      bin: found.path,
      pid: server.proc.pid,
    }));
  } else {
    out(
      [
        `splitlease dev: nats-server ${found.version} (${found.why}: ${found.path}) with JetStream`,
        `  NATS_URL=${server.natsUrl}    the client port: Node, Bun and Deno (the TCP transport, @splitlease/splitlease/nats/tcp)`,
        `  NATS_URL=${server.wsUrl}      WebSocket: every platform, edge included`,
        `  monitoring: ${server.monitorUrl}`,
        `  JetStream data: ${server.storeDir}${server.temporary ? " (removed on exit; --store-dir DIR keeps it)" : ""}`,
        "Ctrl-C stops it.",
      ].join("\n"),
    );
  }
  const signalled = new Promise<string>((resolve) => {
    for (const sig of ["SIGINT", "SIGTERM"] as const) process.once(sig, () => resolve(sig));
  });
  let why = await Promise.race([signalled, server.exited.then(() => "exit")]);
  // Ctrl-C in a terminal signals the server too, which may exit before our own handler runs.
  if (why === "exit") why = await Promise.race([signalled, new Promise<string>((r) => setTimeout(() => r("exit"), 500))]);
  const how = await server.stop();
  if (why === "exit") {
    err(`splitlease dev: nats-server exited by itself (${how}); its last lines:\n  ${server.logTail().join("\n  ")}`);
    return 1;
  }
  err(`splitlease dev: ${why}: nats-server stopped${server.temporary ? ", its temporary data removed" : ""}`);
  return 0;
}
