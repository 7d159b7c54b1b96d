/**
 * A local nats-server for development (`splitlease dev`, the demo's
 * `--nats`): finds the binary the way the test command does and runs it with
 * JetStream, the client port and a plain WebSocket listener on loopback.
 * Node APIs only, so it runs on Node, Bun and Deno.
 *
 * @module
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { delimiter, join } from "node:path";

/** The nats-server release the project pins and tests (scripts/nats_server_bin.mjs builds it into the cache). */
export const PINNED_NATS_VERSION = "v2.15.2";

/** A nats-server binary found, and why it was chosen. */
export interface FoundServer {
  path: string;
  /** `nats-server --version`, e.g. "2.15.2". */
  version: string;
  why: string;
}

/** How {@linkcode findNatsServer} looks at the machine (injected by tests). */
export interface Machine {
  env: Record<string, string | undefined>;
  /** Whether a file exists at `path`. */
  exists(path: string): boolean;
  /** The version a binary reports, or undefined when it does not run. */
  versionOf(path: string): string | undefined;
  home: string;
}

/** `nats-server --version` of a binary ("2.15.2"), undefined when it does not run. */
export function versionOf(path: string): string | undefined {
  const r = spawnSync(path, ["--version"], { encoding: "utf8" });
  const m = /v?(\d+\.\d+\.\d+\S*)/.exec(`${r.stdout ?? ""}${r.stderr ?? ""}`);
  return r.status === 0 && m ? m[1] : undefined;
}

/** This machine. */
export function thisMachine(env: Record<string, string | undefined>): Machine {
  return { env, exists: existsSync, versionOf, home: homedir() };
}

/** Where the test command caches the pinned build. */
export function pinnedCachePath(m: Pick<Machine, "env" | "home">): string {
  return join(m.env.XDG_CACHE_HOME || join(m.home, ".cache"), "splitlease", "nats-server", PINNED_NATS_VERSION, "nats-server");
}

/** What to install when no nats-server is found: one line per way. */
export const INSTALL_HINT = [
  `go install github.com/nats-io/nats-server/v2@${PINNED_NATS_VERSION}   (Go 1.24+; the binary lands in $(go env GOPATH)/bin: put it on PATH or set NATS_SERVER_BIN)`,
  "apt-get install nats-server   (Debian and Ubuntu; 2.9.x: fine for one local server)",
  "or a release archive from github.com/nats-io/nats-server/releases, then NATS_SERVER_BIN=/path/to/nats-server",
];

/**
 * The nats-server to run, in the order the test command uses: the
 * `NATS_SERVER_BIN` variable (`NATS_SERVER`: its older alias), the cached
 * build of the pinned release (~/.cache/splitlease/nats-server/), `PATH`,
 * then Debian's package. Never builds or installs anything: `{ error }` says
 * where it looked and what to install.
 */
export function findNatsServer(m: Machine): FoundServer | { error: string } {
  for (const name of ["NATS_SERVER_BIN", "NATS_SERVER"]) {
    const given = m.env[name];
    if (!given) continue;
    const version = m.exists(given) ? m.versionOf(given) : undefined;
    if (!version) return { error: `${name}=${given} is not a runnable nats-server` };
    return { path: given, version, why: `${name} is set` };
  }
  const candidates: [string, string][] = [[pinnedCachePath(m), `the cached build of the pinned ${PINNED_NATS_VERSION}`]];
  for (const dir of (m.env.PATH ?? "").split(delimiter)) if (dir) candidates.push([join(dir, "nats-server"), "found on PATH"]);
  for (const p of ["/usr/sbin/nats-server", "/usr/bin/nats-server"]) candidates.push([p, "Debian's package"]);
  for (const [path, why] of candidates) {
    if (!m.exists(path)) continue;
    const version = m.versionOf(path);
    if (version) return { path, version, why };
  }
  return {
    error: `no nats-server found (looked at NATS_SERVER_BIN, ${pinnedCachePath(m)}, PATH and /usr/sbin). Install one:\n  ` +
      INSTALL_HINT.join("\n  "),
  };
}

/** Options of {@linkcode startNatsServer}. */
export interface LocalServerOptions {
  /** The binary. */
  bin: string;
  /** Address every listener binds (default 127.0.0.1). */
  host?: string;
  /** Client port (0: any free one). */
  port: number;
  /** WebSocket port (0: any free one). */
  wsPort: number;
  /** Monitoring port (0: any free one). */
  httpPort: number;
  /** JetStream's directory (default: a temporary one, removed by `stop`). */
  storeDir?: string;
  /** Where the server's log goes, line by line (default: kept for errors only). */
  onLog?: (line: string) => void;
}

/** A running local server. */
export interface LocalServer {
  /** `nats://` URL of the client port. */
  natsUrl: string;
  /** `ws://` URL of the WebSocket listener. */
  wsUrl: string;
  /** `http://` URL of the monitoring port. */
  monitorUrl: string;
  /** JetStream's directory. */
  storeDir: string;
  /** Whether `storeDir` is a temporary directory that `stop` removes. */
  temporary: boolean;
  /** The config file the server runs. */
  config: string;
  proc: ChildProcess;
  /** Resolves once the process has exited: "exit code N" or "signal S". */
  exited: Promise<string>;
  /** The server's last log lines. */
  logTail(): string[];
  /** SIGKILLs it and removes its files at once (for an exit handler, which cannot wait). */
  killSync(): void;
  /** Stops it with SIGINT (a clean exit), SIGKILL after 5 s; removes a temporary store. */
  stop(): Promise<string>;
}

/**
 * Starts nats-server with JetStream, the client port and a plain WebSocket
 * listener, and resolves once JetStream is healthy (or rejects with the
 * server's last log lines).
 */
export async function startNatsServer(o: LocalServerOptions): Promise<LocalServer> {
  const host = o.host ?? "127.0.0.1";
  const dir = mkdtempSync(join(tmpdir(), "splitlease-dev-"));
  const storeDir = o.storeDir ?? join(dir, "jetstream");
  const config = join(dir, "nats-server.conf");
  const port = (p: number) => (p === 0 ? -1 : p);
  writeFileSync(
    config,
    [
      `listen: "${host}:${port(o.port)}"`,
      `http: "${host}:${port(o.httpPort)}"`,
      `jetstream { store_dir: ${JSON.stringify(storeDir)} }`,
      `websocket { listen: "${host}:${port(o.wsPort)}", no_tls: true }`,
      `ports_file_dir: ${JSON.stringify(dir)}`,
    ].join("\n") + "\n",
  );
  const proc = spawn(o.bin, ["-c", config], { stdio: ["ignore", "ignore", "pipe"] });
  const log: string[] = [];
  let partial = "";
  proc.stderr!.on("data", (d: Uint8Array) => {
    const lines = (partial + new TextDecoder().decode(d)).split("\n");
    partial = lines.pop() ?? "";
    for (const l of lines) {
      log.push(l);
      if (log.length > 50) log.shift();
      o.onLog?.(l);
    }
  });
  const exited = new Promise<string>((resolve) =>
    proc.on("exit", (code, signal) => resolve(code === null ? `signal ${signal}` : `exit code ${code}`))
  );
  let running = true;
  void exited.then(() => (running = false));
  const cleanup = () => {
    rmSync(dir, { recursive: true, force: true });
  };
  const stop = async () => {
    if (running) {
      proc.kill("SIGINT");
      const t = setTimeout(() => proc.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(t);
    }
    cleanup();
    return await exited;
  };
  const fail = async (why: string): Promise<never> => {
    await stop();
    throw new Error(`nats-server (${o.bin}) ${why}${log.length ? `:\n  ${log.slice(-8).join("\n  ")}` : ""}`);
  };
  const deadline = Date.now() + 15_000;
  let ports: { nats: string[]; websocket: string[]; monitoring: string[] } | undefined;
  for (;;) {
    if (!running) return await fail("exited while starting");
    if (Date.now() > deadline) return await fail("did not become healthy within 15 s");
    ports ??= readPorts(dir);
    if (ports) {
      try {
        const r = await fetch(`${ports.monitoring[0]}/healthz?js-enabled-only=true`, { signal: AbortSignal.timeout(2000) });
        await r.body?.cancel();
        if (r.status === 200) break;
      } catch { /* starting */ }
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  return {
    natsUrl: ports.nats[0],
    wsUrl: ports.websocket[0],
    monitorUrl: ports.monitoring[0],
    storeDir,
    temporary: o.storeDir === undefined,
    config,
    proc,
    exited,
    stop,
    logTail: () => log.slice(-8),
    killSync: () => {
      if (running) proc.kill("SIGKILL");
      cleanup();
    },
  };
}

/** The listeners' URLs from the server's ports file, once it has written them. */
function readPorts(dir: string): { nats: string[]; websocket: string[]; monitoring: string[] } | undefined {
  const file = readdirSync(dir).find((f) => f.endsWith(".ports"));
  if (!file) return undefined;
  try {
    const p = JSON.parse(readFileSync(join(dir, file), "utf8"));
    return p.nats?.length && p.websocket?.length && p.monitoring?.length ? p : undefined;
  } catch {
    return undefined; // being written
  }
}
