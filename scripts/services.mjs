// Services the suite and the benches start for themselves: nothing runs on
// these machines when a session or CI begins. Each is installed from Debian's
// packages when missing (as root), started on a free loopback port in a temp
// directory, and stopped — with its directory removed — by `stop()`, which the
// callers run on exit, on SIGINT/SIGTERM and on an uncaught error.
import { spawn, spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const isRoot = () => typeof process.getuid === "function" && process.getuid() === 0;

/** A free TCP port on 127.0.0.1 (bound, then released). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function aptInstall(pkg, log) {
  if (!isRoot()) return false;
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  log(`${pkg} is missing; installing Debian's ${pkg} with apt-get...`);
  let r = spawnSync("apt-get", ["install", "-y", pkg], { stdio: "inherit", env });
  if (r.status !== 0) {
    spawnSync("apt-get", ["update"], { stdio: "inherit", env });
    r = spawnSync("apt-get", ["install", "-y", pkg], { stdio: "inherit", env });
  }
  return r.status === 0;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Runs `cmd` as `user` when root (PostgreSQL refuses to run as root). setpriv
 * execs in place, so the child we hold is the server itself and a kill
 * reaches it (runuser would fork and leave it behind).
 */
function asUser(user, cmd, args) {
  return isRoot() ? ["setpriv", ["--reuid", user, "--regid", user, "--init-groups", "--", cmd, ...args]] : [cmd, args];
}

function pgBinDir() {
  const base = "/usr/lib/postgresql";
  if (!existsSync(base)) return undefined;
  const versions = readdirSync(base).filter((v) => existsSync(join(base, v, "bin", "postgres"))).sort((a, b) => Number(b) - Number(a));
  return versions.length ? join(base, versions[0], "bin") : undefined;
}

/**
 * Starts a throwaway PostgreSQL (trust auth, fsync off, asynchronous commits
 * unless `synchronousCommit` says otherwise) with a database `test`.
 * Resolves `{ url, port, pid, stop, killSync }`, or `{ error }` saying what
 * is missing. `maxConnections` defaults to 200 (the benches' fleets of 100
 * stores need more).
 */
export async function startPostgres({ log = console.log, maxConnections = 200, synchronousCommit = "off" } = {}) {
  let bin = pgBinDir();
  if (!bin && aptInstall("postgresql", log)) bin = pgBinDir();
  if (!bin) return { error: "PostgreSQL is missing (apt-get install -y postgresql)" };
  const dir = mkdtempSync(join(tmpdir(), "splitlease-pg-"));
  const user = "postgres";
  if (isRoot()) chownSync(dir, Number(spawnSync("id", ["-u", user], { encoding: "utf8" }).stdout.trim()), Number(spawnSync("id", ["-g", user], { encoding: "utf8" }).stdout.trim()));
  const data = join(dir, "data");
  const [initCmd, initArgs] = asUser(user, join(bin, "initdb"), ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]);
  const init = spawnSync(initCmd, initArgs, { encoding: "utf8" });
  if (init.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    return { error: `initdb failed: ${(init.stderr || init.stdout).trim().split("\n").slice(-3).join(" ")}` };
  }
  const port = await freePort();
  const [cmd, args] = asUser(user, join(bin, "postgres"), [
    "-D", data, "-p", String(port), "-k", dir, "-c", "listen_addresses=127.0.0.1",
    "-c", "fsync=off", "-c", `synchronous_commit=${synchronousCommit}`, "-c", "full_page_writes=off", "-c", `max_connections=${maxConnections}`,
  ]);
  const proc = spawn(cmd, args, { stdio: ["ignore", "ignore", "pipe"], detached: false });
  let logTail = "";
  proc.stderr.on("data", (d) => (logTail = (logTail + d.toString()).slice(-2000)));
  let exited = false;
  proc.on("exit", () => (exited = true));
  const stop = async () => {
    if (!exited) {
      try { proc.kill("SIGINT"); } catch { /* gone */ } // PostgreSQL's fast shutdown
      for (let i = 0; i < 100 && !exited; i++) await sleep(50);
      if (!exited) proc.kill("SIGKILL");
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const psql = join(bin, "psql");
  for (let i = 0; i < 200; i++) {
    const r = spawnSync(psql, ["-h", "127.0.0.1", "-p", String(port), "-U", "postgres", "-d", "postgres", "-tAc", "create database test"], { encoding: "utf8" });
    if (r.status === 0) return { url: `postgres://postgres@127.0.0.1:${port}/test`, port, pid: proc.pid, stop, killSync: () => killSync(proc, dir) };
    if (exited) break;
    await sleep(100);
  }
  await stop();
  return { error: `PostgreSQL did not start: ${logTail.trim().split("\n").slice(-3).join(" ")}` };
}

/**
 * Debian's PgBouncer for the suite that runs the PostgreSQL store behind it
 * (tests/postgres/deployed_test.ts): `{ path }` of the binary, installed
 * with apt-get when missing (as root; Debian's package does not start its
 * service where policy-rc.d forbids it, as in containers), or `{ error }`.
 * The tests start their own instance on a free port.
 */
export function pgBouncerBin({ log = console.log } = {}) {
  const find = () => ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"].find((p) => existsSync(p));
  let path = find();
  if (!path && aptInstall("pgbouncer", log)) path = find();
  return path ? { path } : { error: "PgBouncer is missing (apt-get install -y pgbouncer)" };
}

/**
 * Starts a throwaway redis-server. By default with no persistence (what
 * BullMQ's benches run on); `appendfsync: "always"` (or `"everysec"`) turns
 * the append-only file on with that fsync policy, which the Redis store
 * requires by default. Resolves `{ url, port, stop }` or `{ error }`.
 *
 * @param {{ log?: (line: string) => void, appendfsync?: "always" | "everysec" }} [options]
 */
export async function startRedis({ log = console.log, appendfsync } = {}) {
  const find = () => ["/usr/bin/redis-server", "/usr/local/bin/redis-server"].find((p) => existsSync(p));
  let bin = find();
  if (!bin && aptInstall("redis-server", log)) bin = find();
  if (!bin) return { error: "redis-server is missing (apt-get install -y redis-server)" };
  const dir = mkdtempSync(join(tmpdir(), "splitlease-redis-"));
  const port = await freePort();
  const persistence = appendfsync ? ["--appendonly", "yes", "--appendfsync", appendfsync] : ["--appendonly", "no"];
  const proc = spawn(bin, ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", ...persistence], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let exited = false;
  proc.on("exit", () => (exited = true));
  const stop = async () => {
    if (!exited) {
      try { proc.kill("SIGTERM"); } catch { /* gone */ }
      for (let i = 0; i < 100 && !exited; i++) await sleep(50);
      if (!exited) proc.kill("SIGKILL");
    }
    rmSync(dir, { recursive: true, force: true });
  };
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise((resolve) => {
      import("node:net").then(({ connect }) => {
        const c = connect(port, "127.0.0.1", () => { c.end(); resolve(true); });
        c.on("error", () => resolve(false));
      });
    });
    if (ok) return { url: `redis://127.0.0.1:${port}`, port, pid: proc.pid, stop, killSync: () => killSync(proc, dir) };
    if (exited) break;
    await sleep(50);
  }
  await stop();
  return { error: "redis-server did not start" };
}

function killSync(proc, dir) {
  try { proc.kill("SIGKILL"); } catch { /* gone */ }
  rmSync(dir, { recursive: true, force: true });
}
