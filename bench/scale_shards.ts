/**
 * The scale bench's `shards` scenario (issue 39, item 5): one job of S tiny
 * splits and W workers, unsharded (K = 1, a `SplitCoordinator` per worker)
 * and sharded (K = 4, a `ShardedCoordinator` per worker: a bucket, an
 * election and a leader per shard), on one nats-server and on a 3-node
 * cluster with R3 buckets, one after the other in one run. Every worker
 * carries the planner, so each shard's leader is whichever member won its
 * election (on any host). Per cell:
 *
 * - the time to `allComplete` on every worker, against S × BENCH_NEEDED_PER_SPLIT
 *   writes at the raw CAS rate of one bucket (measured at the cell's start)
 *   and at the summed raw rate of K buckets written at once (the bound a
 *   sharded job is measured against);
 * - server CPU per node (its CPU seconds over the run ÷ every write the job
 *   landed), so the nodes of a cluster can be compared;
 * - each shard's stream: its leader node and its writes (the stream's last
 *   sequence), and the share of the job's writes each node led (1 of 1 on
 *   one node; on a cluster, K = 1 puts every write on one stream leader).
 *
 * Knobs: BENCH_SHARDS_S [200000], BENCH_SHARDS_W [100], BENCH_SHARDS_K [1,4],
 * BENCH_SHARDS_NATS [current,current-r3], BENCH_SHARDS_LIMIT_S [max(300, 20 × bound)].
 *
 * @module
 */
import { NatsStore } from "../nats.ts";
import { shardJob } from "../admin.ts";
import { natsTransport } from "./_transport.ts";
import { type NatsSetup, startNats, streamInfo } from "./_servers.ts";
import { type StoreCounts, sumCounts } from "./counting_store.ts";
import { result } from "./_common.ts";
import { fleet as startFleet, until } from "./_fleet.ts";
import { loadavg, type Msg, rawCasRate } from "./_procs.ts";

const num = (k: string, d: number) => Number(Deno.env.get(k) ?? d);
const list = (k: string, d: string) => (Deno.env.get(k) ?? d).split(",").map((s) => s.trim()).filter(Boolean);

/** What the scenario needs from scale_bench.ts. */
export interface ShardsDeps {
  runtime: string;
  procs: number;
  leaseMs: number;
  maxInFlight: number;
  opTimeoutMs: number;
  /** Store writes a tiny split needs (the bound's numerator per split). */
  neededPerSplit: number;
  maxRss: number;
  record(row: Record<string, unknown>): Promise<void>;
}

/** The cells the scenario runs, in order: every setup, K = 1 and 4 on each. */
export function shardCells(): { kind: string; k: number }[] {
  const ks = list("BENCH_SHARDS_K", "1,4").map(Number);
  return list("BENCH_SHARDS_NATS", "current,current-r3").flatMap((kind) => ks.map((k) => ({ kind, k })));
}

/** Raw CAS updates/s of `k` buckets written at once (each with 100 keys in flight on a connection of its own), summed. */
async function rawRate(server: NatsSetup, k: number): Promise<number> {
  const rates = await Promise.all(Array.from({ length: k }, () => rawCasRate(server.urls, 2000, 100, server.replicas)));
  return rates.reduce((a, b) => a + b, 0);
}

/** One cell: the job on one setup with `k` shards (see the module doc). */
export async function shardsCell(kind: string, k: number, d: ShardsDeps): Promise<void> {
  const S = num("BENCH_SHARDS_S", 200_000), W = num("BENCH_SHARDS_W", 100);
  const job = `shards${k}-${Date.now().toString(36)}`;
  await using server = await startNats(kind);
  const load0 = loadavg();
  const raw1 = await rawRate(server, 1);
  const rawK = k > 1 ? await rawRate(server, k) : raw1;
  const boundMs = (d.neededPerSplit * S) / raw1 * 1000;
  const limitMs = num("BENCH_SHARDS_LIMIT_S", 0) * 1000 || Math.max(300_000, 20 * boundMs);
  // Every shard's bucket made before the fleet (on a cluster, many connections creating one at once can time out).
  const jobs = Array.from({ length: k }, (_, i) => shardJob(job, i));
  const streams: string[] = [];
  for (const j of jobs) {
    const s = await NatsStore.connect({ servers: server.urls, job: j, replicas: server.replicas, ...(await natsTransport()) });
    streams.push(`KV_${s.bucket}`);
    await s.close();
  }
  console.log(`shards K=${k} on ${server.label}: S=${S} W=${W}, raw CAS ${Math.round(raw1)}/s (${k} buckets at once: ${Math.round(rawK)}/s), bound ${(boundMs / 1000).toFixed(1)} s`);
  const f = await startFleet({
    runtime: d.runtime,
    procs: d.procs,
    url: server.url,
    job,
    w: W,
    s: S,
    role: "tiny",
    tunables: { leaseMs: d.leaseMs, maxInFlight: d.maxInFlight, opTimeoutMs: d.opTimeoutMs },
    replicas: server.replicas,
    shards: k,
  });
  try {
    const before = await streamInfo(server.nodes, streams);
    const cpu0 = server.nodes.map((n) => n.cpuSeconds());
    const t0 = await f.go();
    const why = await until(() => f.count("done") + f.count("failed") >= W, limitMs, f.rss, d.maxRss);
    const elapsed = Date.now() - t0;
    const cpu1 = server.nodes.map((n) => n.cpuSeconds());
    const after = await streamInfo(server.nodes, streams);
    const reports: Msg[] = await f.report(60_000);
    const cs = reports.flatMap((r) => r.coordinators as Record<string, any>[]);
    const t: StoreCounts = sumCounts(reports.map((r) => r.total as StoreCounts));
    const completed = cs.reduce((n, c) => n + c.completed, 0);
    const doneAts = cs.map((c) => c.doneAt).filter((x) => typeof x === "number");
    const finished = why === "done" && doneAts.length === W;
    const timeMs = finished ? Math.max(...doneAts) - t0 : elapsed;
    const failed = cs.filter((c) => c.error || (finished && c.outcome !== "allComplete")).map((c) => `${c.instance}: ${c.error ?? c.outcome}`);
    const fences = cs.reduce((n, c) => n + (c.selfFences ?? 0), 0);
    // What the streams stored over the run: every write of the job, per shard.
    const perStream = after.map((a, i) => ({ stream: a.name, leader: a.leader, leaderAtStart: before[i].leader, writes: a.lastSeq - (before[i].lastSeq || 0) }));
    const writes = perStream.reduce((n, s) => n + s.writes, 0);
    const nodes = server.nodes.map((n, i) => {
      const led = perStream.filter((s) => s.leader === n.name).reduce((a, s) => a + s.writes, 0);
      const cpu = cpu1[i] - cpu0[i];
      return {
        node: n.name,
        cpuSeconds: +cpu.toFixed(1),
        cpuPctAvg: +(cpu / (elapsed / 1000) * 100).toFixed(1),
        cpuMsPerWrite: +(cpu * 1000 / writes).toFixed(4),
        streamsLed: perStream.filter((s) => s.leader === n.name).length,
        writesLed: led,
        shareOfWritesLed: +(led / writes).toFixed(3),
      };
    });
    const shareMax = Math.max(...nodes.map((n) => n.shareOfWritesLed));
    const leaders = Array.from({ length: k }, (_, i) => cs.filter((c) => (c.leads ? c.leads[i] : i === 0 && c.isLeader)).map((c) => c.instance));
    const row = {
      scenario: "shards",
      server: server.label,
      K: k,
      S,
      W,
      procs: f.hosts.length,
      runtime: d.runtime,
      loadavg: [load0, loadavg()],
      finished,
      stoppedBy: why,
      timeMs: Math.round(timeMs),
      splitsPerSec: Math.round(completed / (timeMs / 1000)),
      rawCasPerSec: Math.round(raw1),
      rawCasPerSecKBuckets: Math.round(rawK),
      boundMs: Math.round(boundMs),
      timeOverBound: +(timeMs / boundMs).toFixed(2),
      timeOverBoundK: +(timeMs / (boundMs * raw1 / rawK)).toFixed(2),
      streamWrites: writes,
      writesLanded: t.writesLanded,
      writesPerSplit: +(writes / S).toFixed(3),
      perStream,
      nodes,
      serverCpuSeconds: +nodes.reduce((a, n) => a + n.cpuSeconds, 0).toFixed(1),
      serverCpuMsPerWrite: +(nodes.reduce((a, n) => a + n.cpuSeconds, 0) * 1000 / writes).toFixed(4),
      maxShareOfWritesLedByANode: shareMax,
      shardLeaders: leaders,
      completed,
      lost: finished ? S - completed : null,
      selfFences: fences,
      failed,
      hostRssMiB: reports.map((r) => +(r.rss / 2 ** 20).toFixed(1)),
      writeOps: t.ops,
    };
    await d.record(row);
    result({
      bench: "scale",
      metric: `shards K=${k}, ${W} × ${S} tiny on ${server.label}: time ÷ (${d.neededPerSplit} writes/split at one bucket's raw CAS)`,
      value: finished
        ? `${(timeMs / 1000).toFixed(1)} s, ${row.splitsPerSec}/s, raw CAS ${row.rawCasPerSec}/s` +
          (k > 1 ? ` (${k} buckets at once: ${row.rawCasPerSecKBuckets}/s, ${row.timeOverBoundK} × their bound)` : "") +
          `, ${row.writesPerSplit} writes/split, lost ${row.lost}, ${fences} self-fences` +
          (failed.length ? `, ${failed.length} failed` : "")
        : `did not finish (${why}) in ${(elapsed / 1000).toFixed(0)} s: ${completed}/${S} completed` + (failed.length ? `, first failure: ${failed[0]}` : ""),
      ratio: finished ? row.timeOverBound : undefined,
      target: "K=4 ≤ K=1",
    });
    result({
      bench: "scale",
      metric: `shards K=${k} on ${server.label}: server CPU ms per write, per node; writes led per node`,
      value: nodes.map((n) => `${n.node} ${n.cpuMsPerWrite} ms (${n.cpuPctAvg} % of a core), led ${n.streamsLed} stream(s) = ${(n.shareOfWritesLed * 100).toFixed(1)} % of writes`).join("; "),
      ratio: shareMax,
      target: `max share ${(1 / Math.min(k, server.nodes.length)).toFixed(2)} (even)`,
    });
  } finally {
    await f.stop();
  }
}
