// Cold start per runtime: process start → first `gained` on a running job,
// for worker processes on Deno, Bun and Node 24 (the adapter fixtures of the
// runtime tests; Node runs the esbuild output), plus the size of the
// single-file bundle. Median of RUNS runs each after one unmeasured warm-up.
//
//   node_modules/.bin/deno run -A bench/cold_start_bench.ts
import { buildOnce, kill, root, RUNTIMES, spawn, withTimeout } from "../tests/helpers/worker_procs.ts";
import { NatsServer } from "../tests/helpers/nats_server.ts";
import { rangeSource } from "../tests/runtime/fixtures/app.ts";
import { closeWorker, median, natsWorker, nextEvent, result } from "./_common.ts";

const RUNS = Number(Deno.env.get("BENCH_COLD_RUNS") ?? 7);
const SPLITS = 200, RECORDS = 100_000;

await buildOnce(); // npm run build + the Node fixture
const bundle = await Deno.readFile(`${root}dist/splitlease.bundle.js`);
const gz = await new Response(new Blob([bundle]).stream().pipeThrough(new CompressionStream("gzip"))).arrayBuffer();

await using server = await NatsServer.start();
const job = "cold";
// The running job: a leader holding 2 of 200 splits; the rest are free for newcomers.
const source = rangeSource(SPLITS, RECORDS, 10);
const leader = await natsWorker(server.wsUrl, job, {
  leaseMs: 2000,
  opTimeoutMs: 1000,
  maxInFlight: 2,
  fingerprint: source.fingerprint(),
  planner: (ctx) => source.plan(ctx),
});
await nextEvent(leader.c, "gained");

const env = { STORE: "nats", NATS_URL: server.wsUrl, JOB: job, SPLITS: String(SPLITS), RECORDS: String(RECORDS) };
const rows: Record<string, number[]> = {};
const boots: Record<string, number[]> = {};
for (const rt of RUNTIMES) {
  rows[rt] = [];
  boots[rt] = [];
  for (let i = 0; i <= RUNS; i++) {
    const p = spawn(rt, { ...env, INSTANCE: `cold-${rt}-${i}` });
    try {
      await withTimeout(p.line((l) => l.event === "gained"), 20_000, `${rt} gained`);
      const at = p.arrivals[p.lines.findIndex((l) => l.event === "gained")];
      const booted = p.arrivals[p.lines.findIndex((l) => l.event === "config")];
      if (i > 0) rows[rt].push(at - p.spawnedAt);
      if (i > 0) boots[rt].push(booted - p.spawnedAt);
      p.child.kill("SIGTERM"); // drain: release what it gained, leave
      await withTimeout(p.status, 15_000, `${rt} exit`);
    } finally {
      await kill(p);
    }
  }
}
await closeWorker(leader);

console.log(`cold start: process spawn → first "gained" line on a running job (${SPLITS} splits), ${RUNS} runs after 1 warm-up`);
for (const rt of RUNTIMES) {
  const xs = rows[rt];
  console.log(
    `  ${rt.padEnd(5)} median ${median(xs).toFixed(0).padStart(4)} ms  min ${Math.min(...xs).toFixed(0)}  max ${
      Math.max(...xs).toFixed(0)
    }${rt === "node" ? "" : "  (target < 300 ms)"}; of which runtime boot + imports ${
      median(boots[rt]).toFixed(0)
    } ms, connect + join + claim ${(median(xs) - median(boots[rt])).toFixed(0)} ms`,
  );
}
console.log(
  `bundle dist/splitlease.bundle.js: ${(bundle.length / 1024).toFixed(1)} KiB (${(gz.byteLength / 1024).toFixed(1)} KiB gzip)`,
);
for (const rt of RUNTIMES) {
  result({
    bench: "cold_start",
    metric: `${rt}: median spawn → first gained${rt === "node" ? "" : " / 300 ms target"}`,
    value: `${median(rows[rt]).toFixed(0)} ms`,
    ratio: rt === "node" ? undefined : median(rows[rt]) / 300,
    target: rt === "node" ? undefined : "< 1",
  });
}
result({
  bench: "cold_start",
  metric: "node ÷ deno cold start",
  value: `${median(rows.node).toFixed(0)} vs ${median(rows.deno).toFixed(0)} ms`,
  ratio: median(rows.node) / median(rows.deno),
});
result({
  bench: "cold_start",
  metric: "bundle size",
  value: `${(bundle.length / 1024).toFixed(1)} KiB, ${(gz.byteLength / 1024).toFixed(1)} KiB gzip`,
  ratio: gz.byteLength / bundle.length,
  target: "gzip ÷ raw",
});
