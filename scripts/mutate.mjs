#!/usr/bin/env node
// `npm run mutate`: the mutation gate over the protocol and store code.
//
// Applies each curated safety mutant of scripts/mutants.mjs, one at a time,
// to a scratch copy of the repository (the working tree is never touched),
// runs the suites that should catch it and prints its fate: killed (by
// which suite and test) or survived. Ends with "N killed, N survived"; the
// exit code is non-zero when any mutant survived or no longer matches.
//
//   npm run mutate                      every mutant (a baseline run of the suites first)
//   npm run mutate -- --check           only check that every mutant's search text matches exactly once (fast)
//   npm run mutate -- --list            list the mutants
//   npm run mutate -- NAME...           only the mutants whose name contains one of NAME
//   npm run mutate -- --all             run every listed suite of a mutant, not only up to the first kill
//   npm run mutate -- --suite=coordinator   run only this suite for each mutant (to show which tests kill what)
//   npm run mutate -- --suite=sim --files=tests/coordinator/safety_test.ts   that suite's settings, these test files (a proof that they kill)
//   npm run mutate -- --no-baseline     skip the baseline run of the unmutated code
//   npm run mutate -- --keep            keep the scratch copy (its path is printed) with each run's log
//
// Runs on the machine's Node (>= 18); the suites run on node_modules/.bin/deno.
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { mutants } from "./mutants.mjs";
import { compatServer, resolveNatsServer } from "./nats_server_bin.mjs";

/** Debian's 2.9.10 for the suites that must run on it (installed with apt-get when missing, as root). */
function compatNatsServer() {
  const c = compatServer({ log: (s) => process.stdout.write(s + "\n") });
  if (c.error) throw new Error(`the store29 suite needs Debian's nats-server: ${c.error}`);
  return c.path;
}

const root = new URL("..", import.meta.url).pathname;
const args = process.argv.slice(2);
const flag = (f) => args.includes(f);
const opt = (name) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const names = args.filter((a) => !a.startsWith("--"));
const log = (s) => process.stdout.write(s + "\n");

/** The suites a mutant may name; file lists are resolved in the scratch copy. */
const SUITES = {
  unit: { files: (dir) => testFiles(dir, "tests/unit"), timeoutS: 180 },
  store: {
    files: () => [
      "tests/store/conformance_test.ts",
      "tests/store/listing_test.ts",
      "tests/store/watch_replay_test.ts",
      "tests/store/maybe_landed_test.ts",
      "tests/store/unsent_test.ts",
    ],
    timeoutS: 240,
  },
  coordinator: {
    files: (dir) => testFiles(dir, "tests/coordinator"),
    timeoutS: 300,
  },
  regressions: { files: () => ["tests/sim/regressions_test.ts", "tests/sim/stale_reads_test.ts"], timeoutS: 180 },
  sim: { files: () => ["tests/sim/sim_test.ts"], env: { SIM_SEEDS: "300", SIM_SEED_BASE: "1" }, timeoutS: 400 },
  // The simulation of sharded jobs (K shards, one lane budget), with the seeds that found its bugs.
  shardsim: { files: () => ["tests/sim/sharded_sim_test.ts"], env: { SIM_SHARDED_SEEDS: "200", SIM_SEED_BASE: "1" }, timeoutS: 400 },
  // The coordinator scenarios on a real nats-server (the scenario suites of the NATS backend's kit run).
  nats: { files: () => ["tests/nats/backend_test.ts"], env: { KIT_SUITES: "scenarios" }, timeoutS: 600 },
  runtime: { files: () => ["tests/runtime/worker_test.ts", "tests/runtime/operator_drain_test.ts"], timeoutS: 240 },
  // Spans of a job in process (the SDK's in-memory exporter): trees, outcomes, error statuses.
  tracing: { files: () => ["tests/runtime/tracing_test.ts"], timeoutS: 120 },
  // The HTTP app in process (app.request, no sockets): operator routes, drain, answers.
  http: { files: () => ["tests/runtime/fleet_http_test.ts", "tests/runtime/http_test.ts"], timeoutS: 120 },
  // A single nats-server paused, stopped and restarted under a NatsStore (the reconnect path), over Deno's
  // WebSocket client (the kit's outage suite of the NATS backend) and the Deno adapter's.
  outage: { files: () => ["tests/nats/backend_test.ts", "tests/store/outage_test.ts"], env: { KIT_SUITES: "outages" }, timeoutS: 240 },
  // The store suite on Debian's 2.9.10, whose hazards some NatsStore rules work around (they do not show on 2.15).
  store29: {
    files: () => ["tests/store/conformance_test.ts", "tests/store/listing_test.ts", "tests/store/watch_replay_test.ts"],
    compat: true,
    timeoutS: 240,
  },
  // Replicated buckets on a 3-node cluster of the current release (no network namespaces needed).
  cluster: { files: () => ["tests/cluster/r3_store_test.ts"], filter: "/^R3: /", timeoutS: 240 },
  // tls:// by URL end to end: Deno and Node workers (examples/serve.ts) and the CLI on a TLS-only nats-server.
  tcptls: { files: () => ["tests/tcp/tls_e2e_test.ts"], timeoutS: 180 },
  // maxInFlight and the job name from one place: hand-composed workers and serve, as real processes.
  onesource: { files: () => ["tests/runtime/one_source_test.ts"], timeoutS: 180 },
  // examples/pg_range's fenced sink on a PostgreSQL the gate starts (scripts/services.mjs).
  pg: { files: () => ["tests/examples/pg_range_test.ts"], filter: "/^pg_range (fenced sink: a write|config)/", postgres: true, timeoutS: 120 },
  // PostgresStore (tests/postgres) on a PostgreSQL the gate starts: the store's own tests, and the
  // exactly-once fleet (rows and progress in one transaction, workers SIGSTOPped and SIGKILLed).
  pgstore: { files: () => ["tests/postgres/store_test.ts", "tests/postgres/backend_test.ts"], env: { KIT_SUITES: "conformance" }, postgres: true, timeoutS: 180 },
  pgonce: { files: () => ["tests/postgres/exactly_once_test.ts"], postgres: true, timeoutS: 180 },
  // RedisStore on a redis-server the gate starts (appendfsync always): the kit's conformance suite, and
  // durability (refused settings, WAIT on a replica, kill -9).
  redis: { files: () => ["tests/redis/backend_test.ts", "tests/redis/durability_test.ts"], env: { KIT_SUITES: "conformance" }, redis: true, timeoutS: 180 },
};

function testFiles(dir, sub) {
  const out = [];
  const walk = (d) => {
    for (const e of readdirSync(join(dir, d), { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith("_test.ts")) out.push(p);
    }
  };
  walk(sub);
  return out.sort();
}

// --- the mutants: selection and the exact-once check ------------------------------------

const selected = names.length ? mutants.filter((m) => names.some((n) => m.name.includes(n))) : mutants;
if (names.length && selected.length === 0) {
  log(`No mutant matches ${names.join(", ")}; known: ${mutants.map((m) => m.name).join(", ")}`);
  process.exit(2);
}
const seen = new Set();
for (const m of mutants) {
  if (seen.has(m.name)) throw new Error(`Mutant name "${m.name}" is used twice in scripts/mutants.mjs`);
  seen.add(m.name);
  for (const s of m.suites) if (!SUITES[s]) throw new Error(`Mutant "${m.name}" names an unknown suite "${s}"`);
}

function count(text, search) {
  let n = 0;
  for (let i = text.indexOf(search); i >= 0; i = text.indexOf(search, i + 1)) n++;
  return n;
}

/** Applies a mutant's edits to the files under `dir`; returns the new contents by file, or the reasons it does not apply. */
function mutate(dir, m) {
  const files = new Map();
  const problems = [];
  for (const [i, e] of m.edits.entries()) {
    const path = join(dir, e.file);
    if (!files.has(e.file)) {
      if (!existsSync(path)) {
        problems.push(`edit ${i + 1}: file ${e.file} does not exist`);
        continue;
      }
      files.set(e.file, readFileSync(path, "utf8"));
    }
    const text = files.get(e.file);
    const n = count(text, e.search);
    if (n !== 1) {
      problems.push(`edit ${i + 1}: the search text matches ${n} times in ${e.file} (expected exactly once): ${JSON.stringify(e.search)}`);
      continue;
    }
    files.set(e.file, text.replace(e.search, () => e.replace));
  }
  return { files, problems };
}

function check() {
  let bad = 0;
  for (const m of mutants) {
    const { problems } = mutate(root, m);
    for (const p of problems) log(`MUTANT DOES NOT MATCH: ${m.name}: ${p}`);
    if (problems.length) bad++;
  }
  return bad;
}

if (flag("--list")) {
  for (const m of mutants) log(`${m.name}  [${m.edits.map((e) => e.file).join(", ")}]  suites: ${m.suites.join(", ")}\n    ${m.breaks}`);
  process.exit(0);
}

const unmatched = check();
if (flag("--check")) {
  log(`${mutants.length - unmatched} of ${mutants.length} mutants match exactly once`);
  process.exit(unmatched ? 1 : 0);
}
if (unmatched) {
  log(`${unmatched} mutant(s) no longer match the code: update scripts/mutants.mjs (see above)`);
  process.exit(1);
}

// --- the scratch copy ----------------------------------------------------------------------

// The same server npm test runs (the pinned current release, or NATS_SERVER_BIN).
function findNatsServer() {
  if (process.env.NATS_SERVER && existsSync(process.env.NATS_SERVER)) return process.env.NATS_SERVER;
  const r = resolveNatsServer({ log });
  if (r.error) {
    log(`nats-server: ${r.error}`);
    return undefined;
  }
  log(`nats-server ${r.version} at ${r.path} (${r.why})`);
  return r.path;
}

const deno = join(root, "node_modules", ".bin", "deno");
if (!existsSync(deno)) {
  log("node_modules/.bin/deno is missing: run `npm install` first.");
  process.exit(2);
}
const natsServer = findNatsServer();
const scratch = mkdtempSync(join(tmpdir(), "splitlease-mutate-"));
const listed = spawnSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: root, encoding: "utf8" });
if (listed.status !== 0) {
  log(`git ls-files failed in ${root}: ${listed.stderr}`);
  process.exit(2);
}
for (const f of new Set(listed.stdout.split("\0").filter(Boolean))) {
  if (f === "node_modules" || f.startsWith("node_modules/")) continue;
  const src = join(root, f);
  if (!existsSync(src)) continue; // deleted in the working tree
  mkdirSync(dirname(join(scratch, f)), { recursive: true });
  copyFileSync(src, join(scratch, f));
}
symlinkSync(realpathSync(join(root, "node_modules")), join(scratch, "node_modules"));
mkdirSync(join(scratch, ".mutate-logs"));
let cleaned = false;
const cleanup = () => {
  if (cleaned) return;
  cleaned = true;
  if (flag("--keep")) log(`Scratch copy kept: ${scratch} (logs in .mutate-logs/)`);
  else rmSync(scratch, { recursive: true, force: true });
};
process.on("exit", () => {
  postgres?.killSync?.();
  redis?.killSync?.();
  cleanup();
});
for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, () => {
    for (const c of children) try { process.kill(-c.pid, "SIGKILL"); } catch { /* gone */ }
    cleanup();
    process.exit(130);
  });
}

// --- running a suite ------------------------------------------------------------------------

const children = new Set();

let postgres; // started on first use by a suite that needs it, stopped at exit
let postgresUrl;
let redis; // the same for Redis
let redisUrl;

/** Runs one suite in the scratch copy; resolves to { ok, timedOut, failed: [test names], detail, seconds }. */
async function runSuite(name, tag) {
  const suite = SUITES[name];
  if (suite.postgres && !postgres) {
    const { startPostgres } = await import("./services.mjs");
    postgres = await startPostgres({ log });
    if (postgres.error) return { ok: false, timedOut: false, failed: [], detail: `suite ${name}: ${postgres.error}`, seconds: 0 };
    postgresUrl = postgres.url;
  }
  if (suite.redis && !redis) {
    const { startRedis } = await import("./services.mjs");
    redis = await startRedis({ log, appendfsync: "always" });
    if (redis.error) return { ok: false, timedOut: false, failed: [], detail: `suite ${name}: ${redis.error}`, seconds: 0 };
    redisUrl = redis.url;
  }
  const files = opt("files")?.split(",") ?? suite.files(scratch);
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(deno, ["test", "-A", "--no-check", "--fail-fast", ...(suite.filter ? ["--filter", suite.filter] : []), ...files], {
      cwd: scratch,
      detached: true, // its own process group: a timeout kills nats-servers and workers too
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        ...process.env,
        NO_COLOR: "1",
        ...(natsServer ? { NATS_SERVER: suite.compat ? compatNatsServer() : natsServer } : {}),
        ...(suite.postgres ? { PG_URL: postgresUrl } : {}),
        ...(suite.redis ? { REDIS_URL: redisUrl } : {}),
        ...(suite.env ?? {}),
      },
    });
    children.add(child);
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch { /* gone */ }
    }, suite.timeoutS * 1000);
    child.on("close", (code) => {
      clearTimeout(timer);
      children.delete(child);
      writeFileSync(join(scratch, ".mutate-logs", `${tag}.${name}.log`), out);
      const failed = [...new Set([...out.matchAll(/^(.+?) \.\.\. FAILED/gm)].map((m) => m[1].trim()))];
      const violation = out.match(/^\s+- (t=[\d.]+ .*)$/m)?.[1];
      const firstError = out.match(/^error: (?!Test failed)(.*)$/m)?.[1];
      const summary = out.match(/^(?:ok|FAILED) \| \d+ passed.*$/m)?.[0];
      resolve({
        ok: code === 0 && !timedOut,
        timedOut,
        failed,
        detail: violation ?? firstError,
        summary,
        seconds: (Date.now() - started) / 1000,
      });
    });
  });
}

const fmt = (s) => `${s.toFixed(1)} s`;
const short = (s, n = 220) => (s.length > n ? s.slice(0, n - 1) + "…" : s);

// --- the gate ----------------------------------------------------------------------------------

const only = opt("suite");
if (only && !SUITES[only]) {
  log(`Unknown suite "${only}"; known: ${Object.keys(SUITES).join(", ")}`);
  process.exit(2);
}
const suitesOf = (m) => (only ? [only] : m.suites);
const t0 = Date.now();
log(`Mutation gate: ${selected.length} mutant(s), scratch copy ${scratch}`);

if (!flag("--no-baseline")) {
  const used = [...new Set(selected.flatMap(suitesOf))];
  log(`Baseline: the unmutated code must pass ${used.join(", ")}`);
  for (const s of used) {
    const r = await runSuite(s, "baseline");
    log(`  ${s}: ${r.ok ? "ok" : "FAILED"} (${fmt(r.seconds)})${r.summary ? " " + r.summary : ""}`);
    if (!r.ok) {
      log(`The baseline fails${r.timedOut ? " (timed out)" : ""}: ${r.failed.join("; ") || r.detail || "see the log"}`);
      log(`Fix the suite before judging mutants (run with --keep to keep the log).`);
      process.exit(2);
    }
  }
}

let killed = 0;
const survivors = [];
const hung = [];
for (const [i, m] of selected.entries()) {
  const { files } = mutate(scratch, m);
  const originals = new Map([...files.keys()].map((f) => [f, readFileSync(join(scratch, f), "utf8")]));
  for (const [f, text] of files) writeFileSync(join(scratch, f), text);
  const started = Date.now();
  const kills = [];
  const ran = [];
  try {
    for (const s of suitesOf(m)) {
      const r = await runSuite(s, m.name);
      ran.push(s);
      if (!r.ok) {
        kills.push({ suite: s, ...r });
        if (!flag("--all")) break;
      }
    }
  } finally {
    for (const [f, text] of originals) writeFileSync(join(scratch, f), text);
  }
  const head = `[${i + 1}/${selected.length}] ${m.name}`;
  if (kills.length) {
    killed++;
    log(`${head}: KILLED (${fmt((Date.now() - started) / 1000)})`);
    for (const k of kills) {
      if (k.timedOut) hung.push(`${m.name} (${k.suite})`);
      const by = k.timedOut ? `timed out after ${SUITES[k.suite].timeoutS} s` : k.failed.length ? k.failed.map((t) => `"${t}"`).join(", ") : "the runner failed";
      log(`    by ${k.suite}: ${short(by)}${k.detail ? `\n      ${short(k.detail)}` : ""}`);
    }
  } else {
    survivors.push(m.name);
    log(`${head}: SURVIVED ${ran.join(", ")} (${fmt((Date.now() - started) / 1000)})\n    breaks: ${m.breaks}`);
  }
}

log(`\nMutation gate finished in ${fmt((Date.now() - t0) / 1000)}`);
if (hung.length) log(`Killed only by the gate's time limit (a test without its own deadline?): ${hung.join(", ")}`);
if (survivors.length) log(`Survived: ${survivors.join(", ")}`);
log(`${killed} killed, ${survivors.length} survived`);
process.exit(survivors.length ? 1 : 0);
