// Backfill benchmark (issues 25 and 23): a skewed backfill run by splitlease
// with and without weights, by splitlease cutting running splits for idle
// lanes (a `split` hook), by a JetStream work queue and by BullMQ, on the
// same seeded input, one nats-server over WebSocket (and a Redis for
// BullMQ), 4 worker processes of 2 lanes each (bench/backfill_worker.ts,
// Deno; bench/backfill_bullmq_worker.ts, Node). It asks: does cutting
// running splits beat static splitlease and the queues a user would pick,
// on a skewed backfill, with a crash?
//
//   npm run bench -- backfill
//   BENCH_BACKFILL_KILL=1 npm run bench -- backfill      (the crash only)
//   deno run -A bench/backfill_bench.ts --kill            (same, run directly)
//
// The input: every split is a range of record ids, processed in batches of
// BATCH records, each record costing MS_PER_RECORD ms of sleep (no CPU).
//  - skewed: SPLITS splits of lognormal size (median MEDIAN records, σ 1.5,
//    seeded) plus one of HEAVY × the median placed late in the plan (at 5/8
//    of it);
//  - uniform: SPLITS splits of equal size, the same total: the cost of
//    cutting when nothing is skewed.
// Configurations (BENCH_BACKFILL_CONFIGS): skewed, uniform, kill (skewed,
// and at 50 % of the ideal time after the first start one worker process is
// SIGKILLed: the one whose running splits have the most records left, the
// worst single crash for each system; with weights it was the splitlease
// leader in every run so far, holding the two heaviest splits),
// kill-follower (the same, the splitlease leader spared: a crash without an
// election; splitlease only), and the same on uniform input (uniform+kill,
// uniform+kill-follower).
//
// Systems (BENCH_BACKFILL_SYSTEMS):
//  - cuts: splitlease, weights = sizes, and a source whose `split` hook
//    cuts the remaining ids [pos, to) of a running split into `parts` ranges
//    (pos: the end of the batch in flight, at or after the committed
//    watermark; declined below 2 batches a piece); commits carry
//    estimate { left, total, unit: "ids" };
//  - cuts-pg: the same on PostgreSQL (a PostgresStore per worker, on the
//    PostgreSQL `npm run bench` started: PG_URL), next to the NATS runs;
//  - cuts-plain: the same without weights (what a user who cannot size
//    the splits gets);
//  - weights / plain: splitlease with / without weights, no hook;
//  - jetstream: a work-queue stream, one message per split in plan order, a
//    shared durable pull consumer, one next() per free lane, ack_wait LEASE
//    with working() every third of it;
//  - bullmq: one job per split in plan order, concurrency 2 per process,
//    lockDuration LEASE (renewed every half), stalledInterval LEASE;
//  - none: no coordination at all (not in the kill configurations): the
//    bench deals the splits in plan order over the workers' stdin, one per
//    free lane; the same processing and per-batch reporting, no store, no
//    queue. Coordination CPU per split is a system's CPU per split less
//    this one's (the `coordination CPU` rows, against the work queue's).
// splitlease commits after every batch and resumes from its watermark; a
// queue redelivers a whole job / message (from its first record) once its
// ack wait / lock expired. splitlease's leaseMs is LEASE too. BullMQ's
// Redis: the one `npm run bench` started (REDIS_PORT), else one started
// here (scripts/services.mjs startRedis: Debian's redis-server, installed
// with apt-get as root when missing).
//
// Reported per configuration and system (one table at the end):
//  - makespan / ideal: from the first start to the last completion (a
//    splitlease complete(), a queue's confirmed ack / completed job),
//    against total work / lanes; and against the largest-first floor (list
//    scheduling heaviest first on the same lanes);
//  - records replayed (processed more than once) and lost (never
//    processed): every batch a worker finished is reported; lost must be 0
//    (the bench fails otherwise);
//  - cuts: the leader's asks, cuts written, cuts declined;
//  - CPU per planned split: CPU time (user + system, /proc/<pid>/stat) of
//    the worker processes and the server (nats-server; Redis for BullMQ,
//    from INFO) from the go to the end, over the planned splits. The
//    records' waits are sleeps and cost none; what remains is coordination
//    plus the bench's own per-batch reporting (one JSON line per batch, the
//    same in every system); Deno workers for splitlease and JetStream, Node
//    for BullMQ;
//  - skewed: the heaviest split's start, start-order inversions (pairs of
//    planned splits started in the opposite order to the dealing order),
//    moves of running splits (starts of a split beyond its first);
//  - idle lane-seconds while runnable splits existed: at each moment
//    min(idle lanes of the live processes, runnable splits), a split being
//    runnable from its plan (a residual: from its cut) until done, except
//    while it runs; twice: the killed process's splits runnable from the
//    kill, and not (they wait out the lease in any system);
//  - with a kill: the crash floor, the makespan of perfect work-stealing
//    that loses the killed lanes at the kill,
//      floor = (kill − first start) + (records not processed at the kill)
//              × MS_PER_RECORD ÷ (lanes − the killed process's lanes)
//    (0.5 + 0.5 × 8/6 = 1.17 × ideal for a kill at 50 % of an ideal run),
//    the makespan against it, the time from the kill to the first start by
//    a survivor, and the largest burst of starts within 10 ms after it;
//  - cuts: when the leader first asked, the parts of each ask, and the asks
//    for splits already at their end (done, not running, or whose batch in
//    flight reaches the end) (bench/backfill_timeline.ts computes these);
//  - nats-server's messages in and out per planned split.
// Every row also lands in bench/results/backfill-<time>.json.
//
// Env knobs: BENCH_BACKFILL_SEED [25], BENCH_BACKFILL_SPLITS [64],
// BENCH_BACKFILL_MEDIAN [400], BENCH_BACKFILL_HEAVY [20],
// BENCH_BACKFILL_MS_PER_RECORD [2], BENCH_BACKFILL_BATCH [100],
// BENCH_BACKFILL_LEASE_MS [5000], BENCH_BACKFILL_COMMIT_INTERVAL_MS [0] (splitlease
// workers' commitIntervalMs: progress written at most that often per lane),
// BENCH_BACKFILL_IDLE_MS [3000] (before the go, the joined fleet idles this
// long: its CPU per second, workers + server, is printed as "idle CPU"),
// BENCH_BACKFILL_CONFIGS [skewed,uniform,kill,kill-follower],
// BENCH_BACKFILL_KILL [0] (1: the kill configurations only),
// BENCH_BACKFILL_SYSTEMS [cuts,cuts-plain,weights,plain,jetstream,bullmq,none],
// BENCH_BACKFILL_DENO_FLAGS (extra flags of the Deno workers, e.g. "--cpu-prof
// --cpu-prof-dir=/tmp/prof"),
// BENCH_BACKFILL_VERBOSE (per run: the start order, every cut answer and
// ask, warnings, leadership changes).
import { wsconnect } from "@nats-io/nats-core";
import { AckPolicy, jetstream, jetstreamManager, RetentionPolicy } from "@nats-io/jetstream";
import { pgCpuSeconds, setupKinds, startNats } from "./_servers.ts";
import { result } from "./_common.ts";
import { bin, Child, cpuSeconds, fileStamp, nodeBundle, onInterrupt, redisDeleteKeys, sleep, wallNow, writeResults } from "./_procs.ts";
import { crashFloor, cutAsks, type Ev, idleLaneTime, largestBurst } from "./backfill_timeline.ts";
import { startRedis } from "../scripts/services.mjs";

type System = "cuts" | "cuts-pg" | "cuts-plain" | "weights" | "plain" | "jetstream" | "bullmq" | "none";
type Input = "skewed" | "uniform";
interface Config {
  name: string;
  input: Input;
  /** Whether a worker process is killed: any (the busiest), or the busiest splitlease follower. */
  kill: false | "any" | "follower";
}
const num = (k: string, d: number) => Number(Deno.env.get(k) ?? d);
const SEED = num("BENCH_BACKFILL_SEED", 25);
const N = num("BENCH_BACKFILL_SPLITS", 64);
const MEDIAN = num("BENCH_BACKFILL_MEDIAN", 400);
const HEAVY = num("BENCH_BACKFILL_HEAVY", 20);
const MS = num("BENCH_BACKFILL_MS_PER_RECORD", 2);
const BATCH = num("BENCH_BACKFILL_BATCH", 100);
const LEASE = num("BENCH_BACKFILL_LEASE_MS", 5000);
const COMMIT_INTERVAL = num("BENCH_BACKFILL_COMMIT_INTERVAL_MS", 0);
const IDLE_MS = num("BENCH_BACKFILL_IDLE_MS", 3000);
const PG_URL = Deno.env.get("PG_URL");
const PG_PID = Number(Deno.env.get("PG_PID") ?? -1);
const SYSTEMS = (Deno.env.get("BENCH_BACKFILL_SYSTEMS") ?? `cuts,${PG_URL ? "cuts-pg," : ""}cuts-plain,weights,plain,jetstream,bullmq,none`).split(",")
  .filter(Boolean) as System[];
/** Extra Deno flags for the Deno workers (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"). */
const DENO_FLAGS = (Deno.env.get("BENCH_BACKFILL_DENO_FLAGS") ?? "").split(" ").filter(Boolean);
const killOnly = Deno.env.get("BENCH_BACKFILL_KILL") === "1" || Deno.args.includes("--kill");
const CONFIGS: Config[] = (killOnly ? "kill,kill-follower" : Deno.env.get("BENCH_BACKFILL_CONFIGS") ?? "skewed,uniform,kill,kill-follower").split(",").filter(Boolean)
  .map((c) => {
    const m = /^(skewed|uniform)?\+?(kill(-follower)?)?$/.exec(c.trim());
    if (!m || (!m[1] && !m[2])) {
      throw new Error(`BENCH_BACKFILL_CONFIGS: unknown configuration ${JSON.stringify(c)} (skewed, uniform, kill, kill-follower, uniform+kill, …)`);
    }
    return { name: c.trim(), input: (m[1] ?? "skewed") as Input, kill: m[2] ? (m[3] ? "follower" : "any") : false } as Config;
  });
const VERBOSE = !!Deno.env.get("BENCH_BACKFILL_VERBOSE");
const PROCS = 4, LANES = 2;
const lanes = PROCS * LANES;
const LABEL: Record<System, string> = {
  cuts: "splitlease, cuts",
  "cuts-pg": "splitlease on PostgreSQL, cuts",
  "cuts-plain": "splitlease, cuts, no weights",
  weights: "splitlease, weights",
  plain: "splitlease, no weights",
  jetstream: "JetStream work queue",
  bullmq: "BullMQ",
  none: "no coordination",
};
const isSplitlease = (s: System) => s !== "jetstream" && s !== "bullmq" && s !== "none";

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

/** The skewed input: records per split, in plan order. */
export function skewedSizes(seed: number, n: number, median: number, heavy = 20): number[] {
  const r = rng(seed);
  const sizes: number[] = [];
  for (let i = 0; i < n; i++) {
    const z = Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
    sizes.push(Math.max(1, Math.round(median * Math.exp(1.5 * z))));
  }
  sizes.splice(Math.floor((n * 5) / 8), 0, heavy * median);
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

/** Records processed more than once and never processed, from the batches reported. */
export function coverage(batches: { from: number; to: number }[], total: number): { replayed: number; lost: number; firstLost: number } {
  const hits = new Uint16Array(total);
  for (const b of batches) for (let i = b.from; i < b.to; i++) hits[i]++;
  let replayed = 0, lost = 0, firstLost = -1;
  for (let i = 0; i < total; i++) {
    if (hits[i] === 0) {
      lost++;
      if (firstLost < 0) firstLost = i;
    } else replayed += hits[i] - 1;
  }
  return { replayed, lost, firstLost };
}

interface Workload {
  input: Input;
  sizes: number[];
  /** Split i is ids [splits[i].from, splits[i].to). */
  splits: { from: number; to: number }[];
  total: number;
  ideal: number;
  lptFloor: number;
  planFloor: number;
  heaviest: number;
}
function workload(input: Input): Workload {
  const skewed = skewedSizes(SEED, N, MEDIAN, HEAVY);
  const sizes = input === "skewed" ? skewed : Array.from({ length: N }, () => Math.round(skewed.reduce((a, b) => a + b, 0) / N));
  let at = 0;
  const splits = sizes.map((s) => ({ from: at, to: (at += s) }));
  const durations = sizes.map((s) => s * MS);
  const ideal = durations.reduce((a, b) => a + b, 0) / lanes;
  return {
    input,
    sizes,
    splits,
    total: at,
    ideal,
    lptFloor: listSchedule([...durations].sort((a, b) => b - a), lanes),
    planFloor: listSchedule(durations, lanes),
    heaviest: sizes.indexOf(Math.max(...sizes)),
  };
}
const workloads = new Map<Input, Workload>(["skewed", "uniform"].map((i) => [i as Input, workload(i as Input)]));
for (const w of workloads.values()) {
  if (!CONFIGS.some((c) => c.input === w.input)) continue;
  console.log(
    `backfill bench, ${w.input} input: ${w.sizes.length} splits, ${w.total} records (${
      w.input === "skewed" ? `seed ${SEED}, median ${MEDIAN} records, σ 1.5, one of ${HEAVY * MEDIAN} at #${w.heaviest}` : `${w.sizes[0]} records each`
    }), ${MS} ms per record in batches of ${BATCH}, ${PROCS} processes × ${LANES} lanes; ideal ${(w.ideal / 1000).toFixed(2)} s, ` +
      `largest-first floor ${(w.lptFloor / 1000).toFixed(2)} s (${(w.lptFloor / w.ideal).toFixed(3)}×), plan-order list schedule ${(w.planFloor / 1000).toFixed(2)} s (${
        (w.planFloor / w.ideal).toFixed(3)
      }×)`,
  );
}
console.log(
  `configurations ${CONFIGS.map((c) => c.name).join(", ")}; systems ${SYSTEMS.join(", ")}; ${COMMIT_INTERVAL ? `splitlease commitIntervalMs ${COMMIT_INTERVAL}; ` : ""}failure detection: splitlease leaseMs ${LEASE}, ` +
    `JetStream ack_wait ${LEASE} ms (working() every ${(LEASE / 3).toFixed(0)} ms), BullMQ lockDuration ${LEASE} ms (renewed every ${LEASE / 2} ms), stalledInterval ${LEASE} ms, maxStalledCount 1`,
);

const kind = setupKinds()[0];
await using server = await startNats(kind);
const stamp = fileStamp().replace(/[^0-9A-Za-z]/g, "").slice(0, 15);
const nc = await wsconnect({ servers: server.url });
const jsm = await jetstreamManager(nc);
let runNo = 0;

// Redis for BullMQ: the one `npm run bench` started (REDIS_PORT), or one of our own (scripts/services.mjs).
let redisPort = Number(Deno.env.get("REDIS_PORT") ?? 0);
let stopRedis: (() => Promise<void>) | undefined;
if (SYSTEMS.includes("bullmq") && !redisPort) {
  const r = await startRedis({ log: console.log });
  if (r.error || !r.stop || !r.killSync) throw new Error(`Redis: ${r.error}`);
  const { stop, killSync } = r;
  redisPort = r.port;
  stopRedis = stop;
  Deno.env.set("REDIS_PORT", String(redisPort));
  onInterrupt(stop);
  globalThis.addEventListener("unload", () => killSync());
  console.log(`Redis started for BullMQ at ${r.url}`);
}
const bullEntry = SYSTEMS.includes("bullmq") ? await nodeBundle("bench/backfill_bullmq_worker.ts") : "";

/** CPU ms Redis used so far (INFO cpu), over RESP on a connection of its own. */
async function redisCpuMs(): Promise<number> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: redisPort });
  try {
    await conn.write(new TextEncoder().encode("*2\r\n$4\r\nINFO\r\n$3\r\ncpu\r\n"));
    let text = "";
    const buf = new Uint8Array(4096);
    while (!/used_cpu_user:[\d.]+\r\n/.test(text) || !/used_cpu_sys:[\d.]+\r\n/.test(text)) {
      const n = await conn.read(buf);
      if (n === null) break;
      text += new TextDecoder().decode(buf.subarray(0, n));
    }
    const f = (k: string) => Number(new RegExp(`${k}:([\\d.]+)`).exec(text)?.[1] ?? NaN);
    return (f("used_cpu_user") + f("used_cpu_sys")) * 1000;
  } finally {
    conn.close();
  }
}

interface Row {
  config: string;
  system: System;
  makespan: number;
  ideal: number;
  lpt: number;
  replayed: number;
  lost: number;
  asked: number;
  cuts: number;
  declined: number;
  moves: number;
  cpuPerSplit: number;
  /** CPU ms of the worker processes and of the server (nats-server or Redis), go to end. */
  workerCpuMs?: number;
  serverCpuMs?: number;
  /** nats-server's messages in and out per planned split (NATS systems). */
  msgsPerSplit?: { in: number; out: number };
  /** CPU (workers + server, % of a core) of the joined fleet idling before the go. */
  idleCpuPct?: number;
  /** The crash floor (ms; see backfill_timeline.ts crashFloor), with a kill. */
  floor?: number;
  /** Lane-ms idle while runnable splits existed: all (the killed splits runnable from the kill), unstarted (not). */
  idleAll?: number;
  idleUnstarted?: number;
  /** With a kill: ms from it to the first start by a survivor; the largest burst of starts (within 10 ms) after it. */
  survivorStartMs?: number;
  burst?: number;
  burstAtMs?: number;
  /** The first cut ask (ms after the first start), the parts of each ask, asks for splits at their end. */
  firstAskMs?: number;
  parts?: number[];
  asksAtEnd?: number;
  asksUnstarted?: number;
  victim?: string;
  error?: string;
}

async function runOnce(config: Config, system: System): Promise<Row> {
  const w = workloads.get(config.input)!;
  const { sizes, splits } = w;
  const name = `backfill${stamp}r${++runNo}`;
  const label = LABEL[system];
  const tag = config.name === "skewed" ? "" : `${config.name}: `;
  if (system === "jetstream") {
    await jsm.streams.add({ name, subjects: [`backfill.${name}.task`], retention: RetentionPolicy.Workqueue });
    await jsm.consumers.add(name, { durable_name: "workers", ack_policy: AckPolicy.Explicit, ack_wait: LEASE * 1e6, max_ack_pending: 1000 });
  }
  const base = { natsUrl: server.url, name, lanes: LANES, msPerRecord: MS, batch: BATCH, splits };
  const ws = Array.from({ length: PROCS }, (_, k) =>
    system === "bullmq"
      ? new Child(`${system}-${k}`, bin("node"), [bullEntry], {
        REDIS_PORT: String(redisPort),
        BACKFILL: JSON.stringify({ ...base, id: `w${k}`, lockMs: LEASE, stalledMs: LEASE }),
      })
      : new Child(`${system}-${k}`, bin("deno"), ["run", "-A", ...DENO_FLAGS, "bench/backfill_worker.ts"], {
        BACKFILL: JSON.stringify({
          ...base,
          system: system === "jetstream" || system === "none" ? system : "splitlease",
          id: `w${k}`,
          weights: system === "weights" || system === "cuts" || system === "cuts-pg",
          cuts: system === "cuts" || system === "cuts-plain" || system === "cuts-pg",
          ...(system === "cuts-pg" ? { pgUrl: PG_URL } : {}),
          leaseMs: LEASE,
          commitIntervalMs: COMMIT_INTERVAL,
          ackWaitMs: LEASE,
        }),
      })
  );
  // What each process is running now (lane → records left), to pick the crash's victim.
  const running = ws.map(() => new Map<string, { id: string; pos: number; to: number }>());
  let firstAt = Infinity;
  ws.forEach((c, k) => {
    c.onMsg = (m) => {
      const r = running[k];
      if (m.ev === "started") {
        r.set(m.lane, { id: m.id, pos: m.from, to: m.to });
        firstAt = Math.min(firstAt, m.at);
      }
      else if (m.ev === "processed" && r.has(m.lane)) r.get(m.lane)!.pos = m.to;
      else if (m.ev === "cut" && !m.declined && r.has(m.lane)) r.get(m.lane)!.to = m.keep.to;
      else if (m.ev === "ended") r.delete(m.lane);
    };
  });
  let killed = -1, killedAt = 0, killedCpu = 0, victimNote = "";
  const held: string[] = [];
  try {
    await Promise.all(ws.map((c) => c.next((m) => m.ev === "ready" || m.ev === "error", 60_000, "ready")));
    const err = ws.flatMap((c) => c.msgs).find((m) => m.ev === "error");
    if (err) throw new Error(err.error);
    await sleep(200); // every member seen by the leader before the plan is written
    const pids = ws.map((c) => c.msgs.find((m) => m.ev === "ready")!.pid as number);
    // The fleet joined and idle (no plan, no message published yet): what it costs per second doing nothing.
    const idleCpu = async () => pids.reduce((n, p) => n + cpuSeconds(p), 0) * 1000 + (system === "bullmq" ? await redisCpuMs() : server.cpuSeconds() * 1000);
    const idleFrom = await idleCpu(), idleT0 = performance.now();
    await sleep(IDLE_MS);
    const idleCpuPct = IDLE_MS > 0 ? ((await idleCpu()) - idleFrom) / (performance.now() - idleT0) * 100 : NaN;
    const cpu0 = pids.map(cpuSeconds);
    const serverCpu = () => system === "bullmq" ? redisCpuMs() : Promise.resolve((system === "cuts-pg" ? pgCpuSeconds(PG_PID) : server.cpuSeconds()) * 1000);
    const server0 = await serverCpu();
    const varz0 = await server.varz();
    if (system === "jetstream") {
      const js = jetstream(nc);
      for (let i = 0; i < sizes.length; i++) await js.publish(`backfill.${name}.task`, String(i));
    } else if (system === "bullmq") {
      await ws[0].send({ cmd: "publish" });
      await ws[0].next((m) => m.ev === "published" || m.ev === "error", 30_000, "published");
    }
    await Promise.all(ws.map((c) => c.send({ cmd: "go" })));
    if (system === "none") {
      // The bench deals the splits in plan order, one per free lane: no store, no queue, nothing to coordinate.
      const queue = sizes.map((_, i) => i);
      const deal = (k: number) => {
        const i = queue.shift();
        if (i !== undefined) void ws[k].send({ cmd: "run", i });
      };
      ws.forEach((c, k) => {
        const track = c.onMsg;
        c.onMsg = (m) => {
          track?.(m);
          if (m.ev === "done") deal(k);
        };
      });
      for (let l = 0; l < LANES; l++) ws.forEach((_, k) => deal(k));
    }
    const deadline = performance.now() + 20 * w.planFloor + 60_000 + (config.kill ? 6 * LEASE : 0);
    const all = () => ws.flatMap((c) => c.msgs);
    const doneIds = () => new Set(all().filter((m) => m.ev === "done").map((m) => m.id));
    const finished = () => ws.every((c, k) => k === killed || c.msgs.some((m) => m.ev === "finished"));
    for (;;) {
      if (isSplitlease(system) ? finished() : doneIds().size >= sizes.length) break;
      if (performance.now() > deadline) throw new Error(`${doneIds().size}/${sizes.length} planned splits done in time`);
      const e = all().find((m) => m.ev === "error");
      if (e) throw new Error(e.error);
      if (config.kill && killed < 0 && wallNow() >= firstAt + w.ideal / 2) {
        const left = running.map((r) => [...r.values()].reduce((n, l) => n + l.to - l.pos, 0));
        const leads = ws.map((c) => c.msgs.findLast((m) => m.ev === "leader")?.leader === true);
        const eligible = left.map((n, k) => (config.kill === "follower" && leads[k] ? -1 : n));
        killed = eligible.indexOf(Math.max(...eligible));
        if (leads[killed]) held.push("(the leader)");
        for (const l of running[killed].values()) held.unshift(`${l.id} (${l.to - l.pos} left)`);
        killedCpu = cpuSeconds(pids[killed]);
        killedAt = wallNow();
        ws[killed].kill();
        victimNote = `killed w${killed} at +${(killedAt - firstAt).toFixed(0)} ms, running ${held.join(", ") || "nothing"}`;
      }
      await sleep(50);
    }
    const fin = all().filter((m) => m.ev === "finished");
    const bad = fin.find((m) => m.outcome !== "drained");
    if (bad) throw new Error(`a worker ended ${bad.outcome}`);
    const cpu1 = pids.map((p, k) => (k === killed ? killedCpu : cpuSeconds(p)));
    const server1 = await serverCpu();
    const varz1 = await server.varz();
    // nats-server's messages in and out per planned split (the bench's own connection is idle meanwhile).
    const msgsPerSplit = { in: (varz1.in_msgs - varz0.in_msgs) / sizes.length, out: (varz1.out_msgs - varz0.out_msgs) / sizes.length };
    const workerCpuMs = cpu1.reduce((n, c, k) => n + (c - cpu0[k]) * 1000, 0);
    const serverCpuMs = server1 - server0;

    const msgs = all();
    const starts = msgs.filter((m) => m.ev === "started").sort((a, b) => a.at - b.at);
    const first = new Map<string, number>();
    for (const s of starts) if (!first.has(s.id)) first.set(s.id, s.at);
    const moves = starts.length - first.size;
    const t0 = starts[0].at;
    const end = Math.max(...msgs.filter((m) => m.ev === "done").map((m) => m.at));
    const makespan = end - t0;
    const cov = coverage(msgs.filter((m) => m.ev === "processed") as unknown as { from: number; to: number }[], w.total);
    const logs = msgs.filter((m) => m.ev === "log");
    const asks = logs.filter((m) => m.msg === "Asked for a cut");
    const performed = logs.filter((m) => m.msg === "Cut a split's remaining work" && m.fields?.event === "cut").length;
    const declined = logs.filter((m) => m.msg === "Cut declined").length;
    const answers = msgs.filter((m) => m.ev === "cut");
    const planned = [...first.keys()].filter((id) => /^b\d+$/.test(id));
    const residualStarts = first.size - planned.length;
    const index = (id: string) => Number(id.slice(1));
    // The dealing order: heaviest first with weights (equal weights in plan order), plan order otherwise.
    const weighted = system === "weights" || system === "cuts" || system === "cuts-pg";
    const rank = weighted ? (id: string) => -sizes[index(id)] + index(id) / (sizes.length + 1) : index;
    const inv = inversions(planned, rank);
    // Past the first start of every lane: what the dealing does, not how the first grants race each other.
    const later = inversions(planned.slice(lanes), rank);
    const heavyAt = first.get(`b${w.heaviest}`)! - t0;
    const cpuPerSplit = (workerCpuMs + serverCpuMs) / sizes.length;
    const evs = ws.flatMap((c, k) => c.msgs.map((m) => ({ ...m, at: m.at ?? m.arrivedAt, proc: k }))) as unknown as Ev[];
    const idle = idleLaneTime({ evs, procs: PROCS, lanesPerProc: LANES, t0, end, killed, killedAt });
    const floor = killed >= 0
      ? crashFloor({ total: w.total, msPerRecord: MS, lanes, lostLanes: LANES, t0, killedAt, processed: evs.filter((e) => e.ev === "processed") as never })
      : undefined;
    const afterKill = killed >= 0 ? evs.filter((e) => e.ev === "started" && e.proc !== killed && e.at > killedAt).map((e) => e.at) : [];
    const survivorStartMs = killed >= 0 ? Math.min(...afterKill) - killedAt : undefined;
    const burst = killed >= 0 ? largestBurst(afterKill, killedAt) : undefined;
    const ca = cutAsks(evs, BATCH);
    let recovery = "";
    if (killed >= 0) {
      const ids = held.filter((h) => !h.startsWith("(")).map((h) => h.split(" ")[0]);
      const restarts = ids.map((id) => starts.find((s) => s.id === id && s.at > killedAt)?.at);
      const worst = Math.max(...restarts.map((a) => (a === undefined ? NaN : a - killedAt)));
      recovery = `; its splits restarted elsewhere after ${Number.isNaN(worst) ? "?" : `${worst.toFixed(0)} ms`} (worst)`;
    }
    if (VERBOSE) {
      console.log(starts.map((s) => `${s.id}@${(s.at - t0).toFixed(0)}`).join(" "));
      for (const a of answers) {
        console.log(
          `  cut ${a.id} @+${(a.at - t0).toFixed(0)} parts ${a.parts}, ${a.left} left: ${a.declined ? "declined" : `keep ${JSON.stringify(a.keep)} + ${JSON.stringify(a.residuals)}`}`,
        );
      }
      for (const a of asks) console.log(`  asked ${JSON.stringify(a.fields)} @+${(a.at - t0).toFixed(0)}`);
      ws.forEach((c, k) => {
        for (const l of c.msgs.filter((m) => m.ev === "log" && (m.level === "warn" || m.level === "error"))) {
          console.log(`  w${k} ${l.level} @+${(l.at - t0).toFixed(0)}: ${l.msg} ${JSON.stringify(l.fields)}`);
        }
        for (const l of c.msgs.filter((m) => m.ev === "leader")) console.log(`  w${k} ${l.leader ? "leads" : "stopped leading"} @+${(l.at - t0).toFixed(0)}`);
      });
    }
    console.log(
      `${tag}${label}: makespan ${(makespan / 1000).toFixed(2)} s = ${(makespan / w.ideal).toFixed(3)}× ideal, ${(makespan / w.lptFloor).toFixed(3)}× largest-first floor; ` +
        `${cov.replayed} records replayed, ${cov.lost} lost; ` +
        (isSplitlease(system) ? `${asks.length} cut asks, ${performed} cuts, ${declined} declined (first ask +${asks.length ? (asks[0].at - t0).toFixed(0) : "-"} ms), ${residualStarts} residual splits run; ` : "") +
        `heaviest started at +${heavyAt.toFixed(0)} ms; ${inv} start-order inversions (${later} after the first ${lanes} starts); ${moves} moves of running splits; ` +
        `CPU ${workerCpuMs.toFixed(0)} ms workers + ${serverCpuMs.toFixed(0)} ms ${system === "bullmq" ? "Redis" : system === "cuts-pg" ? "PostgreSQL" : "nats-server"} = ${cpuPerSplit.toFixed(1)} ms per split` +
        (system !== "bullmq" && system !== "cuts-pg" ? `; nats-server messages per split ${msgsPerSplit.in.toFixed(1)} in, ${msgsPerSplit.out.toFixed(1)} out` : "") +
        `; idle CPU before the go ${idleCpuPct.toFixed(1)} % of a core (${((idleCpuPct * makespan) / 100 / sizes.length).toFixed(1)} ms per split over the makespan)` +
        (victimNote ? `; ${victimNote}${recovery}` : ""),
    );
    if (cov.lost) console.log(`  LOST: ${cov.lost} records never processed (first: id ${cov.firstLost})`);
    console.log(
      `  idle lane-s while runnable splits existed ${(idle.all / 1000).toFixed(2)} (${(idle.unstarted / 1000).toFixed(2)} not counting the killed process's splits)` +
        (floor !== undefined
          ? `; crash floor ${(floor / 1000).toFixed(2)} s (makespan ${(makespan / floor).toFixed(3)}× it, floor ${(floor / w.ideal).toFixed(3)}× ideal); ` +
            `kill → first start by a survivor ${survivorStartMs!.toFixed(0)} ms; largest burst of starts after the kill ${burst!.n} within 10 ms at +${(burst!.at - killedAt).toFixed(0)} ms`
          : "") +
        (ca.times.length
          ? `; first cut ask +${(ca.times[0] - t0).toFixed(0)} ms, parts per ask ${ca.parts.join(",")}, ${ca.atEnd} asks for splits at their end, ${ca.unstarted} for splits not started yet`
          : ""),
    );
    result({
      bench: "backfill",
      metric: `${tag}${label}: makespan / ideal`,
      value: `${(makespan / 1000).toFixed(2)} s`,
      ratio: makespan / w.ideal,
      ...(system === "cuts" && !config.kill ? { target: "≤ 1.05" } : {}),
      ...(system === "cuts-pg" && !config.kill ? { target: "≤ 1.15" } : {}),
    });
    result({
      bench: "backfill",
      metric: `${tag}${label}: makespan / largest-first floor`,
      value: `${(makespan / 1000).toFixed(2)} s`,
      ratio: makespan / w.lptFloor,
      ...(system === "weights" && config.name === "skewed" ? { target: "≤ 1.05" } : {}),
    });
    result({ bench: "backfill", metric: `${tag}${label}: records replayed`, value: String(cov.replayed) });
    result({ bench: "backfill", metric: `${tag}${label}: records lost`, value: String(cov.lost), target: "0" });
    result({ bench: "backfill", metric: `${tag}${label}: CPU per planned split (workers + server)`, value: `${cpuPerSplit.toFixed(1)} ms` });
    result({
      bench: "backfill",
      metric: `${tag}${label}: idle lane-s while runnable splits existed`,
      value: `${(idle.all / 1000).toFixed(2)} (${(idle.unstarted / 1000).toFixed(2)} without the killed splits)`,
    });
    if (floor !== undefined) {
      result({
        bench: "backfill",
        metric: `${tag}${label}: makespan / crash floor`,
        value: `${(makespan / 1000).toFixed(2)} s vs ${(floor / 1000).toFixed(2)} s (${(floor / w.ideal).toFixed(3)}× ideal)`,
        ratio: makespan / floor,
        ...(system === "cuts" && config.kill === "any" ? { target: "≤ 1.05" } : {}),
      });
      result({
        bench: "backfill",
        metric: `${tag}${label}: kill → first start by a survivor; largest burst of starts after it`,
        value: `${survivorStartMs!.toFixed(0)} ms; ${burst!.n} within 10 ms at +${(burst!.at - killedAt).toFixed(0)} ms`,
      });
    }
    if (ca.times.length) {
      result({
        bench: "backfill",
        metric: `${tag}${label}: first cut ask; parts per ask; asks for splits at their end (not started yet)`,
        value: `+${(ca.times[0] - t0).toFixed(0)} ms of ${makespan.toFixed(0)}; ${ca.parts.join(",")}; ${ca.atEnd} (${ca.unstarted}) of ${ca.times.length}`,
      });
    }
    if (config.name === "skewed") {
      result({
        bench: "backfill",
        metric: `${label}: heaviest split started after the first`,
        value: `${heavyAt.toFixed(0)} ms`,
        ...(system === "weights" ? { target: "≤ 100 ms" } : {}),
      });
      result({ bench: "backfill", metric: `${label}: start-order inversions`, value: String(inv), ...(system === "plain" ? { target: "≤ 2 × the work queue's" } : {}) });
      result({ bench: "backfill", metric: `${label}: inversions after the first ${lanes} starts`, value: String(later) });
      if (isSplitlease(system)) result({ bench: "backfill", metric: `${label}: moves of running splits`, value: String(moves), target: "0" });
    }
    return {
      config: config.name,
      system,
      makespan,
      ideal: w.ideal,
      lpt: w.lptFloor,
      replayed: cov.replayed,
      lost: cov.lost,
      asked: asks.length,
      cuts: performed,
      declined,
      moves,
      cpuPerSplit,
      workerCpuMs,
      serverCpuMs,
      ...(system !== "bullmq" ? { msgsPerSplit } : {}),
      idleCpuPct,
      floor,
      idleAll: idle.all,
      idleUnstarted: idle.unstarted,
      survivorStartMs,
      burst: burst?.n,
      burstAtMs: burst ? burst.at - killedAt : undefined,
      firstAskMs: ca.times.length ? ca.times[0] - t0 : undefined,
      parts: ca.parts,
      asksAtEnd: ca.atEnd,
      asksUnstarted: ca.unstarted,
      ...(victimNote ? { victim: `w${killed}: ${held.join(", ")}${recovery.replace(/^; its splits/, ";")}` } : {}),
    };
  } catch (e) {
    console.log(`${tag}${label}: FAILED: ${e instanceof Error ? e.message : e}`);
    for (const c of ws) if (c.stderr.length) console.log(`  ${c.name} stderr: ${c.stderr.slice(-5).join(" | ")}`);
    return {
      config: config.name,
      system,
      makespan: NaN,
      ideal: w.ideal,
      lpt: w.lptFloor,
      replayed: NaN,
      lost: NaN,
      asked: 0,
      cuts: 0,
      declined: 0,
      moves: 0,
      cpuPerSplit: NaN,
      error: String(e instanceof Error ? e.message : e),
    };
  } finally {
    await Promise.all(ws.map((c) => c.stop(5000)));
    if (system === "jetstream") await jsm.streams.delete(name).catch(() => {});
    if (system === "bullmq") await redisDeleteKeys(`bull:${name}*`).catch(() => 0);
  }
}

const rows: Row[] = [];
try {
  for (const config of CONFIGS) {
    for (const system of SYSTEMS) {
      // No coordination cannot survive a crash; the follower kill spares a splitlease leader only.
      if (system === "none" && config.kill) continue;
      if (config.kill !== "follower" || isSplitlease(system)) rows.push(await runOnce(config, system));
    }
  }
} finally {
  await nc.close();
  await stopRedis?.();
}

// Cutting against each other system, per configuration: makespan ratios measured in this run.
for (const config of CONFIGS) {
  const tag = config.name === "skewed" ? "" : `${config.name}: `;
  for (const c of ["cuts", "cuts-pg", "cuts-plain"] as const) {
    const cut = rows.find((r) => r.config === config.name && r.system === c);
    if (!cut || !(cut.makespan > 0)) continue;
    for (const r of rows.filter((r) => r.config === config.name && r.system !== c && r.makespan > 0)) {
      // Uniform input: cutting must cost nothing against the same splitlease without a hook.
      const noCuts = config.input === "uniform" && !config.kill && r.system === (c === "cuts" ? "weights" : "plain");
      result({
        bench: "backfill",
        metric: `${tag}makespan ${LABEL[c]} / ${LABEL[r.system]}`,
        value: `${(cut.makespan / 1000).toFixed(2)} s / ${(r.makespan / 1000).toFixed(2)} s`,
        ratio: cut.makespan / r.makespan,
        ...(noCuts ? { target: "≤ 1" } : {}),
      });
    }
  }
}

// Coordination CPU per planned split: each system's CPU (workers + server) less the
// same input run with no coordination at all, against the work queue's; same run.
for (const config of CONFIGS) {
  const tag = config.name === "skewed" ? "" : `${config.name}: `;
  const base = rows.find((r) => r.system === "none" && r.config === config.input && r.cpuPerSplit > 0)?.cpuPerSplit;
  const queue = rows.find((r) => r.config === config.name && r.system === "jetstream" && r.cpuPerSplit > 0)?.cpuPerSplit;
  if (base === undefined || queue === undefined) continue;
  for (const r of rows.filter((r) => r.config === config.name && isSplitlease(r.system) && r.cpuPerSplit > 0)) {
    result({
      bench: "backfill",
      metric: `${tag}coordination CPU per split (workers + server − no coordination), ${LABEL[r.system]} ÷ JetStream work queue`,
      value: `${(r.cpuPerSplit - base).toFixed(1)} vs ${(queue - base).toFixed(1)} ms (no coordination ${base.toFixed(1)} ms)`,
      ratio: (r.cpuPerSplit - base) / (queue - base),
      ...(!config.kill ? { target: "≤ 2" } : {}),
    });
  }
}
console.log(`results: ${await writeResults(`backfill-${stamp}`, { started: stamp, seed: SEED, msPerRecord: MS, batch: BATCH, lease: LEASE, procs: PROCS, lanes: LANES, rows })}`);

const cols: [string, (r: Row) => string][] = [
  ["config", (r) => r.config],
  ["system", (r) => LABEL[r.system]],
  ["makespan", (r) => (r.error ? "FAILED" : `${(r.makespan / 1000).toFixed(2)} s`)],
  ["/ ideal", (r) => (r.error ? "" : (r.makespan / r.ideal).toFixed(3))],
  ["/ LPT floor", (r) => (r.error ? "" : (r.makespan / r.lpt).toFixed(3))],
  ["replayed", (r) => (r.error ? "" : String(r.replayed))],
  ["lost", (r) => (r.error ? "" : String(r.lost))],
  ["asks/cuts/declined", (r) => (isSplitlease(r.system) && !r.error ? `${r.asked}/${r.cuts}/${r.declined}` : "")],
  ["moves", (r) => (r.error ? "" : String(r.moves))],
  ["CPU ms/split", (r) => (r.error ? "" : r.cpuPerSplit.toFixed(1))],
  ["/ floor", (r) => (r.floor && !r.error ? (r.makespan / r.floor).toFixed(3) : "")],
  ["idle lane-s", (r) => (r.error || r.idleAll === undefined ? "" : `${(r.idleAll / 1000).toFixed(1)}/${(r.idleUnstarted! / 1000).toFixed(1)}`)],
  ["kill→start, burst", (r) => (r.survivorStartMs !== undefined ? `${r.survivorStartMs.toFixed(0)} ms, ${r.burst}` : "")],
  ["1st ask, parts, at end", (r) => (r.firstAskMs !== undefined ? `${(r.firstAskMs / 1000).toFixed(1)} s, ${r.parts!.join("")}, ${r.asksAtEnd}` : "")],
  ["crash", (r) => r.error ?? r.victim ?? ""],
];
const width = cols.map(([h, f]) => Math.max(h.length, ...rows.map((r) => f(r).length)));
const line = (cells: string[]) => cells.map((c, i) => c.padEnd(width[i])).join("  ").trimEnd();
console.log(`\nbackfill: ${MS} ms per record, batches of ${BATCH}, lease / ack wait / lock ${LEASE} ms, ${PROCS} processes × ${LANES} lanes`);
console.log(line(cols.map(([h]) => h)));
console.log(line(width.map((n) => "-".repeat(n))));
for (const r of rows) console.log(line(cols.map(([, f]) => f(r))));

const failed = rows.filter((r) => r.error || r.lost > 0);
if (failed.length) {
  console.log(`\nfailed (an error, or records never processed): ${failed.map((r) => `${r.config}/${r.system}`).join(", ")}`);
  Deno.exitCode = 1;
}
