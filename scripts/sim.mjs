#!/usr/bin/env node
// `npm run sim`: the deterministic simulation (tests/sim/) for many seeds.
//
//   SIM_SEEDS=n      seeds to run (default 2000), split over one shard per core
//   SIM_SEED_BASE=b  first seed (default 1)
//   SIM_SEED=s       replay one seed (prints its trace tail; SIM_TRACE=1 for all of it)
//   SIM_SHARDS=k     parallel deno processes (default: available cores)
//   SIM_SHARDED_SEEDS=n  seeds run as a sharded job (tests/sim/sharded_sim_test.ts; default half of SIM_SEEDS)
//
// Every failing seed is printed with its violations, the last trace lines and
// the replay command. Exit code 0 when every seed kept every invariant.
import { spawn } from "node:child_process";
import { availableParallelism } from "node:os";
import { join } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const deno = join(root, "node_modules", ".bin", "deno");
const env = process.env;

function run(extraEnv, label, filter) {
  return new Promise((resolve) => {
    const args = ["test", "-A", "--no-check"];
    if (filter) args.push("--filter", filter);
    args.push("tests/sim/");
    const child = spawn(deno, args, {
      cwd: root,
      env: { ...env, NO_COLOR: "1", ...extraEnv },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    const onData = (d) => {
      out += d.toString();
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("close", (code) => resolve({ code: code ?? 1, out, label }));
  });
}

const started = Date.now();
if (env.SIM_SEED !== undefined) {
  const r = await run({}, `seed ${env.SIM_SEED}`);
  process.stdout.write(r.out);
  process.exit(r.code);
}

const total = Number(env.SIM_SEEDS ?? 2000);
const base = Number(env.SIM_SEED_BASE ?? 1);
const shards = Math.max(1, Math.min(Number(env.SIM_SHARDS ?? availableParallelism()), total));
const per = Math.ceil(total / shards);
const sharded = Number(env.SIM_SHARDED_SEEDS ?? Math.ceil(total / 2));
const perSharded = Math.ceil(sharded / shards);
console.log(`simulation: ${total} seeds from ${base}, ${sharded} of them also as a sharded job, over ${shards} process(es)`);
const jobs = [];
for (let i = 0; i < shards; i++) {
  const first = base + i * per;
  const n = Math.min(per, base + total - first);
  if (n <= 0) break;
  // Shard 0 also runs the determinism check and the regression tests.
  const ns = Math.max(0, Math.min(perSharded, sharded - i * perSharded));
  jobs.push(run({ SIM_SEEDS: String(n), SIM_SEED_BASE: String(first), SIM_SHARDED_SEEDS: String(ns) }, `seeds ${first}..${first + n - 1}`, i === 0 ? undefined : "seeded"));
}
let failed = 0;
for (const r of await Promise.all(jobs)) {
  const summary = r.out.split("\n").filter((l) => /^(sharded )?simulation: \d+ of/.test(l));
  const failures = r.out.split("\n").filter((l) => /FAILED \(trace|^\s+- |replay:/.test(l));
  const tests = r.out.match(/(ok|FAILED) \| \d+ passed.*$/m)?.[0] ?? "runner did not report";
  console.log(`[${r.label}] ${summary.join(" ") || "(no summary)"}`);
  console.log(`[${r.label}] ${tests}`);
  if (r.code !== 0) {
    failed++;
    if (failures.length) console.log(failures.join("\n"));
    else console.log(r.out.slice(-4000));
  }
}
console.log(`simulation: ${failed ? "FAILED" : "ok"} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
process.exit(failed ? 1 : 0);
