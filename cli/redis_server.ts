/**
 * A local redis-server for `splitlease dev --store redis`: found on
 * `REDIS_SERVER_BIN`, `PATH` or Debian's package, started on loopback with
 * the append-only file fsynced on every write (what the store requires by
 * default) in a temporary directory, and stopped with its directory removed.
 *
 * @module
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";

/** `redis-server --version` of a binary ("7.0.15"), undefined when it does not run. */
export function redisVersionOf(path: string): string | undefined {
  const r = spawnSync(path, ["--version"], { encoding: "utf8" });
  const m = /v=(\d+\.\d+\.\d+)/.exec(r.stdout ?? "");
  return r.status === 0 && m ? m[1] : undefined;
}

/** What to install when no redis-server is found. */
export const REDIS_INSTALL_HINT = [
  "apt-get install redis-server   (Debian and Ubuntu)",
  "brew install redis   (macOS)",
  "or any Redis 5+ build, then REDIS_SERVER_BIN=/path/to/redis-server",
];

/** The redis-server to run: `REDIS_SERVER_BIN`, then `PATH`, then Debian's package; `{ error }` says where it looked. */
export function findRedisServer(env: Record<string, string | undefined>): { path: string; version: string; why: string } | { error: string } {
  const given = env.REDIS_SERVER_BIN;
  if (given) {
    const version = existsSync(given) ? redisVersionOf(given) : undefined;
    return version ? { path: given, version, why: "REDIS_SERVER_BIN is set" } : { error: `REDIS_SERVER_BIN=${given} is not a runnable redis-server` };
  }
  const candidates: [string, string][] = [];
  for (const dir of (env.PATH ?? "").split(delimiter)) if (dir) candidates.push([join(dir, "redis-server"), "found on PATH"]);
  candidates.push(["/usr/bin/redis-server", "Debian's package"]);
  for (const [path, why] of candidates) {
    if (!existsSync(path)) continue;
    const version = redisVersionOf(path);
    if (version) return { path, version, why };
  }
  return { error: `no redis-server found (looked at REDIS_SERVER_BIN, PATH and /usr/bin). Install one:\n  ${REDIS_INSTALL_HINT.join("\n  ")}` };
}

/** A running local redis-server. */
export interface LocalRedis {
  /** `redis://` URL. */
  url: string;
  /** Its data directory (the AOF). */
  dataDir: string;
  /** Whether `dataDir` is temporary (removed by `stop`). */
  temporary: boolean;
  proc: ChildProcess;
  /** Resolves once the process has exited. */
  exited: Promise<string>;
  /** The server's last log lines. */
  logTail(): string[];
  /** SIGKILLs it and removes a temporary directory at once (an exit handler cannot wait). */
  killSync(): void;
  /** Stops it with SIGTERM (it flushes its AOF), SIGKILL after 5 s; removes a temporary directory. */
  stop(): Promise<string>;
}

/** Whether something accepts TCP connections on `port`. */
function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const c = connect(port, "127.0.0.1", () => {
      c.end();
      resolve(true);
    });
    c.on("error", () => resolve(false));
  });
}

/**
 * Starts redis-server on 127.0.0.1:`port` (0: a free one the server picks is
 * not possible, so the caller gives one) with `appendonly yes` and
 * `appendfsync always`, and resolves once it accepts connections.
 */
export async function startRedisServer(o: { bin: string; port: number; dataDir?: string }): Promise<LocalRedis> {
  const tmp = mkdtempSync(join(tmpdir(), "splitlease-dev-redis-"));
  const dataDir = o.dataDir ?? tmp;
  const proc = spawn(o.bin, [
    "--port", String(o.port), "--bind", "127.0.0.1", "--dir", dataDir,
    "--appendonly", "yes", "--appendfsync", "always", "--save", "",
  ], { stdio: ["ignore", "pipe", "pipe"] });
  const log: string[] = [];
  for (const s of [proc.stdout!, proc.stderr!]) {
    s.on("data", (d: Uint8Array) => {
      for (const l of new TextDecoder().decode(d).split("\n")) if (l) log.push(l);
      while (log.length > 50) log.shift();
    });
  }
  const exited = new Promise<string>((resolve) => proc.on("exit", (code, signal) => resolve(code === null ? `signal ${signal}` : `exit code ${code}`)));
  let running = true;
  void exited.then(() => (running = false));
  const cleanup = () => rmSync(tmp, { recursive: true, force: true });
  const stop = async () => {
    if (running) {
      proc.kill("SIGTERM");
      const t = setTimeout(() => proc.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(t);
    }
    cleanup();
    return await exited;
  };
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (!running) {
      await stop();
      throw new Error(`redis-server (${o.bin}) exited while starting:\n  ${log.slice(-8).join("\n  ")}`);
    }
    if (await answers(o.port)) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`redis-server (${o.bin}) did not accept connections within 15 s`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  return {
    url: `redis://127.0.0.1:${o.port}`,
    dataDir,
    temporary: o.dataDir === undefined,
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
