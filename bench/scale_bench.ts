// Scale benchmark (issue 9, "How it is measured"): coordinators spread over
// several OS processes (bench/scale_host.ts), each with its own NatsStore
// connection behind a counting Store wrapper, against a fresh nats-server
// (WebSocket) per cell; each grid cell again on PostgreSQL (a PostgresStore
// per coordinator, a schema of its own per cell) when `npm run bench`
// started one (PG_URL; BENCH_PG=0 leaves it out), and on Redis (a RedisStore per coordinator, a job
// of its own per cell; REDIS_STORE_URL, BENCH_REDIS=0 leaves it out). Prints one ::result row per cell and writes every
// cell's figures to bench/results/scale-<timestamp>.json.
//
//   npm run bench -- scale                   (the full grid: takes an hour or more)
//   BENCH_W=4,16 BENCH_S=1000 npm run bench -- scale
//
// Scenarios (BENCH_SCENARIOS, comma list; default grid, steady, join, memory): those, and
// million (bench/scale_million.ts: one job of a million tiny splits on nats-server and PostgreSQL,
// its leader's RSS per split, a SIGKILLed leader's successor, the plan's seeding rate; BENCH_MILLION_S
// selects a smaller job for a smoke run), shards (bench/scale_shards.ts: K = 1 against K = 4 shards on
// one nats-server and on a 3-node R3 cluster; BENCH_SHARDS_S, default 200k).
// Env knobs (defaults in brackets):
//   BENCH_W [4,16,50,100], BENCH_S [1000,10000,100000]  grid cells (W × S)
//   BENCH_PROCS [4]             worker processes per fleet (min(W, PROCS))
//   BENCH_RUNTIME [deno]        deno: hosts run bench/scale_host.ts; node: its esbuild bundle on Node 24
//   BENCH_NODE_ARGS             extra Node flags for the hosts when BENCH_RUNTIME=node (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof")
//   BENCH_DENO_WS [nodelay]     on Deno: the adapter's denoWebSocket client; builtin: Deno's WebSocket (bursts stall ~40 ms)
//   BENCH_LEASE_MS [15000], BENCH_MAX_IN_FLIGHT [32], BENCH_OP_TIMEOUT_MS [5000]
//   BENCH_NEEDED_PER_SPLIT [2]  store writes a tiny split needs at least (layout 3, plans in pages:
//                               its claim or the leader's grant, which creates the record, and its
//                               final commit); the "ideal" time is S × this ÷ raw CAS rate
//   BENCH_CELL_LIMIT_S          a cell's time limit [max(120 s, 20 × ideal)]; past it: "did not finish"
//   BENCH_MAX_RSS_MB [16384]    a cell whose worker processes exceed this in sum is stopped
//   BENCH_STEADY_W [50] BENCH_STEADY_S [10000] BENCH_STEADY_MS [120000]
//   BENCH_JOIN_W [100] BENCH_JOIN_S [100000] BENCH_JOIN_WAIT_MS [30000] (joiner: wait for its first event)
//   BENCH_STEADY_SETTLE_MS [300000] (steady: at most this long waiting for balancing to stop moving splits)
//   BENCH_MEM_W [30,100] BENCH_MEM_S [10000] BENCH_MEM_LIMIT_S [120] BENCH_MEM_LEASE_MS [3000]
//
// Claim attempts come from `stats().claimAttempts` when the coordinator has
// it, else from the wrapper's count of ownership-changing split updates (a
// new epoch with an owner); each row says which ("claims via stats|wrapper").
import { wsTransport } from "./_transport.ts";
import { NatsServer } from "../tests/helpers/nats_server.ts";
import { type NatsSetup, pgSetup, redisSetup, setupKinds, startNats } from "./_servers.ts";
import { NatsStore } from "../nats.ts";
import { diffCounts, type StoreCounts, sumCounts } from "./counting_store.ts";
import { result } from "./_common.ts";
import { millionCell, millionStores } from "./scale_million.ts";
import { shardCells, shardsCell } from "./scale_shards.ts";
import { fleet as startFleet, spawnHost as spawnOn, until as waitUntil } from "./_fleet.ts";
import {
  type Child,
  fileStamp,
  loadavg,
  type Msg,
  rawCasRate,
  rawPgCasRate,
  rawRedisCasRate,
  rssBytes,
  sampleServer,
  sleep,
  varz,
  writeResults,
} from "./_procs.ts";

const num = (k: string, d: number) => Number(Deno.env.get(k) ?? d);
const list = (k: string, d: number[]) => (Deno.env.get(k)?.split(",").map(Number) ?? d);
const SCENARIOS = (Deno.env.get("BENCH_SCENARIOS") ?? "grid,steady,join,memory").split(",");
const RUNTIME = Deno.env.get("BENCH_RUNTIME") ?? "deno";
const PROCS = num("BENCH_PROCS", 4);
const LEASE = num("BENCH_LEASE_MS", 15000), MIF = num("BENCH_MAX_IN_FLIGHT", 32), OPT = num("BENCH_OP_TIMEOUT_MS", 5000);
const NEEDED = num("BENCH_NEEDED_PER_SPLIT", 2);
const MAX_RSS = num("BENCH_MAX_RSS_MB", 16384) * 2 ** 20;
const MiB = (b: number) => +(b / 2 ** 20).toFixed(1);
const all: Record<string, unknown>[] = [];
const fleet = (url: string, job: string, w: number, s: number, role: "tiny" | "hold", tunables: Record<string, number>, replicas = 1) =>
  startFleet({ runtime: RUNTIME, procs: PROCS, url, job, w, s, role, tunables, replicas });
const until = (done: () => boolean, limitMs: number, rss: () => number) => waitUntil(done, limitMs, rss, MAX_RSS);
const stamp = fileStamp();
let resultsPath = "";
async function record(row: Record<string, unknown>): Promise<void> {
  all.push(row);
  console.log(JSON.stringify(row));
  resultsPath = await writeResults(`scale-${stamp}`, { started: stamp, runtime: RUNTIME, wsTransport: RUNTIME === "deno" ? wsTransport() : "runtime", cells: all })
    .catch(() => resultsPath);
}

const coords = (reports: Msg[]) => reports.flatMap((r) => r.coordinators as Record<string, any>[]);
const total = (reports: Msg[]): StoreCounts => sumCounts(reports.map((r) => r.total as StoreCounts));

/** Where a grid cell's fleet coordinates: a NATS setup, or the PostgreSQL of the run (its own schema per cell). */
interface CellServer extends AsyncDisposable {
  label: string;
  /** Raw CAS updates/s of this store, measured before the fleet. */
  raw(): Promise<number>;
  /** Server messages so far (NATS only). */
  varz(): Promise<{ out_msgs: number } | undefined>;
  cpuSeconds(): number;
  sample(): { stop(): Promise<{ cpuMax: number; rssMax: number }> };
  fleet(job: string, w: number, s: number): ReturnType<typeof startFleet>;
}

async function cellServer(kind: string): Promise<CellServer> {
  const tunables = { leaseMs: LEASE, maxInFlight: MIF, opTimeoutMs: OPT };
  if (kind === "pg") {
    const pg = pgSetup();
    if (!pg) throw new Error("the pg setup needs PG_URL (npm run bench starts PostgreSQL)");
    const schema = pg.schema();
    return {
      label: pg.label,
      raw: () => rawPgCasRate(pg.url, 2000, 100, schema),
      varz: () => Promise.resolve(undefined),
      cpuSeconds: () => pg.cpuSeconds(),
      sample: () => ({ stop: () => Promise.resolve({ cpuMax: NaN, rssMax: NaN }) }),
      fleet: (job, w, s) => startFleet({ runtime: RUNTIME, procs: PROCS, url: pg.url, job, w, s, role: "tiny", tunables, pg: { schema } }),
      [Symbol.asyncDispose]: () => Promise.resolve(),
    };
  }
  if (kind === "redis") {
    const r = redisSetup();
    if (!r) throw new Error("the redis setup needs REDIS_STORE_URL (npm run bench starts a redis-server)");
    return {
      label: r.label,
      raw: () => rawRedisCasRate(r.url, 2000, 100),
      varz: () => Promise.resolve(undefined),
      cpuSeconds: () => r.cpuSeconds(),
      sample: () => ({ stop: () => Promise.resolve({ cpuMax: NaN, rssMax: NaN }) }),
      fleet: (job, w, s) => startFleet({ runtime: RUNTIME, procs: PROCS, url: r.url, job: `${job}-${Date.now().toString(36)}`, w, s, role: "tiny", tunables, redis: true }),
      [Symbol.asyncDispose]: () => Promise.resolve(),
    };
  }
  const server: NatsSetup = await startNats(kind);
  return {
    label: server.label,
    raw: () => rawCasRate(server.urls, 2000, 100, server.replicas),
    varz: () => server.varz(),
    cpuSeconds: () => server.cpuSeconds(),
    sample: () => sampleServer(server.monitorUrl),
    async fleet(job, w, s) {
      if (server.replicas > 1) {
        // A replicated bucket is made once, before the fleet: many connections creating it at once can time out.
        await (await NatsStore.connect({ servers: server.urls, job, replicas: server.replicas })).close();
      }
      return await fleet(server.url, job, w, s, "tiny", tunables, server.replicas);
    },
    [Symbol.asyncDispose]: () => server[Symbol.asyncDispose](),
  };
}

async function gridCell(w: number, s: number, kind: string): Promise<void> {
  await using server = await cellServer(kind);
  const load0 = loadavg();
  const raw = await server.raw();
  const idealMs = (NEEDED * s) / raw * 1000;
  const limitMs = num("BENCH_CELL_LIMIT_S", 0) * 1000 || Math.max(120_000, 20 * idealMs);
  const f = await server.fleet(`grid-${w}-${s}`, w, s);
  try {
    const v0 = await server.varz(), cpu0 = server.cpuSeconds();
    const sampler = server.sample();
    const t0 = await f.go();
    const why = await until(() => f.count("done") + f.count("failed") >= w, limitMs, f.rss);
    const elapsed = Date.now() - t0;
    const v1 = await server.varz(), cpu1 = server.cpuSeconds();
    const srv = await sampler.stop();
    const reports = await f.report();
    const cs = coords(reports);
    const t = total(reports);
    const completed = cs.reduce((n, c) => n + c.completed, 0);
    const doneAts = cs.map((c) => c.doneAt).filter((x) => typeof x === "number");
    const finished = why === "done" && doneAts.length === w;
    const timeMs = finished ? Math.max(...doneAts) - t0 : elapsed;
    const attempts = cs.reduce((n, c) => n + (c.claimAttempts?.n ?? 0), 0);
    const claimSource = cs.find((c) => c.claimAttempts)?.claimAttempts.source ?? "none";
    const failed = cs.filter((c) => c.error || (finished && c.outcome !== "allComplete")).map((c) => `${c.instance}: ${c.error ?? c.outcome}`);
    // Completions over time from the hosts' progress lines: when 10/50/90 % were done.
    const marks: Record<string, number | null> = {};
    for (const q of [0.1, 0.5, 0.9]) {
      const at = f.hosts.flatMap((h) => h.msgs.filter((m) => m.ev === "progress")).map((m) => m.at as number).sort((a, b) => a - b);
      const per = f.hosts.map(() => 0);
      marks[`t${q * 100}Ms`] = null;
      for (const t of at) {
        f.hosts.forEach((h, i) => (per[i] = h.msgs.findLast((m) => m.ev === "progress" && m.at <= t)?.completed ?? 0));
        if (per.reduce((a, b) => a + b, 0) >= q * s) {
          marks[`t${q * 100}Ms`] = Math.round(t - t0);
          break;
        }
      }
    }
    const hostRss = reports.map((r) => ({ rss: MiB(r.rss), base: MiB(r.baseRss), coordinators: r.coordinators.length }));
    const perCoordMiB = reports.length
      ? +(reports.reduce((n, r) => n + (r.rss - r.baseRss) / r.coordinators.length, 0) / reports.length / 2 ** 20).toFixed(2)
      : NaN;
    const outPerWrite = v0 && v1 ? (v1.out_msgs - v0.out_msgs) / t.writesLanded : NaN;
    const row = {
      scenario: "grid",
      server: server.label,
      W: w,
      S: s,
      procs: f.hosts.length,
      runtime: RUNTIME,
      loadavg: [load0, loadavg()],
      finished,
      stoppedBy: why,
      timeMs: Math.round(timeMs),
      ...marks,
      firstDoneMs: doneAts.length ? Math.round(Math.min(...doneAts) - t0) : null,
      splitsPerSec: Math.round(completed / (timeMs / 1000)),
      rawCasPerSec: Math.round(raw),
      neededWrites: NEEDED * s,
      idealMs: Math.round(idealMs),
      timeOverIdeal: +(timeMs / idealMs).toFixed(2),
      timeOverLandedAtRaw: +(timeMs / (t.writesLanded / raw * 1000)).toFixed(2),
      writesLanded: t.writesLanded,
      writeCalls: t.writeCalls,
      writeConflicts: t.writeConflicts,
      writeErrors: t.writeErrors,
      writesPerSplit: +(t.writesLanded / s).toFixed(2),
      writeCallsPerSplit: +(t.writeCalls / s).toFixed(2),
      claimAttempts: attempts,
      claimSource,
      attemptsPerCompleted: +(attempts / Math.max(1, completed)).toFixed(3),
      serverOutMsgs: v0 && v1 ? v1.out_msgs - v0.out_msgs : null,
      outMsgsPerWrite: Number.isNaN(outPerWrite) ? null : +outPerWrite.toFixed(2),
      serverCpuPctAvg: +((cpu1 - cpu0) / (elapsed / 1000) * 100).toFixed(1),
      serverVarzCpuMax: srv.cpuMax,
      serverRssMaxMiB: MiB(srv.rssMax),
      hostRss,
      perCoordinatorMiB: perCoordMiB,
      completed,
      lost: finished ? s - completed : null, // an unfinished cell's missing splits are not lost, just not done
      notCompleted: s - completed,
      failed,
      reads: { watchPuts: t.watchPuts, watchMiB: MiB(t.watchBytes), listEntries: t.listEntries, gets: t.gets },
      writeOps: t.ops,
    };
    await record(row);
    result({
      bench: "scale",
      metric: `W=${w} S=${s} on ${server.label}: time ÷ (${NEEDED} writes/split at raw CAS rate)`,
      value: finished
        ? `${(timeMs / 1000).toFixed(1)} s, ${row.splitsPerSec}/s, ${row.writesPerSplit} writes/split, ` +
          `${row.attemptsPerCompleted} claims/split (${claimSource}), ` +
          (row.outMsgsPerWrite === null ? "" : `${row.outMsgsPerWrite} msgs out/write, `) +
          `raw CAS ${row.rawCasPerSec}/s, server CPU ${row.serverCpuPctAvg} %, lost ${row.lost}` +
          (failed.length ? `, ${failed.length} failed` : "")
        : `did not finish (${why}) in ${(elapsed / 1000).toFixed(0)} s: ${completed}/${s} completed` +
          (failed.length ? `, ${failed.length} coordinator(s) failed (first: ${failed[0]})` : ""),
      ratio: finished ? row.timeOverIdeal : undefined,
      target: "<= 2",
    });
  } finally {
    await f.stop();
  }
}

async function steady(): Promise<void> {
  const w = num("BENCH_STEADY_W", 50), s = num("BENCH_STEADY_S", 10_000), windowMs = num("BENCH_STEADY_MS", 120_000);
  await using server = await NatsServer.start();
  const mif = 2 * Math.ceil(s / w); // fair share caps every worker at S/W
  const f = await fleet(server.wsUrl, "steady", w, s, "hold", { leaseMs: LEASE, maxInFlight: mif, opTimeoutMs: OPT });
  try {
    const t0 = await f.go();
    const why = await until(() => f.latest("held", "n") >= s && f.count("joined") >= w, Math.max(120_000, s * 20), f.rss);
    const heldAt = Date.now() - t0;
    await sleep(LEASE / 3); // one heartbeat round after the last claim
    // Seeding deals large plans in runs per member, and balancing then moves
    // splits (steals) until loads are within one: wait until no split record
    // has been written for three heartbeat rounds (at most 5 min), so the
    // window measures the steady state, and report how long balancing took.
    const splitWrites = (rs: Msg[]) => Object.entries(total(rs).ops).filter(([k]) => k.startsWith("update.split.")).reduce((n, [, v]) => n + v, 0);
    let quietSince = Date.now(), last = splitWrites(await f.report());
    const settleEnd = Date.now() + num("BENCH_STEADY_SETTLE_MS", 300_000);
    while (Date.now() - quietSince < LEASE && Date.now() < settleEnd) {
      await sleep(LEASE / 6);
      const n = splitWrites(await f.report());
      if (n !== last) (last = n), (quietSince = Date.now());
    }
    const balancedAt = Date.now() - t0;
    const r0 = await f.report(), v0 = await varz(server.monitorUrl);
    const a = Date.now();
    await sleep(windowMs);
    const r1 = await f.report(), v1 = await varz(server.monitorUrl);
    const secs = (Date.now() - a) / 1000;
    const writes = (total(r1).writesLanded - total(r0).writesLanded) / secs;
    const expected = (3 * w) / (LEASE / 1000);
    const fences = (rs: Msg[]) => coords(rs).reduce((n, c) => n + (c.selfFences ?? 0), 0);
    const row = {
      scenario: "steady",
      W: w,
      S: s,
      procs: f.hosts.length,
      runtime: RUNTIME,
      allHeld: why === "done",
      heldAtMs: Math.round(heldAt),
      balancedAtMs: Math.round(balancedAt),
      held: f.latest("held", "n"),
      windowS: +secs.toFixed(1),
      writesPerSec: +writes.toFixed(2),
      expectedPerSec: expected,
      writesOverExpected: +(writes / expected).toFixed(3),
      serverOutMsgsPerSec: +((v1.out_msgs - v0.out_msgs) / secs).toFixed(1),
      writeOpsInWindow: diffCounts(total(r1), total(r0)).ops,
      selfFencesInWindow: fences(r1) - fences(r0),
      selfFencesTotal: fences(r1),
      hostRssMiB: r1.map((r) => MiB(r.rss)),
    };
    await record(row);
    result({
      bench: "scale",
      metric: `steady ${w} workers holding ${s}: writes/s ÷ 3·W/leaseMs`,
      value: `${row.writesPerSec} vs ${expected} writes/s (${(3 * (w + 1)) / (LEASE / 1000)} with the leader's beat), ${row.serverOutMsgsPerSec} msgs out/s, ` +
        `${row.selfFencesInWindow} self-fences in ${row.windowS} s (all held after ${(heldAt / 1000).toFixed(1)} s, balanced after ${(balancedAt / 1000).toFixed(1)} s)` +
        (row.allHeld ? "" : `, only ${row.held} held (${why})`),
      ratio: row.writesOverExpected,
      target: "0.9–1.1, 0 self-fences",
    });
  } finally {
    await f.stop();
  }
}

async function joinScenario(): Promise<void> {
  const w = num("BENCH_JOIN_W", 100), s = num("BENCH_JOIN_S", 100_000), waitMs = num("BENCH_JOIN_WAIT_MS", 30_000);
  await using server = await NatsServer.start();
  const tun = { leaseMs: LEASE, maxInFlight: 2 * Math.ceil(s / w), opTimeoutMs: OPT };
  const f = await fleet(server.wsUrl, "join", w, s, "hold", tun);
  let joiner: Child | undefined;
  try {
    const t0 = await f.go();
    const why = await until(() => f.latest("held", "n") >= s && f.count("joined") >= w, Math.max(120_000, s * 2), f.rss);
    const heldAt = Date.now() - t0;
    const fleetOps = total(await f.report()).ops; // what holding S cost the fleet, before the joiner
    joiner = await spawnOn(RUNTIME, "joiner", {
      mode: "nats", url: server.wsUrl, job: "join", instances: ["joiner"], splits: s, role: "hold", tunables: tun,
      planner: true, progressEvery: 1,
    });
    await joiner.next((m) => m.ev === "ready", 60_000, "joiner ready");
    await joiner.send({ cmd: "go" });
    const joined = await joiner.next((m) => m.ev === "joined" || m.ev === "failed", 120_000, "joiner joined");
    await joiner.send({ cmd: "report" });
    const atJoin = await joiner.next((m) => m.ev === "report", 30_000, "report at join");
    const end = performance.now() + waitMs;
    while (performance.now() < end && !joiner.msgs.some((m) => m.ev === "held")) await sleep(50);
    const from = joiner.msgs.length;
    await joiner.send({ cmd: "report" });
    const later = await joiner.next((m) => m.ev === "report" && joiner!.msgs.indexOf(m) >= from, 30_000, "report");
    const c0 = atJoin.coordinators[0], c1 = later.coordinators[0];
    const read = (c: StoreCounts) => ({ records: c.gets + c.listEntries + c.watchPuts, bytes: c.getBytes + c.listBytes + c.watchBytes });
    const r0 = read(c0.counts), r1 = read(c1.counts);
    const row = {
      scenario: "join",
      W: w,
      S: s,
      fleetHeld: why === "done",
      fleetHeldAtMs: Math.round(heldAt),
      fleetWriteOps: fleetOps,
      joined: joined.ev === "joined",
      joinMs: joined.ms !== undefined ? Math.round(joined.ms) : null,
      firstEventMs: c1.firstEventAt ? Math.round(c1.firstEventAt - c1.joinCalledAt) : null,
      firstEventType: c1.firstEventType ?? null,
      recordsReadAtJoin: r0.records,
      bytesReadAtJoin: r0.bytes,
      recordsReadByFirstEvent: r1.records,
      bytesReadByFirstEvent: r1.bytes,
      countsAtJoin: c0.counts,
      joinerRssMiB: MiB(later.rss),
      joinerRssOverBaseMiB: MiB(later.rss - later.baseRss),
      recordsOverSWplusW: +(r0.records / (s / w + w)).toFixed(1),
    };
    await record(row);
    result({
      bench: "scale",
      metric: `join into ${w} workers holding ${s}: records read ÷ (S/W + W)`,
      value: `join ${row.joinMs} ms, first event ${row.firstEventMs ?? "none"} ms (${row.firstEventType ?? "-"}), ` +
        `${r0.records} records / ${MiB(r0.bytes)} MiB read at join, joiner +${row.joinerRssOverBaseMiB} MiB` +
        (row.fleetHeld ? "" : ` (fleet held only ${f.latest("held", "n")}: ${why})`),
      ratio: row.recordsOverSWplusW,
      target: "O(1); join < 1 s",
    });
  } finally {
    await joiner?.stop(5000);
    await f.stop();
  }
}

async function memoryScenario(n: number, s: number): Promise<void> {
  const limitMs = num("BENCH_MEM_LIMIT_S", 120) * 1000;
  const h = await spawnOn(RUNTIME, `memory-${n}`, {
    mode: "memory", job: `mem${n}`, instances: Array.from({ length: n }, (_, i) => `m${i}`), splits: s, role: "tiny",
    // A short lease, so heartbeats (every lease / 3) are due within the run: the point is that timers fire.
    tunables: { leaseMs: num("BENCH_MEM_LEASE_MS", 3000), maxInFlight: MIF, opTimeoutMs: Math.min(OPT, num("BENCH_MEM_LEASE_MS", 3000) / 3) },
    planner: true,
    progressEvery: Math.max(100, s / 20),
  });
  try {
    await h.next((m) => m.ev === "ready", 60_000, "ready");
    const t0 = Date.now();
    await h.send({ cmd: "go" });
    let rep: Msg | undefined;
    try {
      rep = await h.next((m) => m.ev === "report", limitMs, "all coordinators done");
    } catch {
      await h.send({ cmd: "report" }); // may never be read if the process starves its I/O
      rep = await h.next((m) => m.ev === "report", 5000, "report").catch(() => undefined);
    }
    const cs = rep ? coords([rep]) : [];
    const done = cs.filter((c) => c.outcome === "allComplete").length;
    const doneAts = cs.map((c) => c.doneAt).filter((x) => typeof x === "number");
    const timeMs = done === n ? Math.max(...doneAts) - t0 : Date.now() - t0;
    const progress = h.msgs.findLast((m) => m.ev === "progress")?.completed ?? 0;
    const row = {
      scenario: "memory",
      W: n,
      S: s,
      completes: done === n,
      coordinatorsDone: done,
      completed: rep ? cs.reduce((a, c) => a + c.completed, 0) : progress,
      timeMs: Math.round(timeMs),
      heartbeats: rep ? (rep.total as StoreCounts).memberBeats : null,
      heartbeatsExpected: Math.floor(timeMs / (num("BENCH_MEM_LEASE_MS", 3000) / 3)) * n,
      leaderTerms: rep?.planTerm ?? null,
      probeFires: rep?.probeFires ?? null,
      probeExpected: Math.floor(timeMs / 100),
      attemptsPerCompleted: rep ? +(cs.reduce((a, c) => a + (c.claimAttempts?.n ?? 0), 0) / Math.max(1, s)).toFixed(2) : null,
      rssMiB: rep ? MiB(rep.rss) : MiB(rssBytes(h.proc.pid)),
    };
    await record(row);
    result({
      bench: "scale",
      metric: `MemoryStore ${n} × ${s} in one process: leader terms`,
      value: row.completes
        ? `${(timeMs / 1000).toFixed(1)} s, ${row.heartbeats} heartbeats, 100 ms timer fired ${row.probeFires}/${row.probeExpected}`
        : `did not finish in ${(timeMs / 1000).toFixed(0)} s: ${row.completed}/${s} completed, ${done}/${n} saw the end`,
      ratio: row.leaderTerms ?? undefined,
      target: "completes, heartbeats > 0, 1 term",
    });
  } finally {
    await h.stop(5000);
  }
}

/** Runs one cell; a cell that breaks is recorded as an error row and the run goes on. */
async function cell(name: string, f: () => Promise<void>): Promise<void> {
  console.log(`\n--- ${name} ---`);
  try {
    await f();
  } catch (e) {
    await record({ scenario: name, error: String(e) });
    result({ bench: "scale", metric: name, value: `error: ${String(e).slice(0, 200)}` });
  }
}

console.log(`scale bench: runtime ${RUNTIME} (WebSocket: ${RUNTIME === "deno" ? wsTransport() : "runtime"}), ${PROCS} processes per fleet, leaseMs ${LEASE}, maxInFlight ${MIF}`);
if (SCENARIOS.includes("grid")) {
  for (const s of list("BENCH_S", [1000, 10_000, 100_000])) {
    for (const w of list("BENCH_W", [4, 16, 50, 100])) {
      // PostgreSQL and Redis next to NATS in the same run (when `npm run bench` started them).
      for (const kind of [...setupKinds(), ...(pgSetup() ? ["pg"] : []), ...(redisSetup() ? ["redis"] : [])]) await cell(`grid W=${w} S=${s} on ${kind}`, () => gridCell(w, s, kind));
    }
  }
}
if (SCENARIOS.includes("steady")) await cell("steady", steady);
if (SCENARIOS.includes("join")) await cell("join", joinScenario);
if (SCENARIOS.includes("memory")) {
  for (const n of list("BENCH_MEM_W", [30, 100])) await cell(`memory ${n}`, () => memoryScenario(n, num("BENCH_MEM_S", 10_000)));
}
if (SCENARIOS.includes("million")) {
  const deps = { runtime: RUNTIME, procs: PROCS, maxInFlight: MIF, opTimeoutMs: OPT, neededPerSplit: NEEDED, maxRss: MAX_RSS, stamp, record };
  for (const kind of millionStores()) await cell(`million on ${kind}`, () => millionCell(kind, deps));
}
if (SCENARIOS.includes("shards")) {
  const deps = { runtime: RUNTIME, procs: PROCS, leaseMs: LEASE, maxInFlight: MIF, opTimeoutMs: OPT, neededPerSplit: NEEDED, maxRss: MAX_RSS, record };
  for (const { kind, k } of shardCells()) await cell(`shards K=${k} on ${kind}`, () => shardsCell(kind, k, deps));
}
console.log(`results: ${resultsPath}`);
