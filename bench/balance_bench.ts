// Balancing on real NATS (docs/DESIGN.md, "Takeover, revocation and leader loss"): a running 4-worker job of 400 splits,
// each worker driving a cooperative source; a fifth worker joins. Reports the
// time until every worker holds within ±1 of the others, in heartbeat
// intervals (leaseMs / 3), and the steals it took.
//
//   node_modules/.bin/deno run -A bench/balance_bench.ts
import { startWorker, type Worker } from "../mod.ts";
import type { SplitSource } from "../mod.ts";
import { NatsServer } from "../tests/helpers/nats_server.ts";
import { closeWorker, natsWorker, type NatsWorker, result, sleep, unitPlan } from "./_common.ts";

const SPLITS = Number(Deno.env.get("BENCH_BALANCE_SPLITS") ?? 400);
const leaseMs = Number(Deno.env.get("BENCH_LEASE_MS") ?? 1500);
const beat = leaseMs / 3;
const tun = { leaseMs, opTimeoutMs: 500, maxInFlight: SPLITS, drainDeadlineMs: 2000 };

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

/** Never finishes on its own: commits every ~100 ms and stops at once on revocation. */
const source: SplitSource<number> = {
  fingerprint: () => "balance",
  plan: unitPlan(SPLITS),
  async run(lane) {
    let n = typeof lane.progress?.watermark === "number" ? lane.progress.watermark : 0;
    while (!lane.signal.aborted && !lane.revokeSignal.aborted) {
      await pause(100 + Math.random() * 20, lane.revokeSignal);
      if (lane.signal.aborted || lane.revokeSignal.aborted) break;
      await lane.commit({ watermark: ++n }).catch(() => {});
    }
  },
};

await using server = await NatsServer.start();
const job = "balance";
const fleet: { w: NatsWorker; worker: Worker }[] = [];
const join = async (i: number) => {
  const w = await natsWorker(server.wsUrl, job, { ...tun, instance: `b${i}`, planner: unitPlan(SPLITS), fingerprint: "balance" });
  const worker = startWorker({ coordinator: w.c, source, maxInFlight: SPLITS, logger: () => {}, statusIntervalMs: 0 });
  fleet.push({ w, worker });
};
const held = () => fleet.map((f) => f.w.c.status().held.length);
const spread = () => {
  const h = held();
  return Math.max(...h) - Math.min(...h);
};

for (let i = 0; i < 4; i++) await join(i);
// Wait for the four to share the 400 evenly (±1) and settle.
const t4 = performance.now();
while (!(held().reduce((a, b) => a + b, 0) === SPLITS && spread() <= 1)) await sleep(20);
console.log(`4 workers, ${SPLITS} splits: balanced ${held().join("/")} after ${(performance.now() - t4).toFixed(0)} ms`);
await sleep(beat);

const drained = () => fleet.reduce((n, f) => n + (f.worker.stats().revocations.drained ?? 0), 0);
const stealsBefore = drained();
const t0 = performance.now();
await join(4);
const joined = performance.now() - t0;
let samples = 0;
while (!(held().reduce((a, b) => a + b, 0) === SPLITS && spread() <= 1)) {
  await sleep(10);
  if (++samples % 200 === 0) console.log(`  ${((performance.now() - t0) / 1000).toFixed(1)} s: ${held().join("/")}`);
  if (performance.now() - t0 > 300_000) throw new Error(`not balanced after 300 s: ${held().join("/")}`);
}
const took = performance.now() - t0;
const steals = drained() - stealsBefore;
const forced = fleet.reduce((n, f) => n + (f.worker.stats().revocations.forced ?? 0), 0);
const lost = fleet.reduce((n, f) => n + Object.values(f.worker.stats().lost).reduce((a, b) => a + b, 0), 0);
console.log(
  `fifth worker joined in ${joined.toFixed(0)} ms; ±1 reached after ${took.toFixed(0)} ms = ${(took / beat).toFixed(1)} ` +
    `heartbeat intervals (leaseMs ${leaseMs}, beat ${beat} ms): ${held().join("/")}, ${steals} steals ` +
    `(${(steals / (took / beat)).toFixed(2)} per beat), ${forced} forced revocations, ${lost} lanes lost`,
);
result({
  bench: "balance",
  metric: `4→5 workers, ${SPLITS} splits: time to ±1 in heartbeat intervals`,
  value: `${took.toFixed(0)} ms, ${steals} steals, held ${held().join("/")}`,
  ratio: took / beat,
});
for (const f of fleet) await f.worker.shutdown({ reason: "bench done", deadlineMs: 5000 }).catch(() => {});
for (const f of fleet) await closeWorker(f.w);
