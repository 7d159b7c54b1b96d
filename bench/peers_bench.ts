// Peers benchmark (issue 10): splitlease against a JetStream work queue and
// BullMQ, same scenarios, same run, Node 24 worker processes for all three
// (bench/peers_worker.ts, bundled with esbuild from the repo source),
// one nats-server over WebSocket (BENCH_NATS: current or 2.9; `npm run bench --
// peers --nats=current,2.9` runs it once per server), and a Redis of its own
// that `npm run bench` starts on a free port (REDIS_PORT).
//
//   npm run bench -- peers
//
// Scenarios, each printed as ::result rows with the ratio splitlease / peer:
//  1. TASKS tiny tasks over 4 worker processes, tasks/s with planning excluded
//     (plan/publish first, then time the consumers) and included, per maxInFlight
//     (splitlease maxInFlight = JetStream consume max_messages = BullMQ concurrency);
//  2. hand back HANDBACK in-flight tasks → another worker starts each, p50/p99
//     (splitlease: worker.shutdown() of the holder; JetStream: NAK of each held
//     message; BullMQ: job.moveToWait(token) + WaitingError, its way to put an
//     active job back on the wait list); splitlease in two layouts: the holder
//     leads, and a follower holds (a standby member carrying the planner joins
//     first and leads; holder and receiver follow);
//  3. completion seen by 3 consuming workers and 1 standby, delay after the last
//     completion (splitlease: the allComplete event, the standby is a draining
//     member; JetStream: a consumer acking in the tail confirms its ack, reads
//     consumer info and, when the ack floor reached the last task, publishes a
//     core NATS message all four subscribe to; BullMQ: the last `drained` event
//     of each Worker, QueueEvents for the standby — `drained` means "wait list
//     empty", so it can precede the last completion: negative delays are kept);
//  4. store writes and server messages per completed task (planning included,
//     maxInFlight 32): splitlease landed writes (counting Store wrapper),
//     JetStream publishes, BullMQ Redis commands; /varz in/out messages.
//
// Env knobs: BENCH_PEERS_TASKS [10000], BENCH_PEERS_MIF [8,32],
// BENCH_PEERS_SYSTEMS [splitlease,jetstream,bullmq], BENCH_PEERS_HANDBACK [50],
// BENCH_PEERS_HANDBACK_ROUNDS [3], BENCH_PEERS_HANDBACK_LAYOUTS [leader,follower]
// (splitlease: who holds the tasks handed back), BENCH_PEERS_COMPLETION_TASKS [1000],
// BENCH_PEERS_COMPLETION_RUNS [3], BENCH_PEERS_LIMIT_S [180] (per run),
// BENCH_PEERS_NODE_ARGS (extra Node flags for the workers, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"),
// BENCH_PEERS_LOG (a directory: each splitlease worker writes its coordinator's warnings and decisions there),
// BENCH_PEERS_TRACE (a directory: each splitlease worker writes every store operation and watch delivery there),
// BENCH_PEERS_SCENARIOS [throughput,handback,completion] (4 comes from throughput).
import { wsconnect } from "@nats-io/nats-core";
import { AckPolicy, jetstreamManager, RetentionPolicy } from "@nats-io/jetstream";
import { pgCpuSeconds, redisSetup, setupKinds, startNats } from "./_servers.ts";
import { type StoreCounts, sumCounts } from "./counting_store.ts";
import { median, percentile, result } from "./_common.ts";
import {
  bin,
  Child,
  fileStamp,
  loadavg,
  type Msg,
  nodeBundle,
  onInterrupt,
  rawCasRate,
  redisDeleteKeys,
  sleep,
  writeResults,
} from "./_procs.ts";

type System = "splitlease" | "splitlease-pg" | "splitlease-redis" | "jetstream" | "bullmq";
/** splitlease on NATS, on the PostgreSQL `npm run bench` started (PG_URL), or on its Redis for the store (REDIS_STORE_URL). */
const isSplitlease = (s: System) => s === "splitlease" || s === "splitlease-pg" || s === "splitlease-redis";
const PG_URL = Deno.env.get("PG_URL");
const REDIS_STORE = redisSetup();
const PG_PID = Number(Deno.env.get("PG_PID") ?? -1);
const num = (k: string, d: number) => Number(Deno.env.get(k) ?? d);
const TASKS = num("BENCH_PEERS_TASKS", 10_000);
const MIFS = Deno.env.get("BENCH_PEERS_MIF")?.split(",").map(Number) ?? [8, 32];
const SYSTEMS = (Deno.env.get("BENCH_PEERS_SYSTEMS") ??
  `splitlease,${PG_URL ? "splitlease-pg," : ""}${REDIS_STORE ? "splitlease-redis," : ""}jetstream,bullmq`).split(",") as System[];
const HANDBACK = num("BENCH_PEERS_HANDBACK", 50), HB_ROUNDS = num("BENCH_PEERS_HANDBACK_ROUNDS", 3);
const HB_LAYOUTS = (Deno.env.get("BENCH_PEERS_HANDBACK_LAYOUTS") ?? "leader,follower").split(",").filter(Boolean) as ("leader" | "follower")[];
const C_TASKS = num("BENCH_PEERS_COMPLETION_TASKS", 1000), C_RUNS = num("BENCH_PEERS_COMPLETION_RUNS", 3);
const LIMIT = num("BENCH_PEERS_LIMIT_S", 180) * 1000;
const SCEN = (Deno.env.get("BENCH_PEERS_SCENARIOS") ?? "throughput,handback,completion").split(",");
const stamp = fileStamp();
let runNo = 0;
const runPrefix = `peers${stamp.replace(/-/g, "").slice(0, 15)}`;
// BullMQ queues of this run: each run obliterates its own; this sweep catches an interrupted one.
const sweepRedis = () => redisDeleteKeys(`bull:${runPrefix}*`).catch(() => 0);
onInterrupt(sweepRedis);

const kind = setupKinds()[0];
if (kind.endsWith("r3")) throw new Error("the peers bench runs on one node (BENCH_NATS current or 2.9): its work-queue peer has no replicated setup");
await using server = await startNats(kind);
const url = server.url;
const entry = await nodeBundle("bench/peers_worker.ts");
const nc = await wsconnect({ servers: url });
const jsm = await jetstreamManager(nc);
console.log(`peers bench: nats-server ${nc.info?.version} over WebSocket, Node ${await nodeVersion()} workers, ${TASKS} tasks`);

async function nodeVersion(): Promise<string> {
  const out = await new Deno.Command(bin("node"), { args: ["--version"], stdout: "piped" }).output();
  return new TextDecoder().decode(out.stdout).trim();
}

/** A fresh job/stream/queue name, and the JetStream stream + durable pull consumer when needed. */
async function freshName(system: System): Promise<string> {
  const name = `${runPrefix}r${++runNo}`;
  if (system === "jetstream") {
    await jsm.streams.add({ name, subjects: [`peers.${name}.task`], retention: RetentionPolicy.Workqueue });
    await jsm.consumers.add(name, { durable_name: "workers", ack_policy: AckPolicy.Explicit });
  }
  return name;
}

/** Extra Node flags for every worker (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`), from BENCH_PEERS_NODE_ARGS. */
const NODE_ARGS = (Deno.env.get("BENCH_PEERS_NODE_ARGS") ?? "").split(" ").filter(Boolean);

/** Spawns Node workers; resolves once all are ready. */
async function spawn(system: System, name: string, specs: { role: string; tasks: number; mif: number; plans?: boolean }[]) {
  const ws = specs.map((s, i) =>
    new Child(`${system}-${s.role}-${i}`, bin("node"), [...NODE_ARGS, entry], {
      PEERS: JSON.stringify({
        system: isSplitlease(system) ? "splitlease" : system,
        ...(system === "splitlease-pg" ? { pgUrl: PG_URL } : {}),
        ...(system === "splitlease-redis" ? { redisUrl: REDIS_STORE!.url } : {}),
        role: s.role,
        id: `${s.role}${i}`,
        natsUrl: url,
        name,
        tasks: s.tasks,
        maxInFlight: s.mif,
        plans: s.plans,
      }),
    })
  );
  try {
    await Promise.all(ws.map((w) => w.next((m) => m.ev === "ready" || m.ev === "error", 60_000, "ready").then((m) => {
      if (m.ev === "error") throw new Error(`${w.name}: ${m.error}`);
    })));
  } catch (e) {
    // The others are ready and would wait for orders for ever: the bench could not exit.
    for (const w of ws) w.kill();
    throw e;
  }
  return ws;
}

const completedSum = (ws: Child[]) => ws.reduce((n, w) => n + (w.msgs.findLast((m) => m.ev === "progress")?.completed ?? 0), 0);
async function waitAll(ws: Child[], tasks: number, what: string): Promise<void> {
  const end = performance.now() + LIMIT;
  while (completedSum(ws) < tasks) {
    if (performance.now() > end) throw new Error(`${what}: ${completedSum(ws)}/${tasks} done after ${LIMIT / 1000} s`);
    const err = ws.flatMap((w) => w.msgs).find((m) => m.ev === "error");
    if (err) throw new Error(`${what}: ${err.error}`);
    await sleep(20);
  }
}
async function ask(w: Child, cmd: string, ev: string, ms = 30_000): Promise<Msg> {
  const from = w.msgs.length;
  await w.send({ cmd });
  return w.next((m) => m.ev === ev && w.msgs.indexOf(m) >= from, ms, ev);
}
const reports = (ws: Child[]) => Promise.all(ws.map((w) => ask(w, "report", "report")));
async function finish(system: System, ws: Child[]): Promise<void> {
  if (system === "bullmq") await ask(ws[0], "cleanup", "cleaned").catch(() => {});
  await Promise.all(ws.map((w) => w.stop(8000)));
}

interface Throughput {
  tasksPerSec: number;
  prepMs: number;
  writesPerTask?: number;
  /** The leader's passes per completed task (splitlease): one per burst of split changes at most. */
  passesPerTask?: number;
  redisCmdsPerTask?: number;
  outMsgsPerTask: number;
  inMsgsPerTask: number;
  counts?: StoreCounts;
  /** CPU ms per task over the timed run: the worker processes, and the server (nats-server or Redis). */
  workerCpuMsPerTask: number;
  serverCpuMsPerTask: number;
}

/** CPU ms nats-server has used so far. */
const natsCpuMs = () => server.cpuSeconds() * 1000;
const cpuSum = (rs: Msg[]) => rs.reduce((n, r) => n + (r.cpuMs as number), 0);

/** Scenario 1 (and 4): `TASKS` tiny tasks over 4 consumers. */
async function throughput(system: System, mif: number, included: boolean): Promise<Throughput> {
  const name = await freshName(system);
  const ws = await spawn(system, name, Array.from({ length: 4 }, () => ({ role: "consumer", tasks: TASKS, mif, plans: included })));
  const extra: Child[] = [];
  try {
    const v0 = await server.varz();
    const r0 = system === "bullmq" ? await ask(ws[0], "redis", "redis") : undefined;
    let prepMs = 0;
    if (!included && isSplitlease(system)) {
      extra.push(...await spawn(system, name, [{ role: "planner", tasks: TASKS, mif }]));
      await extra[0].send({ cmd: "go" });
      prepMs = (await extra[0].next((m) => m.ev === "planned", LIMIT, "planned")).ms;
    } else if (!included) {
      prepMs = (await ask(ws[0], "publish", "published", LIMIT)).ms;
    }
    const before = await reports(ws);
    const cpu0 = cpuSum(before);
    const passes0 = before.reduce((n, r) => n + ((r.leaderPasses as number | undefined) ?? 0), 0);
    const serverMs = () =>
      system === "splitlease-pg" ? pgCpuSeconds(PG_PID) * 1000 : system === "splitlease-redis" ? REDIS_STORE!.cpuSeconds() * 1000 : natsCpuMs();
    const server0 = system === "bullmq" ? (await ask(ws[0], "redis", "redis")).cpuMs : serverMs();
    await Promise.all(ws.map((w) => w.send({ cmd: "go" })));
    if (included && !isSplitlease(system)) await ws[0].send({ cmd: "publish" });
    await waitAll(ws, TASKS, `${system} throughput`);
    const server1 = system === "bullmq" ? undefined : serverMs();
    // The workers' clock (CLOCK_MONOTONIC): the first "going" starts the run.
    const t0 = Math.min(...await Promise.all(ws.map(async (w) => (await w.next((m) => m.ev === "going", 5000, "going")).at)));
    const rs = await reports(ws);
    const end = Math.max(...rs.map((r) => r.lastCompletionAt));
    const v1 = await server.varz();
    const r1 = system === "bullmq" ? await ask(ws[0], "redis", "redis") : undefined;
    const counts = isSplitlease(system)
      ? sumCounts([...rs, ...(extra.length ? await reports(extra) : [])].map((r) => r.counts as StoreCounts))
      : undefined;
    return {
      tasksPerSec: TASKS / ((end - t0) / 1000),
      prepMs,
      writesPerTask: counts ? counts.writesLanded / TASKS : system === "jetstream" ? 1 : undefined,
      passesPerTask: isSplitlease(system) ? (rs.reduce((n, r) => n + ((r.leaderPasses as number | undefined) ?? 0), 0) - passes0) / TASKS : undefined,
      redisCmdsPerTask: r0 && r1 ? (r1.commands - r0.commands) / TASKS : undefined,
      // Reports and the Redis INFO read come after the last completion: a few ms of idle CPU at most.
      workerCpuMsPerTask: (cpuSum(rs) - cpu0) / TASKS,
      serverCpuMsPerTask: ((r1 ? r1.cpuMs : server1!) - server0) / TASKS,
      outMsgsPerTask: (v1.out_msgs - v0.out_msgs) / TASKS,
      inMsgsPerTask: (v1.in_msgs - v0.in_msgs) / TASKS,
      counts,
    };
  } finally {
    await finish(system, [...ws, ...extra]);
  }
}

/**
 * Scenario 2: latencies (ms) from the holder's hand-back to the other worker
 * starting each task. `follower` (splitlease): a standby member with the
 * planner joins first and leads, so neither holder nor receiver leads.
 */
async function handback(system: System, layout: "leader" | "follower" = "leader"): Promise<number[]> {
  const name = await freshName(system);
  const [a, b] = await spawn(system, name, [
    { role: "holder", tasks: HANDBACK, mif: HANDBACK, plans: true },
    { role: "receiver", tasks: HANDBACK, mif: HANDBACK, plans: true },
  ]);
  const extra: Child[] = [];
  try {
    if (layout === "follower") {
      extra.push(...await spawn(system, name, [{ role: "standby", tasks: HANDBACK, mif: 0, plans: true }]));
      await extra[0].send({ cmd: "go" });
      await extra[0].next((m) => m.ev === "joined", 30_000, "leader joined");
    }
    if (!isSplitlease(system)) await ask(a, "publish", "published", LIMIT);
    await a.send({ cmd: "go" });
    const end = performance.now() + 60_000;
    while (a.msgs.filter((m) => m.ev === "started").length < HANDBACK) {
      if (performance.now() > end) throw new Error(`${system} holder started only ${a.msgs.filter((m) => m.ev === "started").length}`);
      await sleep(10);
    }
    await b.send({ cmd: "go" });
    if (isSplitlease(system)) await b.next((m) => m.ev === "joined", 30_000, "receiver joined");
    await sleep(200); // the receiver's pull / fetch loop is waiting at the server
    const from = b.msgs.length;
    const hb = await ask(a, "handback", "handback");
    const t = performance.now() + 30_000;
    while (b.since(from, "started").length < HANDBACK && performance.now() < t) await sleep(10);
    const starts = b.since(from, "started");
    const before = b.msgs.slice(0, from).filter((m) => m.ev === "started").length;
    if (starts.length < HANDBACK) {
      console.log(`  ${system}: ${starts.length}/${HANDBACK} restarted within 30 s after the hand-back, ${before} moved before it (balancing)`);
    }
    return starts.map((m) => m.at - hb.at);
  } finally {
    await finish(system, [a, b, ...extra]);
  }
}

/** Scenario 3: delay (ms) from the last completion to each observer seeing the end; [consumers…, standby]. */
async function completion(system: System): Promise<number[]> {
  const name = await freshName(system);
  const ws = await spawn(system, name, [
    ...Array.from({ length: 3 }, () => ({ role: "consumer", tasks: C_TASKS, mif: 32 })),
    { role: "standby", tasks: C_TASKS, mif: 32 },
  ]);
  const extra: Child[] = [];
  try {
    if (isSplitlease(system)) {
      await ws[3].send({ cmd: "go" }); // the standby joins first and drains: it never claims
      await ws[3].next((m) => m.ev === "joined", 30_000, "standby joined");
      extra.push(...await spawn(system, name, [{ role: "planner", tasks: C_TASKS, mif: 1 }]));
      await extra[0].send({ cmd: "go" });
      await extra[0].next((m) => m.ev === "planned", LIMIT, "planned");
    } else await ask(ws[0], "publish", "published", LIMIT);
    await Promise.all(ws.slice(0, 3).map((w) => w.send({ cmd: "go" })));
    await waitAll(ws, C_TASKS, `${system} completion`);
    await sleep(1500); // BullMQ workers re-emit `drained` only after drainDelay (5 s)
    const rs = await reports(ws);
    const last = Math.max(...rs.slice(0, 3).map((r) => r.lastCompletionAt));
    if (isSplitlease(system) && rs.some((r) => !r.completeSeenAt)) {
      // Outside the window (counted as not seen): wait up to 20 s more so the
      // log says when it did arrive, or that it never did.
      const late = await lateCompletion(ws);
      console.log(`  splitlease completion not seen by every observer within 1.5 s; after 20 s more: ${late.map((r) => (r.completeSeenAt ? `${(r.completeSeenAt - last).toFixed(0)} ms` : "never")).join(", ")}; statuses: ${JSON.stringify(late.map((r) => r.status))}`);
    }
    return rs.map((r) => {
      if (system !== "bullmq") return r.completeSeenAt && r.completeSeenAt - last <= 1500 ? r.completeSeenAt - last : NaN;
      const d = (r.drainedAts as number[]).filter((t) => t <= last + 1500);
      return d.length ? d[d.length - 1] - last : NaN;
    });
  } finally {
    await finish(system, [...ws, ...extra]);
  }
}

/** Reports once every observer saw the end, or after 20 s. */
async function lateCompletion(ws: Child[]): Promise<Msg[]> {
  const end = performance.now() + 20_000;
  for (;;) {
    const rs = await reports(ws);
    if (rs.every((r) => r.completeSeenAt) || performance.now() > end) return rs;
    await sleep(200);
  }
}

// --- run -------------------------------------------------------------------------------------
const out: Record<string, unknown> = { started: stamp, tasks: TASKS, systems: SYSTEMS };
out.loadavgStart = loadavg();
console.log(`load average ${out.loadavgStart} (other work on this machine skews every figure; ratios less so)`);
const raw = await rawCasRate(url, 2000);
out.rawCasPerSec = Math.round(raw);
console.log(`raw CAS, 100 keys in flight: ${raw.toFixed(0)}/s`);
const fmt = (x: number | undefined, d = 0) => (x === undefined || Number.isNaN(x) ? "—" : x.toFixed(d));
const peers = SYSTEMS.filter((s) => s !== "splitlease");
function rows(metric: string, by: Partial<Record<System, number>>, unit: string, target?: string, d = 0): void {
  const value = SYSTEMS.map((s) => `${s} ${fmt(by[s], d)}${unit}`).join(", ");
  console.log(`${metric}: ${value}`);
  for (const p of peers.filter((p) => by[p] !== undefined)) {
    result({ bench: "peers", metric: `${metric}: splitlease ÷ ${p}`, value, ratio: (by.splitlease ?? NaN) / (by[p] ?? NaN), target });
  }
}

const tp: Record<string, Partial<Record<System, Throughput>>> = {};
for (const mif of SCEN.includes("throughput") ? MIFS : []) {
  for (const included of [false, true]) {
    const key = `mif${mif}-${included ? "included" : "excluded"}`;
    tp[key] = {};
    for (const s of SYSTEMS) {
      console.log(`  throughput ${s} ${key}`);
      tp[key][s] = await throughput(s, mif, included).catch((e) => (console.log(`  ${s}: ${e}`), undefined));
    }
    const by = Object.fromEntries(SYSTEMS.map((s) => [s, tp[key][s]?.tasksPerSec]));
    rows(`${TASKS} tiny tasks, 4 workers, maxInFlight ${mif}, planning ${included ? "included" : "excluded"}, tasks/s`, by, "/s", "≥ 1 vs bullmq");
    const cpu = (f: (t: Throughput) => number) => Object.fromEntries(SYSTEMS.map((s) => [s, tp[key][s] ? f(tp[key][s]!) : NaN]));
    rows(`  CPU ms per task, worker processes (maxInFlight ${mif}, planning ${included ? "included" : "excluded"})`, cpu((t) => t.workerCpuMsPerTask), " ms", undefined, 3);
    rows(`  CPU ms per task, nats-server, PostgreSQL or Redis (maxInFlight ${mif}, planning ${included ? "included" : "excluded"})`, cpu((t) => t.serverCpuMsPerTask), " ms", undefined, 3);
    const passes = SYSTEMS.filter((s) => tp[key][s]?.passesPerTask !== undefined).map((s) => `${s} ${fmt(tp[key][s]!.passesPerTask, 2)}`);
    if (passes.length) console.log(`  leader passes per task (maxInFlight ${mif}, planning ${included ? "included" : "excluded"}): ${passes.join(", ")}`);
    if (!included) {
      const prep = Object.fromEntries(SYSTEMS.map((s) => [s, TASKS / ((tp[key][s]?.prepMs ?? NaN) / 1000)]));
      rows(`planning / publishing ${TASKS} tasks (maxInFlight ${mif}), tasks/s`, prep, "/s");
      if (prep.splitlease) {
        result({ bench: "peers", metric: "splitlease planning splits/s ÷ raw 100-in-flight CAS/s", value: `${fmt(prep.splitlease)} vs ${fmt(raw)}/s`, ratio: prep.splitlease / raw });
      }
    }
  }
}
out.throughput = tp;

const hb: Partial<Record<System, number[]>> = {};
if (SCEN.includes("handback")) {
  // splitlease once per layout (the holder leads, a follower holds), each peer once.
  type Run = { s: System; l: "leader" | "follower" };
  const runs = SYSTEMS.flatMap((s): Run[] => (isSplitlease(s) ? HB_LAYOUTS.map((l) => ({ s, l })) : [{ s, l: "leader" }]));
  const byLayout: Record<string, Partial<Record<System, number[]>>> = { leader: hb, follower: {} };
  for (const { s, l } of runs) {
    const into = (byLayout[l][s] = [] as number[]);
    for (let r = 0; r < HB_ROUNDS; r++) into.push(...await handback(s, l).catch((e) => (console.log(`  ${s} handback (${l}): ${e}`), [])));
  }
  out.handback = hb;
  out.handbackFollower = byLayout.follower.splitlease; // what the cost bench reads
  out.handbackFollowerBySystem = byLayout.follower;
  for (const l of HB_LAYOUTS) {
    // The peers have no leader: their figures are the same in both rows.
    const by = { ...hb, ...(l === "follower" ? byLayout.follower : {}) };
    const at = (p: number) => Object.fromEntries(SYSTEMS.map((s) => [s, by[s]?.length ? percentile(by[s]!, p) : NaN]));
    const who = l === "leader" ? "the holder leads" : "a follower holds, a standby leads";
    const what = `hand back ${HANDBACK} in-flight tasks → another worker starts each (${who}; ${HB_ROUNDS} rounds)`;
    rows(`${what}, p50 ms`, at(50), " ms", "≤ 1.5 vs jetstream", 1);
    rows(`${what}, p99 ms`, at(99), " ms", undefined, 1);
  }
}

if (SCEN.includes("completion")) {
  const cd: Partial<Record<System, number[][]>> = {};
  for (const s of SYSTEMS) {
    cd[s] = [];
    for (let r = 0; r < C_RUNS; r++) {
      cd[s]!.push(await completion(s).catch((e) => (console.log(`  ${s} completion: ${e}`), [NaN, NaN, NaN, NaN])));
    }
  }
  out.completion = cd;
  const med = (xs: number[]) => (xs.some((x) => !Number.isNaN(x)) ? median(xs.filter((x) => !Number.isNaN(x))) : NaN);
  const what = `${C_TASKS} tasks, 3 consumers + 1 standby, median of ${C_RUNS} runs`;
  const by = (f: (run: number[]) => number) => Object.fromEntries(SYSTEMS.map((s) => [s, med(cd[s]!.map(f))]));
  const all = by((r) => (r.some(Number.isNaN) ? NaN : Math.max(...r)));
  const consumers = by((r) => med(r.slice(0, 3)));
  const standby = by((r) => r[3]);
  const value = SYSTEMS.map((s) => `${s} ${fmt(all[s], 1)} (consumers ${fmt(consumers[s], 1)}, standby ${fmt(standby[s], 1)}) ms`).join(", ");
  console.log(`completion, ms after the last completion until every observer / the consumers / the standby saw it (${what}): ${value}`);
  for (const p of peers) {
    result({ bench: "peers", metric: `completion seen by all 4 (${what}), ms after the last completion: splitlease ÷ ${p}`, value, ratio: all.splitlease / all[p], target: "≤ 1 vs bullmq" });
    if (standby[p] > 0) {
      result({ bench: "peers", metric: `completion seen by the standby: splitlease ÷ ${p}`, value: `${fmt(standby.splitlease, 1)} vs ${fmt(standby[p], 1)} ms`, ratio: standby.splitlease / standby[p] });
    }
  }
}

const full = tp[`mif${MIFS.at(-1)}-included`];
if (full) {
  const w = full.splitlease?.writesPerTask;
  const writesValue = `splitlease ${fmt(w, 2)} landed writes, jetstream 1 publish, bullmq ${fmt(full.bullmq?.redisCmdsPerTask, 1)} Redis commands`;
  console.log(`store writes per completed task: ${writesValue}`);
  result({ bench: "peers", metric: "store writes per completed split (planning included) ÷ 2.2 (the target: a claim and a completion, assignment writes amortised)", value: writesValue, ratio: (w ?? NaN) / 2.2, target: "≤ 1" });
  const wpg = full["splitlease-pg"]?.writesPerTask;
  if (wpg !== undefined) {
    result({
      bench: "peers",
      metric: "store writes per completed split (planning included), PostgreSQL ÷ NATS",
      value: `${fmt(wpg, 2)} vs ${fmt(w, 2)} landed writes`,
      ratio: wpg / (w ?? NaN),
      target: "≈ 1 (the same protocol)",
    });
  }
  const wr = full["splitlease-redis"]?.writesPerTask;
  if (wr !== undefined) {
    result({
      bench: "peers",
      metric: "store writes per completed split (planning included), Redis ÷ NATS",
      value: `${fmt(wr, 2)} vs ${fmt(w, 2)} landed writes`,
      ratio: wr / (w ?? NaN),
      target: "≈ 1 (the same protocol)",
    });
  }
  const nats = SYSTEMS.filter((s) => s !== "bullmq" && s !== "splitlease-pg" && s !== "splitlease-redis");
  rows("server messages out per completed task (nats /varz)", Object.fromEntries(nats.map((s) => [s, full[s]?.outMsgsPerTask])), "", undefined, 2);
  rows("server messages in per completed task (nats /varz)", Object.fromEntries(nats.map((s) => [s, full[s]?.inMsgsPerTask])), "", undefined, 2);
}

out.loadavgEnd = loadavg();
const swept = await sweepRedis();
if (swept) console.log(`removed ${swept} Redis keys left by BullMQ runs`);
console.log(`results: ${await writeResults(`peers-${stamp}`, out)}`);
await nc.close();
