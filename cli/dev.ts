/**
 * `splitlease dev`: a local nats-server with JetStream, its client port
 * (`nats://`) and a plain WebSocket listener (`ws://`) on loopback, found
 * the way the test command finds one, until Ctrl-C.
 *
 * @module
 */
import process from "node:process";
import { findNatsServer, type LocalServer, startNatsServer, thisMachine } from "./nats_server.ts";

/** `splitlease dev --help`. */
export const DEV_USAGE = `usage: splitlease dev [--port N] [--ws-port N] [--http-port N] [--store-dir DIR] [--json]

Runs a local nats-server for development: JetStream, the client port (nats://) and a plain
WebSocket listener (ws://) on 127.0.0.1, until Ctrl-C. It prints the NATS_URL values to use.

  --port N         client port, for nats:// (default 4222; 0: any free port)
  --ws-port N      WebSocket port, for ws:// (default 8080; 0: any free port)
  --http-port N    monitoring port (default 8222; 0: any free port)
  --store-dir DIR  keep JetStream's data in DIR (default: a temporary directory, removed on exit)
  --json           print the URLs as one JSON line on stdout

The binary: NATS_SERVER_BIN (or NATS_SERVER), else the cached build of the pinned release
(~/.cache/splitlease/nats-server/), else nats-server on PATH, else Debian's /usr/sbin/nats-server.`;

/** The ports `splitlease dev` listens on by default: nats-server's own defaults, and 8080 for WebSocket as in its docs. */
export const DEV_PORTS: { readonly port: number; readonly wsPort: number; readonly httpPort: number } = {
  port: 4222,
  wsPort: 8080,
  httpPort: 8222,
};

/** The parsed flags of `splitlease dev`, or the usage error. */
export function parseDevArgs(argv: readonly string[]):
  | { port: number; wsPort: number; httpPort: number; storeDir?: string; json: boolean; help: boolean }
  | { error: string } {
  const o = { ...DEV_PORTS, storeDir: undefined as string | undefined, json: false, help: false };
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
    if (!(a in ports) && a !== "--store-dir") return { error: `unknown option ${JSON.stringify(a)} of dev` };
    value ??= argv[++i];
    if (value === undefined) return { error: `${a} needs a value` };
    if (a === "--store-dir") {
      o.storeDir = value;
      continue;
    }
    const n = Number(value);
    if (!/^\d+$/.test(value) || n > 65535) return { error: `${a} must be a port number (0-65535), got ${JSON.stringify(value)}` };
    o[ports[a as keyof typeof ports]] = n;
  }
  return o;
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
