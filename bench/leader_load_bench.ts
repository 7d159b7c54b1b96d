// Leader load under progress commits (issue 32, item 1): what a steady
// stream of progress-only commits (no ownership change) from many members
// costs the leader.
//
//   npm run bench -- leader-load
//   BENCH_LEADER_LOAD_RATES=400,4000 BENCH_LEADER_LOAD_MEMBERS=10,100 npm run bench -- leader-load
//
// The fleet, on one nats-server (BENCH_NATS, first setup): the leader alone
// in a process of its own (bench/scale_host.ts, one coordinator carrying the
// planner, joined first so it wins the election; by default a standby,
// maxInFlight 0, so its process's CPU is the leader's role and nothing
// else), and MEMBERS committing members spread over PROCS processes, each
// holding LANES splits (the plan has MEMBERS × LANES splits, so every split
// is held and none waits). Once every split is held and the fleet has
// settled, each phase runs for MS: first idle (no commits: heartbeats
// only), then each offered rate in turn, the follower processes sharing it
// evenly and committing progress (a watermark and an estimate, as a
// backfill does) round-robin over their held splits, one commit in flight
// per split at most.
//
// Per phase: commits offered (the rate × the phase) and landed, the CPU of
// the leader's process, of the follower processes and of nats-server (from
// /proc, % of one core), and the messages reaching the leader per landed
// commit: watch deliveries counted by a CountingStore around the leader's
// store only (the followers run unwrapped: the wrapper parses every split
// update it sends), and every message nats-server sent the leader's
// connection (/connz). The target (issue 32): at 4,000 commits/s from 100
// members, the leader's CPU ≤ 2 × its idle CPU.
//
// Env knobs: BENCH_LEADER_LOAD_MEMBERS [100], BENCH_LEADER_LOAD_RATES
// [400,4000], BENCH_LEADER_LOAD_LANES [4], BENCH_LEADER_LOAD_PROCS [4],
// BENCH_LEADER_LOAD_MS [10000] (each phase), BENCH_LEADER_LOAD_WARMUP_MS
// [2000] (after a rate change, before measuring), BENCH_LEADER_LOAD_IDLE_MS
// [20000] (the idle phase: longer, its CPU is a few clock ticks a second),
// BENCH_LEADER_LOAD_LEADER_LANES
// [0] (give the leader lanes: it then holds and commits like the others),
// BENCH_RUNTIME [deno] (or node), BENCH_LEADER_LOAD_LEADER_FLAGS (runtime
// flags of the leader's process only, e.g. "--cpu-prof
// --cpu-prof-dir=/tmp/prof"), BENCH_LEADER_LOAD_FOLLOWER_FLAGS (the same for
// the first follower process).
import { setupKinds, startNats } from "./_servers.ts";
import { spawnHost } from "./_fleet.ts";
import { result } from "./_common.ts";
import { type Child, cpuSeconds, fileStamp, loadavg, type Msg, sleep, writeResults } from "./_procs.ts";
import type { StoreCounts } from "./counting_store.ts";

const num = (k: string, d: number) => Number(Deno.env.get(k) ?? d);
const list = (k: string, d: number[]) => (Deno.env.get(k)?.split(",").filter(Boolean).map(Number) ?? d);
const MEMBERS = list("BENCH_LEADER_LOAD_MEMBERS", [100]);
const RATES = list("BENCH_LEADER_LOAD_RATES", [400, 4000]);
const LANES = num("BENCH_LEADER_LOAD_LANES", 4);
const PROCS = num("BENCH_LEADER_LOAD_PROCS", 4);
const MS = num("BENCH_LEADER_LOAD_MS", 10_000);
const WARMUP = num("BENCH_LEADER_LOAD_WARMUP_MS", 2000);
const IDLE_MS = num("BENCH_LEADER_LOAD_IDLE_MS", 20_000);
const LEADER_LANES = num("BENCH_LEADER_LOAD_LEADER_LANES", 0);
const RUNTIME = Deno.env.get("BENCH_RUNTIME") ?? "deno";
const flags = (k: string) => (Deno.env.get(k) ?? "").split(" ").filter(Boolean);
const stamp = fileStamp();

interface Commits {
  due: number;
  issued: number;
  landed: number;
  failed: number;
  skipped: number;
  latencyMs: number;
}
/** What one phase measured. */
interface Phase {
  rate: number;
  seconds: number;
  offered: number;
  landed: number;
  failed: number;
  skipped: number;
  /** Mean round trip of a landed commit, ms. */
  latencyMs: number;
  /** % of one core. */
  leaderCpu: number;
  followerCpu: number;
  serverCpu: number;
  leaderWatchPuts: number;
  leaderConnOut: number;
}

/** Messages nats-server sent the connection named `name` so far (/connz). */
async function connOut(monitorUrl: string, name: string): Promise<number> {
  const r = await fetch(`${monitorUrl}/connz?limit=4096`);
  const j = await r.json() as { connections: { name?: string; out_msgs: number }[] };
  return j.connections.find((c) => c.name === name)?.out_msgs ?? NaN;
}

async function ask(h: Child, cmd: Record<string, unknown>, ev: string, ms = 30_000): Promise<Msg> {
  const from = h.msgs.length;
  await h.send(cmd);
  return h.next((m) => m.ev === ev && h.msgs.indexOf(m) >= from, ms, ev);
}

async function cell(kind: string, members: number): Promise<Phase[]> {
  await using server = await startNats(kind);
  const job = `leaderload${stamp.replace(/[^0-9A-Za-z]/g, "").slice(0, 15)}m${members}`;
  const splits = members * LANES + LEADER_LANES;
  const tunables = { opTimeoutMs: 5000 };
  const leader = await spawnHost(RUNTIME, "leader", {
    mode: "nats",
    url: server.url,
    job,
    instances: ["leader"],
    splits,
    role: "hold",
    tunables: { ...tunables, maxInFlight: LEADER_LANES },
    planner: true,
    progressEvery: 1e9,
  }, flags("BENCH_LEADER_LOAD_LEADER_FLAGS"));
  const procs = Math.min(PROCS, members);
  const groups: string[][] = Array.from({ length: procs }, () => []);
  for (let i = 0; i < members; i++) groups[i % procs].push(`m${i}`);
  const hosts: Child[] = [leader];
  try {
    await leader.next((m) => m.ev === "ready", 60_000, "ready");
    await leader.send({ cmd: "go" });
    await leader.next((m) => m.ev === "joined" || m.ev === "failed", 60_000, "joined");
    // Leading (the plan written) before anyone else joins.
    for (const end = performance.now() + 30_000;;) {
      const r = await ask(leader, { cmd: "report" }, "report");
      if (r.coordinators[0].isLeader && r.planTerm !== undefined) break;
      if (performance.now() > end) throw new Error("the leader's process did not lead within 30 s");
      await sleep(100);
    }
    const followers = await Promise.all(groups.map((instances, p) =>
      spawnHost(RUNTIME, `followers${p}`, {
        mode: "nats",
        url: server.url,
        job,
        instances,
        splits,
        role: "hold",
        tunables: { ...tunables, maxInFlight: LANES },
        planner: false,
        progressEvery: 1,
        count: false,
      }, p === 0 ? flags("BENCH_LEADER_LOAD_FOLLOWER_FLAGS") : [])
    ));
    hosts.push(...followers);
    await Promise.all(followers.map((h) => h.next((m) => m.ev === "ready", 60_000, "ready")));
    await Promise.all(followers.map((h) => h.send({ cmd: "go" })));
    const held = () => hosts.reduce((n, h) => n + (h.msgs.findLast((m) => m.ev === "held")?.n ?? 0), 0);
    const t0 = performance.now();
    while (held() < splits) {
      const failed = hosts.flatMap((h) => h.msgs).find((m) => m.ev === "failed");
      if (failed) throw new Error(`${failed.instance}: ${failed.error}`);
      if (performance.now() - t0 > 120_000) throw new Error(`${held()}/${splits} splits held after 120 s`);
      await sleep(100);
    }
    console.log(`  ${members} members + a leader (${LEADER_LANES} lanes) hold all ${splits} splits after ${((performance.now() - t0) / 1000).toFixed(1)} s; settling`);
    await sleep(3000);

    const pids = hosts.map((h) => h.proc.pid);
    const leaderName = `splitlease:${job}:leader`;
    const snap = async () => {
      const lr = await ask(leader, { cmd: "report" }, "report");
      const frs = await Promise.all(followers.map((h) => ask(h, { cmd: "report" }, "report")));
      const cs = [lr, ...frs].map((r) => r.commits as Commits);
      return {
        at: performance.now(),
        cpu: pids.map(cpuSeconds),
        server: server.cpuSeconds(),
        watchPuts: (lr.coordinators[0].counts as StoreCounts).watchPuts,
        connOut: await connOut(server.monitorUrl, leaderName).catch(() => NaN),
        due: cs.reduce((n, c) => n + c.due, 0),
        landed: cs.reduce((n, c) => n + c.landed, 0),
        failed: cs.reduce((n, c) => n + c.failed, 0),
        skipped: cs.reduce((n, c) => n + c.skipped, 0),
        latencyMs: cs.reduce((n, c) => n + c.latencyMs, 0),
      };
    };
    const phases: Phase[] = [];
    for (const rate of [0, ...RATES]) {
      // The leader commits its share too when it has lanes.
      const committers = LEADER_LANES > 0 ? [leader, ...followers] : followers;
      const share = (h: Child) => (h === leader ? (rate * LEADER_LANES) / splits : (rate * (splits - LEADER_LANES)) / splits / followers.length);
      await Promise.all(committers.map((h) => h.send({ cmd: "rate", perSec: share(h) })));
      await sleep(rate ? WARMUP : 1000);
      const a = await snap();
      await sleep(rate ? MS : IDLE_MS);
      const b = await snap();
      const s = (b.at - a.at) / 1000;
      const pct = (x: number) => (100 * x) / s;
      const p: Phase = {
        rate,
        seconds: s,
        offered: b.due - a.due,
        landed: b.landed - a.landed,
        failed: b.failed - a.failed,
        skipped: b.skipped - a.skipped,
        latencyMs: (b.latencyMs - a.latencyMs) / Math.max(1, b.landed - a.landed),
        leaderCpu: pct(b.cpu[0] - a.cpu[0]),
        followerCpu: pct(b.cpu.slice(1).reduce((n, c, k) => n + c - a.cpu[k + 1], 0)),
        serverCpu: pct(b.server - a.server),
        leaderWatchPuts: b.watchPuts - a.watchPuts,
        leaderConnOut: b.connOut - a.connOut,
      };
      phases.push(p);
      console.log(
        `  ${rate ? `${rate}/s offered` : "idle"}: ${(p.offered / s).toFixed(0)}/s due, ${(p.landed / s).toFixed(0)}/s landed` +
          `${p.failed ? `, ${p.failed} failed` : ""}${p.skipped ? `, ${p.skipped} skipped (every held split busy)` : ""}` +
          `${p.landed ? `, ${p.latencyMs.toFixed(1)} ms per commit` : ""}; ` +
          `CPU leader ${p.leaderCpu.toFixed(1)}%, followers ${p.followerCpu.toFixed(1)}%, nats-server ${p.serverCpu.toFixed(1)}%; ` +
          `at the leader ${(p.leaderWatchPuts / s).toFixed(1)} watch deliveries/s, ${(p.leaderConnOut / s).toFixed(1)} messages/s` +
          (p.landed ? ` (${(p.leaderWatchPuts / p.landed).toFixed(3)} and ${(p.leaderConnOut / p.landed).toFixed(3)} per commit)` : ""),
      );
    }
    await Promise.all(hosts.map((h) => h.send({ cmd: "rate", perSec: 0 })));
    return phases;
  } finally {
    await Promise.all(hosts.map((h) => h.send({ cmd: "close" })));
    await Promise.allSettled(hosts.map((h) => h.next((m) => m.ev === "closed", 20_000, "closed")));
    await Promise.all(hosts.map((h) => h.stop(5000)));
  }
}

const kind = setupKinds()[0];
const out: Record<string, unknown> = { started: stamp, runtime: RUNTIME, lanes: LANES, leaderLanes: LEADER_LANES, ms: MS, loadavgStart: loadavg() };
console.log(
  `leader-load bench: ${RUNTIME} hosts, nats-server (${kind}) over WebSocket, ${LANES} splits held per member, ` +
    `the leader ${LEADER_LANES ? `holding ${LEADER_LANES}` : "a standby (maxInFlight 0)"} in a process of its own; ${MS / 1000} s per phase; load average ${out.loadavgStart}`,
);
const cells: Record<string, Phase[]> = {};
for (const members of MEMBERS) {
  console.log(`${members} members:`);
  const phases = await cell(kind, members);
  cells[members] = phases;
  const idle = phases[0];
  for (const p of phases.slice(1)) {
    const tag = `${members} members, ${p.rate}/s offered`;
    const s = p.seconds;
    result({
      bench: "leader-load",
      metric: `${tag}: commits landed / offered`,
      value: `${(p.landed / s).toFixed(0)}/s of ${(p.offered / s).toFixed(0)}/s`,
      ratio: p.landed / p.offered,
    });
    result({
      bench: "leader-load",
      metric: `${tag}: leader CPU / idle leader CPU`,
      value: `${p.leaderCpu.toFixed(1)}% vs ${idle.leaderCpu.toFixed(1)}% of a core`,
      ratio: p.leaderCpu / idle.leaderCpu,
      ...(members === 100 && p.rate === 4000 ? { target: "≤ 2" } : {}),
    });
    result({
      bench: "leader-load",
      metric: `${tag}: leader CPU ms per landed commit (over idle)`,
      value: `${(((p.leaderCpu - idle.leaderCpu) * 10 * s) / p.landed).toFixed(3)} ms`,
    });
    result({
      bench: "leader-load",
      metric: `${tag}: follower CPU, nats-server CPU (% of a core)`,
      value: `${p.followerCpu.toFixed(1)}%, ${p.serverCpu.toFixed(1)}% (idle ${idle.followerCpu.toFixed(1)}%, ${idle.serverCpu.toFixed(1)}%)`,
    });
    result({
      bench: "leader-load",
      metric: `${tag}: watch deliveries reaching the leader per commit`,
      value: `${(p.leaderWatchPuts / p.landed).toFixed(3)} (every message from the server: ${(p.leaderConnOut / p.landed).toFixed(3)})`,
      ratio: p.leaderWatchPuts / p.landed,
    });
  }
}
out.cells = cells;
out.loadavgEnd = loadavg();
console.log(`load average at the end ${out.loadavgEnd}; results: ${await writeResults(`leader-load-${stamp}`, out)}`);
