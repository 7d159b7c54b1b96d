// Coordinator benchmarks on one nats-server, real time (docs/DESIGN.md, "Takeover, revocation and leader loss" and "Known limits"): handover
// latency after a graceful release, crash takeover time in leases, 10,000 tiny
// splits over 4 workers against the raw CAS throughput of the same server, and
// heartbeat writes while holding 10 vs 1,000 splits.
//
//   node_modules/.bin/deno run -A bench/coordinator_bench.ts
//
// Not a timed test: it reports numbers and ratios measured in one run.
import { wsconnect } from "@nats-io/nats-core";
import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { NatsServer } from "../tests/helpers/nats_server.ts";
import {
  closeWorker,
  crashWorker,
  median,
  natsWorker,
  type NatsWorker,
  nextEvent,
  percentile,
  result,
  sleep,
  unitPlan,
  writes,
} from "./_common.ts";

const env = (k: string, d: number) => Number(Deno.env.get(k) ?? d);
const HANDOVERS = env("BENCH_HANDOVERS", 200);
const CRASHES = env("BENCH_CRASHES", 5);
const TINY = env("BENCH_TINY_SPLITS", 10_000);
const HOLD = env("BENCH_HOLD", 1000);

await using server = await NatsServer.start();
const url = server.wsUrl;
const nc0 = await wsconnect({ servers: url });
console.log(`nats-server ${nc0.info?.version}, WebSocket, loopback, R1\n`);
await nc0.close();

// --- 1. handover after a graceful release ---------------------------------------
{
  const job = "handover";
  const tun = { leaseMs: 3000, opTimeoutMs: 1000 };
  let holder: NatsWorker = await natsWorker(url, job, { ...tun, planner: unitPlan(1) });
  await nextEvent(holder.c, "gained");
  let peer = await natsWorker(url, job, { ...tun, planner: unitPlan(1) });
  const lat: number[] = [];
  for (let i = 0; i < HANDOVERS + 10; i++) {
    // The holder leaves gracefully (its first step is the release CAS); the idle peer claims.
    const gained = nextEvent(peer.c, "gained", 10_000);
    const t0 = performance.now();
    const closing = closeWorker(holder);
    await gained;
    const ms = performance.now() - t0;
    if (i >= 10) lat.push(ms); // first 10: warm-up
    await closing;
    holder = peer;
    peer = await natsWorker(url, job, { ...tun, planner: unitPlan(1) });
  }
  await closeWorker(holder);
  await closeWorker(peer);
  const p50 = median(lat), p99 = percentile(lat, 99);
  console.log(
    `handover after graceful release (release → peer gained), ${lat.length} handovers: ` +
      `p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms, max ${Math.max(...lat).toFixed(2)} ms (target p99 < 10 ms)`,
  );
  result({
    bench: "coordinator",
    metric: "handover p99 / 10 ms target",
    value: `p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms`,
    ratio: p99 / 10,
    target: "< 1",
  });
}

// --- 2. crash takeover -------------------------------------------------------------
{
  const leaseMs = 1000;
  const tun = { leaseMs, opTimeoutMs: 250 };
  const times: number[] = [];
  for (let i = 0; i < CRASHES; i++) {
    const job = `crash-${i}`;
    const owner = await natsWorker(url, job, { ...tun, planner: unitPlan(1) });
    await nextEvent(owner.c, "gained");
    const peer = await natsWorker(url, job, { ...tun, planner: unitPlan(1) });
    // Crash at a random phase of the owner's heartbeat.
    await sleep(leaseMs + Math.random() * leaseMs / 3);
    const gained = nextEvent(peer.c, "gained", 10_000);
    const t0 = performance.now();
    await crashWorker(owner);
    await gained;
    times.push(performance.now() - t0);
    await closeWorker(peer);
  }
  const worst = Math.max(...times);
  console.log(
    `crash takeover (abandon → peer gained), leaseMs ${leaseMs}, ${CRASHES} runs: ` +
      times.map((t) => `${(t / leaseMs).toFixed(2)}`).join(", ") +
      ` leases; median ${(median(times) / leaseMs).toFixed(2)}, worst ${(worst / leaseMs).toFixed(2)} ` +
      `(${worst.toFixed(0)} ms; target within lease + 200 ms = ${leaseMs + 200} ms)`,
  );
  result({
    bench: "coordinator",
    metric: "crash takeover / leaseMs (worst)",
    value: `median ${median(times).toFixed(0)} ms, worst ${worst.toFixed(0)} ms of lease ${leaseMs}`,
    ratio: worst / leaseMs,
    target: `<= ${((leaseMs + 200) / leaseMs).toFixed(2)}`,
  });
}

// --- 3. 10,000 tiny splits over 4 workers vs raw CAS ------------------------------------
async function rawCasPerSecond(ms: number, keys = 100): Promise<number> {
  const nc = await wsconnect({ servers: url });
  try {
    const kv = await new Kvm(jetstream(nc, { timeout: 5000 })).create("splitlease_benchraw", { history: 1 });
    const revs = await Promise.all(Array.from({ length: keys }, (_, i) => kv.put(`k.${i}`, "x".repeat(200))));
    let n = 0;
    const end = performance.now() + ms;
    const t0 = performance.now();
    await Promise.all(revs.map(async (rev, i) => {
      while (performance.now() < end) {
        rev = await kv.update(`k.${i}`, "x".repeat(200), rev);
        n++;
      }
    }));
    return n / ((performance.now() - t0) / 1000);
  } finally {
    await nc.close();
  }
}

{
  const WORKERS = 4;
  const maxInFlight = 32;
  const job = "tiny";
  const tun = { leaseMs: 6000, opTimeoutMs: 2000, maxInFlight, seedConcurrency: 64 };
  const rawBefore = await rawCasPerSecond(2000);
  const t0 = performance.now();
  const workers: NatsWorker[] = [];
  for (let i = 0; i < WORKERS; i++) {
    workers.push(await natsWorker(url, job, { ...tun, instance: `tiny-${i}`, planner: unitPlan(TINY, "t") }));
  }
  const joined = performance.now() - t0;
  let firstGained = 0;
  const done = workers.map(async (w) => {
    const pending = new Set<Promise<void>>();
    let completed = 0;
    for (;;) {
      const e = await w.c.poll();
      if (!e || e.type === "allComplete") break;
      if (e.type === "gained") {
        firstGained ||= performance.now() - t0;
        const p = w.c.commit(e.split.id, e.epoch, { watermark: 1 }, { final: true })
          .then(() => void completed++)
          .catch((err) => console.error("commit failed", e.split.id, String(err)))
          .finally(() => pending.delete(p));
        pending.add(p);
      }
    }
    await Promise.all(pending);
    return completed;
  });
  const perWorker = await Promise.all(done);
  const total = performance.now() - t0;
  const totalWrites = workers.reduce((n, w) => n + writes(w.c), 0);
  await Promise.all(workers.map(closeWorker));
  const rawAfter = await rawCasPerSecond(2000);
  const raw = (rawBefore + rawAfter) / 2;
  const splitsPerSec = TINY / (total / 1000);
  // Fewest writes a plan-claim-complete can take: spec + split create, claim CAS, terminal CAS.
  const minWrites = 4 * TINY;
  const ideal = minWrites / raw * 1000;
  console.log(
    `${TINY} tiny splits over ${WORKERS} workers (maxInFlight ${maxInFlight}, one NatsStore each): ` +
      `joined in ${joined.toFixed(0)} ms, first gained at ${firstGained.toFixed(0)} ms, all complete in ${
        total.toFixed(0)
      } ms ` +
      `(${splitsPerSec.toFixed(0)} splits/s; per worker ${perWorker.join("/")}); ` +
      `${totalWrites} store writes (${(totalWrites / TINY).toFixed(2)} per split, ${
        (totalWrites / (total / 1000)).toFixed(0)
      } writes/s)`,
  );
  console.log(
    `raw CAS, same server, 100 keys in flight: ${rawBefore.toFixed(0)}/s before, ${rawAfter.toFixed(0)}/s after; ` +
      `coordinated writes/s ÷ raw CAS/s = ${(totalWrites / (total / 1000) / raw).toFixed(3)}; ` +
      `time ÷ (${minWrites} writes at raw CAS speed = ${ideal.toFixed(0)} ms) = ${(total / ideal).toFixed(2)}`,
  );
  result({
    bench: "coordinator",
    metric: `${TINY} tiny splits, 4 workers: time / ideal (4 writes per split at raw CAS rate)`,
    value: `${total.toFixed(0)} ms (${splitsPerSec.toFixed(0)} splits/s; raw CAS ${raw.toFixed(0)}/s)`,
    ratio: total / ideal,
  });
  result({
    bench: "coordinator",
    metric: "coordinated writes/s ÷ raw CAS/s (10k run)",
    value: `${(totalWrites / (total / 1000)).toFixed(0)} vs ${raw.toFixed(0)} writes/s`,
    ratio: totalWrites / (total / 1000) / raw,
  });
}

// --- 4. steady-state writes while holding 10 vs 1,000 splits ---------------------------------
async function steadyWrites(n: number): Promise<{ perSec: number; beats: number }> {
  const leaseMs = 1500;
  const job = `hold-${n}`;
  const w = await natsWorker(url, job, { leaseMs, opTimeoutMs: 500, maxInFlight: n, planner: unitPlan(n, "h") });
  let held = 0;
  while (held < n) {
    const e = await nextEvent(w.c, "gained", 30_000);
    if (e) held++;
  }
  await sleep(leaseMs); // settle: nothing but heartbeats from here on
  const window = 3 * leaseMs; // 9 heartbeat intervals
  const before = writes(w.c);
  await sleep(window);
  const count = writes(w.c) - before;
  await closeWorker(w);
  return { perSec: count / (window / 1000), beats: window / (leaseMs / 3) };
}

{
  const small = await steadyWrites(10);
  const large = await steadyWrites(HOLD);
  console.log(
    `steady-state store writes of one worker (leader, leaseMs 1500 → beat every 500 ms, ${small.beats} beats): ` +
      `holding 10: ${small.perSec.toFixed(2)} writes/s, holding ${HOLD}: ${large.perSec.toFixed(2)} writes/s ` +
      `(ratio ${(large.perSec / small.perSec).toFixed(2)}; member + leader beat = 2 writes per beat = ${
        (2 / 0.5).toFixed(1)
      }/s expected)`,
  );
  result({
    bench: "coordinator",
    metric: `heartbeat writes/s holding ${HOLD} ÷ holding 10`,
    value: `${large.perSec.toFixed(2)} vs ${small.perSec.toFixed(2)} writes/s`,
    ratio: large.perSec / small.perSec,
    target: "≈ 1 (O(workers), not O(splits))",
  });
}
