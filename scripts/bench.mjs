#!/usr/bin/env node
// `npm run bench`: runs every bench/*_bench.ts with Deno (benches that need
// Bun or Node spawn them from node_modules/.bin themselves), prints each
// bench's output, then a summary table of the `::result {...}` rows the
// benches print (each with the ratio measured in that run).
// `npm run bench -- coordinator` runs only the benches whose name matches
// (`-` and `_` alike: `leader-load` runs bench/leader_load_bench.ts).
// `--nats=current,2.9,current-r3` picks the NATS setups of the benches that
// take one (scale's grid cells, peers: once per setup); default `current`.
// The servers are found as `npm test` finds them (scripts/nats_server_bin.mjs),
// and the peers and cost benches get a Redis of their own, started here and
// stopped at the end (the cost bench runs peers and backfill once per setup itself).
import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { compatServer, resolveNatsServer } from "./nats_server_bin.mjs";
import { startPostgres, startRedis } from "./services.mjs";

const root = new URL("..", import.meta.url).pathname;
const deno = join(root, "node_modules", ".bin", "deno");
const only = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const natsFlag = process.argv.find((a) => a.startsWith("--nats="))?.slice("--nats=".length);
const setups = (natsFlag ?? process.env.BENCH_NATS ?? "current").split(",").filter(Boolean);
const current = resolveNatsServer();
if (current.error) {
  console.log(`nats-server: ${current.error}`);
  process.exit(1);
}
console.log(`nats-server ${current.version} at ${current.path} (${current.why})`);
const compat = setups.some((k) => k.startsWith("2.9")) ? compatServer() : undefined;
if (compat?.error) {
  console.log(`--nats asks for 2.9, but: ${compat.error}`);
  process.exit(1);
}
if (compat) console.log(`compatibility nats-server ${compat.version} at ${compat.path}`);
const natsEnv = {
  NATS_SERVER: current.path,
  ...(compat ? { NATS_SERVER_COMPAT: compat.path } : {}),
  BENCH_NATS: setups.join(","),
};

const benches = readdirSync(join(root, "bench"))
  .filter((f) => f.endsWith("_bench.ts"))
  .filter((f) => !only.length || only.some((o) => f.replace(/_/g, "-").includes(o.replace(/_/g, "-"))))
  .sort();

function run(file, extraEnv = {}) {
  return new Promise((resolve) => {
    const child = spawn(deno, ["run", "-A", `bench/${file}`], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, NO_COLOR: "1", ...natsEnv, ...extraEnv },
    });
    const rows = [];
    let buf = "";
    child.stdout.on("data", (d) => {
      buf += d.toString();
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line.startsWith("::result ")) {
          try {
            rows.push(JSON.parse(line.slice(9)));
          } catch { /* malformed row: shown as is */ }
        } else process.stdout.write(line + "\n");
      }
    });
    child.stderr.on("data", (d) => process.stderr.write(d));
    // Stop the bench (and the servers it started) if this runner is interrupted.
    const stop = () => child.kill("SIGTERM");
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    child.on("close", (code, signal) => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve({ code: code ?? (signal ? 1 : 0), rows });
    });
  });
}

const started = Date.now();
const summary = [];
const failed = [];
// Redis for the peers and cost benches: started on a free port, stopped at the end (also on failure).
let redis;
const stopRedis = () => redis?.killSync();
process.on("exit", stopRedis);
if (benches.some((f) => f.startsWith("peers") || f.startsWith("cost"))) {
  redis = await startRedis();
  if (redis.error) {
    console.log(`Redis: ${redis.error}`);
    process.exit(1);
  }
  console.log(`Redis started for the peers and cost benches at ${redis.url}`);
}
// PostgreSQL for the benches that measure the PostgreSQL store next to NATS
// (BENCH_PG=0 leaves it out): room for fleets of 100 stores, and the same
// settings as the test command's (fsync and synchronous_commit off: like a
// single nats-server node, which does not flush each write either).
let pg;
const stopPg = () => pg?.killSync?.();
process.on("exit", stopPg);
if (process.env.BENCH_PG !== "0" && benches.some((f) => /^(scale|peers|backfill|store|surfaces)_/.test(f))) {
  pg = await startPostgres({ maxConnections: 600 });
  if (pg.error) {
    console.log(`PostgreSQL: ${pg.error} (BENCH_PG=0 runs the benches without it)`);
    process.exit(1);
  }
  console.log(`PostgreSQL started for the benches at ${pg.url}`);
}
const pgEnv = pg?.url ? { PG_URL: pg.url, PG_PID: String(pg.pid) } : {};
// A Redis for the benches that measure the Redis store next to NATS and PostgreSQL (BENCH_REDIS=0
// leaves it out), apart from BullMQ's: the AOF fsynced on every write, as the store requires by default.
let redisStore;
process.on("exit", () => redisStore?.killSync?.());
if (process.env.BENCH_REDIS !== "0" && benches.some((f) => /^(scale|peers|store)_/.test(f))) {
  redisStore = await startRedis({ appendfsync: "always" });
  if (redisStore.error) {
    console.log(`Redis: ${redisStore.error} (BENCH_REDIS=0 runs the benches without it)`);
    process.exit(1);
  }
  console.log(`Redis (appendfsync always) started for the Redis store at ${redisStore.url}`);
}
if (redisStore?.url) Object.assign(pgEnv, { REDIS_STORE_URL: redisStore.url, REDIS_STORE_PID: String(redisStore.pid) });
for (const file of benches) {
  // The peers bench runs on one server: once per single-node setup asked for.
  const runs = file.startsWith("peers") ? setups.filter((k) => !k.endsWith("r3")).map((k) => ({ BENCH_NATS: k })) : [{}];
  for (const extra of runs) {
    console.log(`\n=== ${file}${extra.BENCH_NATS ? ` on ${extra.BENCH_NATS}` : ""} ===`);
    const t0 = Date.now();
    const { code, rows } = await run(file, { ...extra, ...pgEnv, ...(redis?.port ? { REDIS_PORT: String(redis.port) } : {}) });
    console.log(`(${((Date.now() - t0) / 1000).toFixed(1)} s${code ? `, exit ${code}` : ""})`);
    if (code) failed.push(file);
    const tag = extra.BENCH_NATS ? ` [${extra.BENCH_NATS}]` : "";
    summary.push(...rows.map((r) => ({ bench: file.replace(/_bench\.ts$/, "") + tag, ...r })));
  }
}
if (redis?.stop) await redis.stop();
redis = undefined;
if (pg?.stop) await pg.stop();
pg = undefined;
if (redisStore?.stop) await redisStore.stop();
redisStore = undefined;

const cols = [
  ["bench", (r) => r.bench],
  ["metric", (r) => r.metric],
  ["measured", (r) => r.value ?? ""],
  ["ratio", (r) => (typeof r.ratio === "number" ? r.ratio.toFixed(r.ratio >= 100 ? 0 : 3) : "")],
  ["target", (r) => r.target ?? ""],
];
const width = cols.map(([h, f]) => Math.max(h.length, ...summary.map((r) => String(f(r)).length)));
const line = (cells) => cells.map((c, i) => String(c).padEnd(width[i])).join("  ").trimEnd();
console.log(`\n=== summary (${benches.length} benches, ${((Date.now() - started) / 1000).toFixed(0)} s) ===`);
console.log(line(cols.map(([h]) => h)));
console.log(line(width.map((w) => "-".repeat(w))));
for (const r of summary) console.log(line(cols.map(([, f]) => f(r))));
if (failed.length) {
  console.log(`\nfailed: ${failed.join(", ")}`);
  process.exit(1);
}
