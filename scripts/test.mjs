#!/usr/bin/env node
// The one test command (`npm test`): gates, then every suite, then one line
// "N passed, N failed" counting every gate and test case that ran.
// Runs on the machine's Node (>= 18); the suites run on the runtimes that
// npm installed as devDependencies (node_modules/.bin/{deno,bun,node}).
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { compatServer, resolveNatsServer } from "./nats_server_bin.mjs";
import { pgBouncerBin, startPostgres, startRedis } from "./services.mjs";

const root = new URL("..", import.meta.url).pathname;
const bin = (name) => join(root, "node_modules", ".bin", name);
const args = process.argv.slice(2);
const only = args.filter((a) => !a.startsWith("--"));
const quick = args.includes("--quick");

let passed = 0;
let failed = 0;
const failures = [];

function log(msg) {
  process.stdout.write(msg + "\n");
}

function record(name, ok, p = ok ? 1 : 0, f = ok ? 0 : 1) {
  passed += p;
  failed += f;
  if (!ok) failures.push(name);
  log(`${ok ? "PASS" : "FAIL"} ${name} (${p} passed, ${f} failed)`);
}

function run(cmd, argv, opts = {}, echo = (s) => process.stdout.write(s)) {
  return new Promise((resolve) => {
    const child = spawn(cmd, argv, { cwd: root, stdio: ["ignore", "pipe", "pipe"], ...opts });
    let out = "";
    const onData = (d) => {
      const s = d.toString();
      out += s;
      echo(s);
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("close", (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), out }));
  });
}

// --- prerequisites ---------------------------------------------------------
function ensureInstalled() {
  for (const name of ["deno", "bun", "node"]) {
    if (!existsSync(bin(name))) {
      log(`Installing npm dependencies (node_modules/.bin/${name} is missing)...`);
      const r = spawnSync("npm", ["ci"], { cwd: root, stdio: "inherit" });
      if (r.status !== 0) {
        log("npm ci failed: run `npm install` in the repository root and try again.");
        process.exit(1);
      }
      break;
    }
  }
}

// The servers: the pinned current release (or NATS_SERVER_BIN) for every
// suite, Debian's 2.9.10 for the compatibility subset. See nats_server_bin.mjs.
function ensureNatsServers() {
  const cur = resolveNatsServer({ log });
  if (cur.error) {
    log(`nats-server: ${cur.error}`);
    process.exit(1);
  }
  log(`nats-server ${cur.version} at ${cur.path} (${cur.why})`);
  const compat = compatServer({ log });
  if (compat.error) log(`compatibility nats-server: ${compat.error}; the 2.9 compatibility subset will not run`);
  else if (compat.path === cur.path) log(`compatibility nats-server: the same binary (${compat.version})`);
  else log(`compatibility nats-server ${compat.version} at ${compat.path} (${compat.why})`);
  return { current: cur, compat: compat.error || compat.path === cur.path ? undefined : compat };
}

// The browser test drives Debian's chromium; without it (and without root to
// install it) that one test skips, saying so.
function ensureChromium() {
  const find = () => ["/usr/bin/chromium", "/usr/lib/chromium/chromium"].find((p) => existsSync(p));
  if (find()) return;
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  if (!isRoot) {
    log("chromium is missing and this is not root: the fleet page browser test will skip (apt-get install -y chromium)");
    return;
  }
  log("chromium is missing; installing it with apt-get (Debian package chromium) for the fleet page browser test...");
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  let r = spawnSync("apt-get", ["install", "-y", "chromium"], { stdio: "inherit", env });
  if (r.status !== 0) {
    spawnSync("apt-get", ["update"], { stdio: "inherit", env });
    r = spawnSync("apt-get", ["install", "-y", "chromium"], { stdio: "inherit", env });
  }
  if (!find()) log("Installing chromium failed: the fleet page browser test will skip");
}

// --- gates -----------------------------------------------------------------
function webOnlyConfig() {
  // Same import map as deno.json, but a lib with no Deno namespace: src/ must
  // type-check against Web standards alone.
  const cfg = JSON.parse(readFileSync(join(root, "deno.json"), "utf8"));
  const path = join(root, ".web-only.deno.json");
  writeFileSync(
    path,
    JSON.stringify({
      imports: cfg.imports,
      nodeModulesDir: cfg.nodeModulesDir,
      compilerOptions: { strict: true, lib: ["esnext", "dom", "dom.iterable", "dom.asynciterable"] },
    }),
  );
  return path;
}

function grepGate() {
  const bad = [];
  const walk = (dir) => {
    for (const ent of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, ent.name);
      if (ent.isDirectory()) walk(p);
      else if (ent.name.endsWith(".ts")) {
        const lines = readFileSync(p, "utf8").split("\n");
        lines.forEach((line, i) => {
          if (/\b(Deno|Bun|process)\.|["']node:/.test(line)) bad.push(`${p.slice(root.length)}:${i + 1}: ${line.trim()}`);
        });
      }
    }
  };
  walk(join(root, "src"));
  return bad;
}

/** The package's entry files at the root (mod.ts, nats.ts, store.ts, ...), from deno.json's exports. */
function rootEntries() {
  const cfg = JSON.parse(readFileSync(join(root, "deno.json"), "utf8"));
  return Object.values(cfg.exports).map((p) => p.replace(/^\.\//, "")).filter((p) => !p.includes("/"));
}

function srcFiles(dir) {
  const out = [];
  const walk = (d) => {
    for (const ent of readdirSync(join(root, d), { withFileTypes: true })) {
      const p = join(d, ent.name);
      if (ent.isDirectory()) walk(p);
      else if (ent.name.endsWith(".ts")) out.push(p);
    }
  };
  if (existsSync(join(root, dir))) walk(dir);
  return out;
}

// Parses Deno's summary ("ok | 12 passed (3 steps) | 0 failed") into counts.
function denoCounts(out) {
  const m = [...out.matchAll(/(?:ok|FAILED) \| (\d+) passed(?: \(\d+ steps?\))? \| (\d+) failed/g)].pop();
  return m ? { p: Number(m[1]), f: Number(m[2]) } : undefined;
}

// Suites run TEST_JOBS at a time (default 2): most of a suite's wall time is
// waiting (leases running out, servers restarting, processes starting), so
// two at once take the run from about 23 minutes to under 15 on this
// 2-core machine. Every suite starts its own servers on free ports and its
// own jobs, and each is written to hold with other work beside it. A suite
// running beside another prints its output in one block when it ends;
// TEST_JOBS=1 runs them one by one, streaming.
const JOBS = Math.max(1, Number(process.env.TEST_JOBS ?? 2) || 1);
const running = new Set();
async function denoSuite(name, paths, extra = [], server = servers.current) {
  const files = paths.flatMap((p) => (p.endsWith(".ts") ? [p] : srcFiles(p).filter((f) => f.endsWith("_test.ts"))));
  if (files.length === 0) return;
  if (only.length && !only.some((o) => name.includes(o) || files.some((f) => f.includes(o)))) return;
  for (const [id, ensure] of Object.entries(SERVICES)) {
    if (files.some((f) => f.startsWith(`tests/${id}/`) || (EXTRA_USERS[id] ?? []).some((d) => f.startsWith(d)))) await ensure();
  }
  while (running.size >= JOBS) await Promise.race(running);
  const p = runSuite(name, files, extra, server).finally(() => running.delete(p));
  running.add(p);
}
/** Waits for every suite still running. */
async function suitesDone() {
  while (running.size) await Promise.race(running);
}
async function runSuite(name, files, extra, server) {
  const alone = JOBS === 1;
  let buffered = "";
  const echo = alone ? (s) => process.stdout.write(s) : (s) => void (buffered += s);
  if (alone) log(`\n=== ${name} ===`);
  else log(`(started: ${name})`);
  const t0 = Date.now();
  const r = await run(bin("deno"), ["test", "-A", "--no-check", ...extra, ...files], {
    env: {
      ...process.env,
      NATS_SERVER: server.path,
      NATS_SERVER_VERSION: server.version,
      ...(servers.compat ? { NATS_SERVER_COMPAT: servers.compat.path } : {}),
      ...services,
      NO_COLOR: "1",
    },
  }, echo);
  if (!alone) process.stdout.write(`\n=== ${name} ===\n${buffered}`);
  const c = denoCounts(r.out);
  // The suite's wall time, so the budget (15 minutes for the whole run) shows where it goes.
  const took = `${((Date.now() - t0) / 1000).toFixed(0)} s`;
  if (!c) record(`${name} (runner did not report; ${took})`, false);
  else record(`${name} [${took}]`, r.code === 0 && c.f === 0, c.p, c.f > 0 ? c.f : r.code === 0 ? 0 : 1);
  if (!c || c.f > 0 || r.code !== 0) errorsOf.push({ name, errors: denoErrors(r.out) });
}

// Deno's ERRORS section of a failed run (what failed and why), shortened: the
// run repeats it at its very end, where a CI log that keeps only its last
// lines still shows it.
const errorsOf = [];
function denoErrors(out) {
  const from = out.lastIndexOf(" ERRORS ");
  const to = out.lastIndexOf(" FAILURES ");
  const text = from >= 0 ? out.slice(from + 8, to > from ? to : undefined).trim() : out.trim().split("\n").slice(-30).join("\n");
  return text.length > 4000 ? text.slice(0, 4000) + "\n[…]" : text;
}

// --- main ------------------------------------------------------------------
ensureInstalled();
const servers = ensureNatsServers();
const started = Date.now();

// Services the suites need, started here on free ports and stopped at the end,
// also on failure or interruption. PG_URL set by the caller is used as is.
const services = {};
const stops = [];
function stopServicesSync() {
  for (const s of stops.splice(0)) s.killSync();
}
process.on("exit", stopServicesSync);
for (const sig of ["SIGINT", "SIGTERM"]) {
  process.once(sig, () => {
    log(`\n${sig}: stopping the services this run started`);
    stopServicesSync();
    process.exit(130);
  });
}
// The backends of the store URL registry (src/store/store_urls.ts), read from it: their ids
// name their test folders (tests/<id>/) and their services below.
function registryBackends() {
  const code = "import { STORE_URL_KINDS } from './src/store/store_urls.ts'; console.log(JSON.stringify(STORE_URL_KINDS.map((k) => ({ id: k.id, name: k.name }))));";
  const r = spawnSync(bin("deno"), ["eval", code], { cwd: root, encoding: "utf8" });
  if (r.status !== 0) {
    log(`Reading the store URL registry failed: ${r.stderr.trim()}`);
    process.exit(1);
  }
  return JSON.parse(r.stdout);
}
const BACKENDS = registryBackends();
// A backend's suites (tests/<id>/) need its server, started here before the first of them that
// runs (a full run starts them up front, so that a missing server is said before anything else
// runs). These folders outside tests/<id>/ need it too.
const EXTRA_USERS = { postgres: ["tests/cluster", "tests/examples", "tests/ops", "tests/redis/faults_test.ts"] };
async function ensurePg() {
  if (services.PG_URL) return;
  const pg = await startPostgres({ log });
  if (pg.error) {
    log(`PostgreSQL: ${pg.error}`);
    process.exit(1);
  }
  log(`PostgreSQL started for this run at ${pg.url}`);
  stops.push(pg);
  services.PG_URL = pg.url;
}
// Redis for its backend's suites: the append-only file fsynced on every write, as the store requires by default.
async function ensureRedis() {
  if (services.REDIS_URL) return;
  const r = await startRedis({ log, appendfsync: "always" });
  if (r.error) {
    log(`Redis: ${r.error}`);
    process.exit(1);
  }
  log(`redis-server started for this run at ${r.url}`);
  stops.push(r);
  services.REDIS_URL = r.url;
}
/** The services the test command starts, by registry id (a backend whose tests start their own servers has none). */
const SERVICES = { postgres: ensurePg, redis: ensureRedis };
for (const id of Object.keys(SERVICES)) if (!BACKENDS.some((b) => b.id === id)) throw new Error(`scripts/test.mjs starts a service for "${id}", which the store URL registry does not name`);
if (process.env.PG_URL) services.PG_URL = process.env.PG_URL;
else if (!only.length) await ensurePg();
if (process.env.REDIS_URL) services.REDIS_URL = process.env.REDIS_URL;
else if (!only.length) await ensureRedis();

if (!only.length) {
  log("=== type check ===");
  const all = [...rootEntries(), "cli.ts", ...srcFiles("cli"), ...srcFiles("adapters"), ...srcFiles("tests"), ...srcFiles("examples"), ...srcFiles("scripts")]
    .filter((f) => existsSync(join(root, f)));
  const tc = await run(bin("deno"), ["check", ...all]);
  record("type check", tc.code === 0);

  log("\n=== web-only boundary ===");
  const cfg = webOnlyConfig();
  const webFiles = [...rootEntries(), ...srcFiles("src")].filter((f) => existsSync(join(root, f)));
  const wc = await run(bin("deno"), ["check", "--config", cfg, ...webFiles]);
  rmSync(cfg, { force: true });
  record("web-only type check of mod.ts and src/", wc.code === 0);
  const bad = grepGate();
  for (const b of bad) log("  runtime API in src/: " + b);
  record("grep gate: no Deno./Bun./process./node: in src/", bad.length === 0);

  log("\n=== test hygiene ===");
  // Setup and teardown are not tests: a "stop the server" test is a pass that cannot fail.
  const teardown = [];
  for (const f of srcFiles("tests")) {
    const text = readFileSync(join(root, f), "utf8");
    for (const m of text.matchAll(/Deno\.test\(\s*(?:\{\s*name:\s*)?["'`]([^"'`]*)["'`]/g)) {
      if (/\b(stop|start|kill|tear ?down|set ?up|clean ?up)\b.*\b(server|servers|cluster|process)\b|\b(teardown|setup|cleanup)\b/i.test(m[1])) teardown.push(`${f}: ${m[1]}`);
    }
  }
  for (const t of teardown) log("  setup or teardown registered as a test: " + t);
  record("no setup or teardown counted as a test", teardown.length === 0);

  log("\n=== lint ===");
  const lint = await run(bin("deno"), ["lint", ...rootEntries(), "cli.ts", "cli", "src", "adapters"]);
  record("deno lint of the package", lint.code === 0);

  log("\n=== publish dry run ===");
  const pub = await run(bin("deno"), ["publish", "--dry-run", "--allow-dirty"]);
  record("deno publish --dry-run", pub.code === 0);

  log("\n=== doc lint ===");
  const entries = [...rootEntries(), ...srcFiles("adapters")];
  const doc = await run(bin("deno"), ["doc", "--lint", ...entries]);
  record("deno doc --lint", doc.code === 0);
  let examplesOk = true;
  for (const entry of entries) {
    const ex = await run(process.execPath, [join(root, "scripts/check_doc_examples.mjs"), entry]);
    examplesOk &&= ex.code === 0;
  }
  record("every export has a doc example", examplesOk);
  const docCheck = await run(bin("deno"), ["check", "--doc-only", ...entries, ...srcFiles("src")]);
  record("doc examples type-check", docCheck.code === 0);
}

// dist/ and the Node fixture, built once before the suites: they run side by
// side, and a build inside one (npm pack's prepack, a fixture's "build once
// per process") would empty dist/ under another. The suites are told
// (SPLITLEASE_DIST_READY) and build nothing.
{
  log("\n=== build (dist/ and the Node fixture, once for every suite) ===");
  const b = await run(process.execPath, [join(root, "scripts/build.mjs")]);
  const fx = b.code === 0
    ? await run(bin("esbuild"), ["tests/runtime/fixtures/node_main.ts", "--bundle", "--platform=node", "--format=esm", "--packages=external", "--log-level=warning", "--outfile=dist/fixtures/node_main.mjs"])
    : b;
  record("build of dist/ and the Node fixture", b.code === 0 && fx.code === 0);
  if (b.code === 0 && fx.code === 0) services.SPLITLEASE_DIST_READY = "1";
}

// The longest suites first (their wall times in a run of the whole suite: operator 240 s,
// the backends about 145 s each, cluster 137 s, runtime 123 s), so that two lanes end together.
const OPS_SUITE = "operator tests (CLI on nats-server, fleet page in Chromium)";
if (!only.length || only.some((o) => OPS_SUITE.includes(o) || o.includes("tests/ops"))) ensureChromium();
await denoSuite(OPS_SUITE, ["tests/ops"]);
// Every backend of the store URL registry runs the kit's suites from its own folder
// (tests/<id>/backend_test.ts: one backendSuites() call; docs/WRITING_A_BACKEND.md).
for (const b of BACKENDS) {
  await denoSuite(`${b.name} backend: conformance, differential, coordinator scenarios, outages, bad input`, [`tests/${b.id}/backend_test.ts`]);
}
await denoSuite(`cluster tests (3-node nats-server ${servers.current.version}, R3 buckets, kills, freezes, partitions)`, ["tests/cluster"]);
await denoSuite("runtime tests", ["tests/runtime"]);
await denoSuite("unit tests", ["tests/unit"]);
await denoSuite("store tests (MemoryStore and nats-server)", ["tests/store"]);
await denoSuite(
  "TCP transport (nats://): store conformance, outages, wrong listeners, a Deno + Bun + Node fleet through a server crash",
  ["tests/tcp"],
);
await denoSuite("coordinator tests", ["tests/coordinator"]);
await denoSuite("PostgreSQL store tests (commit order, resume, least privilege, refused connections, SQL repairs)", [
  "tests/postgres/store_test.ts",
  "tests/postgres/connect_test.ts",
  "tests/postgres/repair_test.ts",
]);
await denoSuite("PostgreSQL fleets, faults, exactly-once and the CLI (Deno + Bun + Node; SIGKILL, SIGSTOP, terminated connections, statement timeouts)", [
  "tests/postgres/fleet_test.ts",
  "tests/postgres/faults_test.ts",
  "tests/postgres/exactly_once_test.ts",
  "tests/postgres/cli_test.ts",
  "tests/postgres/lifecycle_cli_test.ts",
]);
await denoSuite(
  "Redis durability, faults and the CLI (weak persistence refused, WAIT on a replica, kill -9 with appendfsync always; a Deno + Bun + Node fleet through SIGKILL, CLIENT KILL, SIGSTOP and restarts from the AOF; the operator session on redis://)",
  ["tests/redis/durability_test.ts", "tests/redis/half_open_test.ts", "tests/redis/faults_test.ts", "tests/redis/cli_test.ts"],
);
// PostgreSQL as deployed: a TLS-only server of its own and Debian's PgBouncer in front of it,
// installed here when missing (as root; without it the PgBouncer cases are ignored, saying so).
const DEPLOYED_SUITE = "PostgreSQL as deployed (TLS with sslmode=verify-full, PgBouncer in transaction mode)";
const DEPLOYED_FILES = ["tests/postgres/deployed_test.ts"];
if (!only.length || only.some((o) => DEPLOYED_SUITE.includes(o) || DEPLOYED_FILES.some((f) => f.includes(o)))) {
  const bouncer = pgBouncerBin({ log });
  if (bouncer.error) log(`${bouncer.error}: the PgBouncer cases of the deployed PostgreSQL suite will be ignored`);
  else services.PGBOUNCER_BIN = bouncer.path;
}
await denoSuite(DEPLOYED_SUITE, DEPLOYED_FILES);
if (!quick) await denoSuite("simulation", ["tests/sim"]);
await denoSuite("example tests", ["tests/examples"]);
await denoSuite("deployment kit tests (manifests, images, nats-server config)", ["tests/deploy"]);
await denoSuite("package tests (npm pack, URL import)", ["tests/package"]);
await denoSuite("serverless platform tests (workerd, Lambda, Deno Deploy)", ["tests/serverless"]);
if (servers.compat) {
  const v = servers.compat.version;
  await denoSuite(
    `compatibility on nats-server ${v}: store conformance and outages over WebSocket and TCP`,
    ["tests/store/conformance_test.ts", "tests/store/outage_test.ts", "tests/tcp/conformance_tcp_test.ts", "tests/tcp/outage_tcp_test.ts"],
    [],
    servers.compat,
  );
  await denoSuite(`compatibility on nats-server ${v}: a Deno + Bun + Node fleet`, ["tests/runtime/fleet_test.ts"], ["--filter", "fleet: one Deno"], servers.compat);
}

await suitesDone();
log(`\nFinished in ${((Date.now() - started) / 1000).toFixed(1)} s on nats-server ${servers.current.version}${servers.compat ? ` (compatibility subset on ${servers.compat.version})` : ""}`);
for (const s of stops.splice(0)) await s.stop();
for (const { name, errors } of errorsOf) log(`\n--- why ${name} failed (its errors, repeated) ---\n${errors}`);
if (failures.length) log("\nFailed: " + failures.join("; "));
log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
