// Which nats-server the suite, the benches and the mutation gate run, and how
// it gets onto the machine. One place, so the three agree:
//
//   1. NATS_SERVER_BIN, if set (an operator's own build or release binary);
//   2. the pinned current release, built once with `go install` into a cache
//      directory the project owns (~/.cache/splitlease/nats-server/<version>)
//      and reused by every later run;
//   3. Debian's nats-server (2.9.10 on Debian 12), installed with apt-get when
//      this is root.
//
// The chosen binary is reported in one line with its version and the reason.
// Debian's build is also the compatibility target: `compatServer()` finds (or
// installs) it for the subset of suites that must keep passing on 2.9.10.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/** The current release the project pins and tests first. */
export const PINNED_VERSION = "v2.15.2";
const MODULE = "github.com/nats-io/nats-server/v2";

const isRoot = () => typeof process.getuid === "function" && process.getuid() === 0;

/** The cache directory that holds built servers (XDG_CACHE_HOME honoured). */
export function cacheDir() {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), ".cache");
  return join(base, "splitlease", "nats-server");
}

/** `nats-server --version` of a binary, e.g. "2.15.2"; undefined when it does not run. */
export function versionOf(path) {
  const r = spawnSync(path, ["--version"], { encoding: "utf8" });
  const m = /v?(\d+\.\d+\.\d+\S*)/.exec(`${r.stdout ?? ""}${r.stderr ?? ""}`);
  return r.status === 0 && m ? m[1] : undefined;
}

function debianPath() {
  for (const p of ["/usr/sbin/nats-server", "/usr/bin/nats-server"]) if (existsSync(p)) return p;
  return undefined;
}

function aptInstall(pkg, log) {
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  log(`Installing Debian's ${pkg} with apt-get...`);
  let r = spawnSync("apt-get", ["install", "-y", pkg], { stdio: "inherit", env });
  if (r.status !== 0) {
    spawnSync("apt-get", ["update"], { stdio: "inherit", env });
    r = spawnSync("apt-get", ["install", "-y", pkg], { stdio: "inherit", env });
  }
  return r.status === 0;
}

/**
 * Builds the pinned release with `go install` into the cache (once). The build
 * goes to a scratch directory first and is renamed into place, so an
 * interrupted build never leaves a half-written binary that later runs trust.
 */
function buildPinned(log) {
  const dir = join(cacheDir(), PINNED_VERSION);
  const target = join(dir, "nats-server");
  if (existsSync(target) && versionOf(target)) return { path: target, built: false };
  const go = spawnSync("sh", ["-c", "command -v go || ls /usr/local/go/bin/go"], { encoding: "utf8" });
  const goBin = go.status === 0 ? go.stdout.trim().split("\n")[0] : undefined;
  if (!goBin) return { error: "Go is not installed (https://go.dev/dl), so the pinned release cannot be built" };
  const scratch = `${dir}.building-${process.pid}`;
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true });
  log(`Building nats-server ${PINNED_VERSION} with go install (first run only; about 1-3 minutes on 2 cores)...`);
  const t0 = Date.now();
  const r = spawnSync(goBin, ["install", `${MODULE}@${PINNED_VERSION}`], {
    stdio: "inherit",
    env: { ...process.env, GOBIN: scratch },
  });
  const built = join(scratch, "nats-server");
  if (r.status !== 0 || !existsSync(built)) {
    rmSync(scratch, { recursive: true, force: true });
    return { error: `go install ${MODULE}@${PINNED_VERSION} failed (exit ${r.status})` };
  }
  mkdirSync(dir, { recursive: true });
  renameSync(built, target);
  rmSync(scratch, { recursive: true, force: true });
  log(`Built nats-server ${PINNED_VERSION} in ${((Date.now() - t0) / 1000).toFixed(0)} s; cached at ${target}`);
  return { path: target, built: true };
}

/**
 * The server to run, as `{ path, version, why }`, or `{ error }` saying exactly
 * what is missing. `install` allows building the pinned release and apt-get.
 */
export function resolveNatsServer({ install = true, log = console.log } = {}) {
  const env = process.env.NATS_SERVER_BIN;
  if (env) {
    const version = existsSync(env) ? versionOf(env) : undefined;
    if (!version) return { error: `NATS_SERVER_BIN=${env} is not a runnable nats-server` };
    return { path: env, version, why: "NATS_SERVER_BIN is set" };
  }
  const cached = join(cacheDir(), PINNED_VERSION, "nats-server");
  if (existsSync(cached) && versionOf(cached)) {
    return { path: cached, version: versionOf(cached), why: `the cached build of the pinned ${PINNED_VERSION}` };
  }
  let reason = "";
  if (install) {
    const b = buildPinned(log);
    if (b.path) return { path: b.path, version: versionOf(b.path), why: `the pinned ${PINNED_VERSION}, built just now` };
    reason = b.error;
  } else reason = `no cached build of ${PINNED_VERSION} (npm test builds it)`;
  const deb = compatServer({ install, log });
  if (deb.path) return { ...deb, why: `Debian's package, because ${reason}` };
  return { error: `no nats-server: ${reason}, and ${deb.error}` };
}

/** Debian's nats-server (the 2.9.10 compatibility target), installed with apt-get when root. */
export function compatServer({ install = true, log = console.log } = {}) {
  let path = debianPath();
  if (!path && install && isRoot()) {
    aptInstall("nats-server", log);
    path = debianPath();
  }
  if (!path) {
    return {
      error: isRoot() ? "apt-get install -y nats-server failed" : "Debian's nats-server is missing (sudo apt-get install -y nats-server)",
    };
  }
  const version = versionOf(path);
  return version ? { path, version, why: "Debian's package" } : { error: `${path} does not run` };
}
