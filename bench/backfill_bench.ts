// Backfill work-order benchmark (issue 25): a skewed backfill run by
// splitlease with and without weights and by a JetStream work queue, on the
// same seeded input, one nats-server over WebSocket, 4 worker processes
// (bench/backfill_worker.ts, Deno) of 2 lanes each.
//
//   npm run bench -- backfill
//
// The input: SPLITS splits of lognormal size (median MEDIAN records, σ 1.5,
// seeded) plus one of 20 × the median placed late in the plan (at 5/8 of
// it), each record costing MS_PER_RECORD ms of sleep. Reported per run:
//  - makespan / ideal: from the first start to the last completion, against
//    total work / lanes; and against the largest-first floor (list
//    scheduling heaviest first on the same lanes, computed here);
//  - the heaviest split's start, after the first start;
//  - start-order inversions: pairs of splits started in the opposite order
//    to the plan (the dealing order: plan order without weights, heaviest
//    first with them), in all and after the first start of every lane (the
//    first grants, or a queue's first pulls, race each other);
//  - moves of running splits: starts of a split beyond its first.
// The work queue publishes the splits in plan order (it has no weights).
//
// Env knobs: BENCH_BACKFILL_SEED [25], BENCH_BACKFILL_SPLITS [64],
// BENCH_BACKFILL_MEDIAN [400], BENCH_BACKFILL_MS_PER_RECORD [2],
// BENCH_BACKFILL_SYSTEMS [weights,plain,jetstream].
import { wsconnect } from "@nats-io/nats-core";
import { AckPolicy, jetstream, jetstreamManager, RetentionPolicy } from "@nats-io/jetstream";
import { setupKinds, startNats } from "./_servers.ts";
import { result } from "./_common.ts";
import { bin, Child, fileStamp, sleep } from "./_procs.ts";

type Run = "weights" | "plain" | "jetstream";
const num = (k: string, d: number) => Number(Deno.env.get(k) ?? d);
const SEED = num("BENCH_BACKFILL_SEED", 25);
const N = num("BENCH_BACKFILL_SPLITS", 64);
const MEDIAN = num("BENCH_BACKFILL_MEDIAN", 400);
const MS = num("BENCH_BACKFILL_MS_PER_RECORD", 2);
const RUNS = (Deno.env.get("BENCH_BACKFILL_SYSTEMS") ?? "weights,plain,jetstream").split(",") as Run[];
const PROCS = 4, LANES = 2;

/** mulberry32: a seeded uniform in [0, 1). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The input: records per split, in plan order. */
export function skewedSizes(seed: number, n: number, median: number): number[] {
  const r = rng(seed);
  const sizes: number[] = [];
  for (let i = 0; i < n; i++) {
    const z = Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
    sizes.push(Math.max(1, Math.round(median * Math.exp(1.5 * z))));
  }
  sizes.splice(Math.floor((n * 5) / 8), 0, 20 * median);
  return sizes;
}

/** Makespan of list scheduling `durations` in the given order on `lanes` lanes. */
export function listSchedule(durations: number[], lanes: number): number {
  const free = Array.from({ length: lanes }, () => 0);
  for (const d of durations) {
    let k = 0;
    for (let j = 1; j < lanes; j++) if (free[j] < free[k]) k = j;
    free[k] += d;
  }
  return Math.max(...free);
}

/** Pairs started in the opposite order to `rank`. */
export function inversions(order: string[], rank: (id: string) => number): number {
  let n = 0;
  for (let i = 0; i < order.length; i++) for (let j = i + 1; j < order.length; j++) if (rank(order[i]) > rank(order[j])) n++;
  return n;
}

const sizes = skewedSizes(SEED, N, MEDIAN);
const durations = sizes.map((s) => s * MS);
const total = durations.reduce((a, b) => a + b, 0);
const lanes = PROCS * LANES;
const ideal = total / lanes;
const lptFloor = listSchedule([...durations].sort((a, b) => b - a), lanes);
const planFloor = listSchedule(durations, lanes);
const heaviest = sizes.indexOf(Math.max(...sizes));
console.log(
  `backfill bench: ${sizes.length} splits (seed ${SEED}, median ${MEDIAN} records, σ 1.5, one of ${20 * MEDIAN} at #${heaviest}), ` +
    `${MS} ms per record, ${PROCS} processes × ${LANES} lanes; ideal ${(ideal / 1000).toFixed(2)} s, ` +
    `largest-first floor ${(lptFloor / 1000).toFixed(2)} s (${(lptFloor / ideal).toFixed(2)}×), plan-order list schedule ${(planFloor / 1000).toFixed(2)} s (${
      (planFloor / ideal).toFixed(2)
    }×)`,
);

const kind = setupKinds()[0];
await using server = await startNats(kind);
const stamp = fileStamp().replace(/[^0-9A-Za-z]/g, "").slice(0, 15);
const nc = await wsconnect({ servers: server.url });
const jsm = await jetstreamManager(nc);
let runNo = 0;

async function runOnce(run: Run): Promise<void> {
  const name = `backfill${stamp}r${++runNo}`;
  const system = run === "jetstream" ? "jetstream" : "splitlease";
  if (system === "jetstream") {
    await jsm.streams.add({ name, subjects: [`backfill.${name}.task`], retention: RetentionPolicy.Workqueue });
    await jsm.consumers.add(name, { durable_name: "workers", ack_policy: AckPolicy.Explicit, ack_wait: 300e9, max_ack_pending: 1000 });
    const js = jetstream(nc);
    for (let i = 0; i < sizes.length; i++) await js.publish(`backfill.${name}.task`, String(i));
  }
  const ws = Array.from({ length: PROCS }, (_, k) =>
    new Child(`${run}-${k}`, bin("deno"), ["run", "-A", "bench/backfill_worker.ts"], {
      BACKFILL: JSON.stringify({ system, id: `w${k}`, natsUrl: server.url, name, lanes: LANES, msPerRecord: MS, sizes, weights: run === "weights" }),
    })
  );
  try {
    await Promise.all(ws.map((w) => w.next((m) => m.ev === "ready" || m.ev === "error", 60_000, "ready")));
    const err = ws.flatMap((w) => w.msgs).find((m) => m.ev === "error");
    if (err) throw new Error(err.error);
    await sleep(200); // every member seen by the leader before the plan is written
    await Promise.all(ws.map((w) => w.send({ cmd: "go" })));
    const deadline = performance.now() + 20 * planFloor + 60_000;
    const done = () => new Set(ws.flatMap((w) => w.msgs).filter((m) => m.ev === "done").map((m) => m.id)).size;
    while (done() < sizes.length) {
      if (performance.now() > deadline) throw new Error(`${run}: ${done()}/${sizes.length} done in time`);
      const e = ws.flatMap((w) => w.msgs).find((m) => m.ev === "error");
      if (e) throw new Error(`${run}: ${e.error}`);
      await sleep(50);
    }
    const msgs = ws.flatMap((w) => w.msgs);
    const starts = msgs.filter((m) => m.ev === "started").sort((a, b) => a.at - b.at);
    const first = new Map<string, number>();
    for (const s of starts) if (!first.has(s.id)) first.set(s.id, s.at);
    const moves = starts.length - first.size;
    const t0 = starts[0].at;
    const end = Math.max(...msgs.filter((m) => m.ev === "done").map((m) => m.at));
    const makespan = end - t0;
    const order = [...first.keys()];
    const index = (id: string) => Number(id.slice(1));
    // The dealing order: heaviest first with weights (equal weights in plan order), plan order otherwise.
    const rank = run === "weights" ? (id: string) => -sizes[index(id)] + index(id) / (sizes.length + 1) : index;
    const inv = inversions(order, rank);
    // Past the first start of every lane: what the dealing does, not how the first grants race each other.
    const later = inversions(order.slice(lanes), rank);
    const heavyAt = first.get(`b${heaviest}`)! - t0;
    if (Deno.env.get("BENCH_BACKFILL_VERBOSE")) {
      console.log(starts.map((s) => `${s.id}@${(s.at - t0).toFixed(0)}`).join(" "));
    }
    const label = run === "weights" ? "splitlease, weights" : run === "plain" ? "splitlease, no weights" : "JetStream work queue";
    console.log(
      `${label}: makespan ${(makespan / 1000).toFixed(2)} s = ${(makespan / ideal).toFixed(2)}× ideal, ${(makespan / lptFloor).toFixed(3)}× largest-first floor; ` +
        `heaviest started at +${heavyAt.toFixed(0)} ms; ${inv} start-order inversions (${later} after the first ${lanes} starts); ${moves} moves of running splits`,
    );
    result({ bench: "backfill", metric: `${label}: makespan / ideal`, value: `${(makespan / 1000).toFixed(2)} s`, ratio: makespan / ideal });
    result({
      bench: "backfill",
      metric: `${label}: makespan / largest-first floor`,
      value: `${(makespan / 1000).toFixed(2)} s`,
      ratio: makespan / lptFloor,
      ...(run === "weights" ? { target: "≤ 1.05" } : {}),
    });
    result({
      bench: "backfill",
      metric: `${label}: heaviest split started after the first`,
      value: `${heavyAt.toFixed(0)} ms`,
      ...(run === "weights" ? { target: "≤ 100 ms" } : {}),
    });
    result({ bench: "backfill", metric: `${label}: start-order inversions`, value: String(inv), ...(run === "plain" ? { target: "≤ 2 × the work queue's" } : {}) });
    result({ bench: "backfill", metric: `${label}: inversions after the first ${lanes} starts`, value: String(later) });
    if (system === "splitlease") result({ bench: "backfill", metric: `${label}: moves of running splits`, value: String(moves), target: "0" });
  } finally {
    await Promise.all(ws.map((w) => w.stop(5000)));
    if (system === "jetstream") await jsm.streams.delete(name).catch(() => {});
  }
}

for (const run of RUNS) await runOnce(run);
await nc.close();
