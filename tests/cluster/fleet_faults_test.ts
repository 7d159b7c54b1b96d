/**
 * The production configuration under faults: a fleet of real worker
 * processes (Deno, Bun and Node) copying a PostgreSQL table into a fenced
 * sink (`examples/pg_range`), over WebSocket, with every node's URL, on an
 * R3 bucket of a 3-node cluster of the current nats-server. Every node and
 * every worker is a host of its own in a network namespace (tests/helpers/
 * netns.ts), so partitions between servers, and between a worker and the
 * servers, are real dropped packets.
 *
 * One scenario per fault: kill -9 the bucket's stream leader; kill the node
 * a worker is connected to; SIGSTOP the meta leader past a lease; a rolling
 * restart of all three servers during a 2,000-split job; the stream leader
 * isolated with one worker on its side; a worker cut off from the cluster
 * (it self-fences, its splits move, its late sink writes are refused).
 *
 * Each must end with every row copied (count and checksum), 0 sink rows
 * overwritten by an older epoch of their split (a trigger records every
 * write; the epochs per row never go down), every split completed, and every
 * worker exiting 0. Each prints its unavailability window (a probe client's
 * first failed to first successful write), the first takeover after the
 * fault, and the probe's maybe-landed writes resolved by re-reading.
 *
 * Needs root (namespaces) and PostgreSQL (`PG_URL`; `npm test` starts one).
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { NatsStore } from "../../nats.ts";
import { StoreUnavailableError } from "../../store.ts";
import { SplitRecordSchema } from "../../src/records.ts";
import { delay, NatsCluster, type NatsServer, TcpProxy } from "../helpers/nats_server.ts";
import { askUntil, whenAvailable } from "../helpers/after_fault.ts";
import { type NetHost, TestNet } from "../helpers/netns.ts";
import { eachLine, parseLogLine } from "../helpers/lines.ts";
import { withTimeout } from "../helpers/deadline.ts";

const root = new URL("../../", import.meta.url).pathname;
const bin = (n: string) => `${root}node_modules/.bin/${n}`;
const PG_URL = Deno.env.get("PG_URL");
const netOk = TestNet.available();
const ignore = !PG_URL || !netOk.ok;
if (ignore) console.warn(`cluster fleet faults skipped: ${!PG_URL ? "PG_URL is not set (npm test starts PostgreSQL)" : (netOk as { why: string }).why}`);

// 4 s keeps the suite short; CLUSTER_LEASE_MS=15000 measures the default lease.
const LEASE_MS = Number(Deno.env.get("CLUSTER_LEASE_MS") ?? 4000);
type Runtime = "deno" | "bun" | "node";

interface Worker {
  name: string;
  rt: Runtime;
  host: NetHost;
  child: Deno.ChildProcess;
  lines: (Record<string, unknown> & { at: number })[];
  raw: string[];
  status: Promise<Deno.CommandStatus>;
}

function spawnWorker(net: TestNet, host: NetHost, rt: Runtime, env: Record<string, string>): Worker {
  const script = "examples/pg_range/main.ts";
  const [cmd, args] = rt === "deno"
    ? [bin("deno"), ["run", "-A", script]]
    : rt === "bun"
    ? [bin("bun"), ["run", script]]
    : [bin("node"), ["--no-warnings", script]];
  const [ncmd, nargs] = net.exec(host, cmd, args);
  const child = new Deno.Command(ncmd, {
    args: nargs,
    cwd: root,
    env: { ...env, INSTANCE: host.name, PORT: "8080", HOSTNAME_BIND: "127.0.0.1", NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const w: Worker = { name: host.name, rt, host, child, lines: [], raw: [], status: undefined as never };
  const pump = (s: ReadableStream<Uint8Array>) =>
    eachLine(s, (line) => {
      w.raw.push(line);
      const p = parseLogLine(line);
      if (p) w.lines.push({ ...p, at: Date.now() });
    });
  const pumps = Promise.all([pump(child.stdout), pump(child.stderr)]);
  w.status = child.status.then(async (s) => {
    await pumps.catch(() => {});
    return s;
  });
  return w;
}

/** A client in the root namespace writing one key of the job's bucket every 50 ms: when could a client write? */
class Probe {
  #stop = false;
  #done: Promise<void>;
  firstFail = 0;
  recovered = 0;
  failed = 0;
  resolvedLanded = 0;
  constructor(store: NatsStore) {
    this.#done = this.#run(store);
  }
  async #run(store: NatsStore): Promise<void> {
    let rev = 0;
    let n = 0;
    while (!this.#stop) {
      const value = String(++n);
      try {
        const r = rev ? await store.update("probe", value, rev) : await store.create("probe", value);
        if (r.ok) {
          rev = r.revision;
          if (this.firstFail && !this.recovered) this.recovered = Date.now();
        } else rev = (await store.get("probe"))?.revision ?? 0;
      } catch (e) {
        if (!(e instanceof StoreUnavailableError)) throw e;
        this.failed++;
        if (!this.firstFail || this.recovered) {
          if (!this.firstFail) this.firstFail = Date.now();
        }
        try {
          const cur = await store.get("probe");
          if (cur?.value === value) this.resolvedLanded++;
          rev = cur?.revision ?? rev;
        } catch { /* still out */ }
      }
      await delay(50);
    }
  }
  get windowMs(): number {
    return this.firstFail && this.recovered ? this.recovered - this.firstFail : 0;
  }
  async stop(): Promise<void> {
    this.#stop = true;
    await this.#done;
  }
}

interface Ctx {
  net: TestNet;
  cluster: NatsCluster;
  workers: Worker[];
  job: string;
  stream: string;
  /** Names of the worker hosts. */
  nodeOf(name: string): NatsServer;
}

interface Scenario {
  name: string;
  rows: number;
  splits: number;
  batchSize: number;
  batchPauseMs: number;
  /** Share of the rows copied when the fault starts. */
  at: number;
  /** Applies the fault (and its repair); resolves with a description. */
  fault(ctx: Ctx): Promise<string>;
  /** Scenario-specific assertions on what the run measured. */
  check?(r: { takenOver: number; firstTakeover?: number; fences: number; refused: number; replayed: number }): void;
}

/** How many of the job's connections node `n` holds; asked until its monitoring port answers (a node under load answers late). */
function connz(n: NatsServer, job: string): Promise<number> {
  return askUntil(`${n.name}'s connections`, async () => {
    const r = await fetch(`${n.monitorUrl}/connz?limit=1000`, { signal: AbortSignal.timeout(1000) });
    const j = await r.json() as { connections?: { name?: string }[] };
    return (j.connections ?? []).filter((c) => c.name === `splitlease:${job}`).length;
  });
}

/** The stream's leader node, asked until the cluster names one. */
async function streamLeaderOf(cluster: NatsCluster, stream: string): Promise<NatsServer> {
  return cluster.node((await askUntil(`the leader of ${stream}`, () => cluster.streamLeader(stream)))!);
}

async function run(s: Scenario): Promise<void> {
  const started = Date.now();
  await using net = TestNet.create();
  await using cluster = await NatsCluster.start(3, { net, pingInterval: "500ms" });
  const sql = postgres(PG_URL!, { max: 4, onnotice: () => {} });
  const schema = `sl_cl_${crypto.randomUUID().replaceAll("-", "").slice(0, 10)}`;
  // The workers live in namespaces: they reach PostgreSQL through a proxy on the bridge.
  await using pgProxy = new TcpProxy(Number(new URL(PG_URL!).port), net.rootIp);
  const pgUrl = new URL(PG_URL!);
  pgUrl.hostname = net.rootIp;
  pgUrl.port = String(pgProxy.port);
  const workers: Worker[] = [];
  let probe: Probe | undefined;
  let probeStore: NatsStore | undefined;
  try {
    await sql.unsafe(`create schema ${schema}`);
    await sql.unsafe(`create table ${schema}.src (id bigint primary key, payload text not null)`);
    await sql.unsafe(
      `create table ${schema}.sink (id bigint primary key, payload text not null, copies int not null default 1,
        split text not null, epoch bigint not null)`,
    );
    // Every write the sink accepted, in order: a row's epochs must never go down.
    await sql.unsafe(`create table ${schema}.hist (seq bigserial primary key, id bigint, split text, epoch bigint)`);
    await sql.unsafe(
      `create function ${schema}.rec() returns trigger language plpgsql as $$ begin
         insert into ${schema}.hist (id, split, epoch) values (new.id, new.split, new.epoch); return new; end $$`,
    );
    await sql.unsafe(
      `create trigger rec after insert or update on ${schema}.sink for each row execute function ${schema}.rec()`,
    );
    await sql.unsafe(`insert into ${schema}.src select g, md5(g::text) from generate_series(1, ${s.rows}) g`);

    const job = `cl-${schema}`;
    const stream = `KV_splitlease_${job}`;
    // The bucket is created once, replicated, before the fleet starts (as an operator would).
    // Setup on a cluster that just started: retried while unavailable, as a worker's start is.
    probeStore = await whenAvailable("the job's bucket", () =>
      NatsStore.connect({ servers: cluster.wsUrls, job, replicas: 3, opTimeoutMs: 1000, pingIntervalMs: 500 }), 30_000);
    const env = {
      JOB: job,
      NATS_URL: cluster.wsUrls.join(","),
      NATS_REPLICAS: "3",
      LEASE_MS: String(LEASE_MS),
      OP_TIMEOUT_MS: "1000",
      DRAIN_DEADLINE_MS: "2000",
      SHUTDOWN_MARGIN_MS: "2000",
      MAX_IN_FLIGHT: "3",
      PG_RANGE_CONFIG: JSON.stringify({
        url: pgUrl.href,
        table: `${schema}.src`,
        columns: ["payload"],
        sinkTable: `${schema}.sink`,
        copiesColumn: "copies",
        splitColumn: "split",
        epochColumn: "epoch",
        batchSize: s.batchSize,
        batchPauseMs: s.batchPauseMs,
        targetSplits: s.splits,
        planning: "exact",
        poolSize: 3,
      }),
    };
    const rts: Runtime[] = ["deno", "bun", "node"];
    for (const [i, rt] of rts.entries()) workers.push(spawnWorker(net, net.host(`w${i + 1}`), rt, env));
    const count = async () => Number((await sql.unsafe(`select count(*)::int as n from ${schema}.sink`))[0].n);
    await withTimeout(
      (async () => {
        while ((await count()) < s.rows * s.at) {
          if (workers.some((w) => w.lines.some((l) => l.event === "exit"))) throw new Error("a worker exited before the fault");
          await delay(50);
        }
      })(),
      60_000,
      `${s.at * 100}% of the rows copied`,
    );
    probe = new Probe(probeStore);
    const faultAt = Date.now();
    const linesBefore = new Map(workers.map((w) => [w, w.lines.length]));
    const ctx: Ctx = {
      net,
      cluster,
      workers,
      job,
      stream,
      nodeOf: (name) => cluster.node(name),
    };
    const what = await s.fault(ctx);
    const statuses = await withTimeout(Promise.all(workers.map((w) => w.status)), 90_000, "every worker to finish");
    statuses.forEach((st, i) => assert.equal(st.code, 0, `${workers[i].name} exits 0\n${workers[i].raw.slice(-15).join("\n")}`));
    for (const w of workers) {
      const fin = w.lines.find((l) => l.event === "finished") as { reason?: string } | undefined;
      assert.equal(fin?.reason, "complete", `${w.name} finished on completion\n${w.raw.slice(-15).join("\n")}`);
    }
    await probe.stop();

    const [src] = await sql.unsafe(
      `select count(*)::int as n, md5(string_agg(id::text || ':' || payload, ',' order by id)) as sum from ${schema}.src`,
    );
    const [dst] = await sql.unsafe(
      `select count(*)::int as n, md5(string_agg(id::text || ':' || payload, ',' order by id)) as sum,
              (sum(copies) - count(*))::int as replayed from ${schema}.sink`,
    );
    assert.equal(dst.n, src.n, "every source row is in the sink");
    assert.equal(dst.sum, src.sum, "checksums agree");
    const [stale] = await sql.unsafe(
      `select count(*)::int as n from (select epoch, lag(epoch) over (partition by id order by seq) as prev
         from ${schema}.hist) t where prev > epoch`,
    );
    assert.equal(stale.n, 0, "no sink row overwritten by an older epoch of its split");
    // The harness's own read after the fault: right after a frozen meta leader resumes, the cluster may
    // still be electing one (a listing needs a consumer, which needs the meta leader), so an outage here
    // is waited out as a user would, for up to 20 s; the workers have already finished by then.
    const splits = await readAfterFault(() => probeStore!.list("split."), 20_000);
    assert.ok(splits.length >= Math.min(s.splits, s.rows) * 0.9, `${splits.length} splits planned`);
    const records = splits.map((e) => SplitRecordSchema.parse(JSON.parse(e.value)));
    records.forEach((r, i) => assert.equal(r.status, "completed", splits[i].key));
    // Only a split's own failure (fail(), a throwing run) is recorded as one: an outage never is.
    const failed = records.flatMap((r, i) => (r.failures?.length ? [`${splits[i].key}: ${r.failures.map((f) => f.message).join("; ")}`] : []));
    assert.deepEqual(failed, [], "no split charged a failure by the fault");

    // A takeover charges an attempt: the splits that moved without their owner's consent.
    const takenOver = records.filter((r) => r.attempts > 0).length;
    const after = workers.flatMap((w) => w.lines.slice(linesBefore.get(w)));
    const firstTakeover = after.filter((l) => l.msg === "Taking over the splits of a member that is gone").map((l) => l.at - faultAt)
      .sort((a, b) => a - b)[0];
    const fences = after.filter((l) => /^Self-fenced/.test(String(l.msg))).length;
    const refused = workers.flatMap((w) => w.lines.filter((l) => l.event === "sinkRefused")).length;
    const report = { takenOver, firstTakeover, fences, refused, replayed: dst.replayed as number };
    console.log(
      `${s.name}: ${what}; ${dst.n} rows, ${splits.length} splits, 0 lost, 0 stale-epoch rows, ` +
        `${dst.replayed} rows replayed, ${refused} sink writes refused by the fence; ` +
        `unavailable ${probe.windowMs} ms (probe: ${probe.failed} writes failed, ${probe.resolvedLanded} maybe-landed found landed); ` +
        `${fences} self-fences, ${takenOver} splits taken over` +
        `${firstTakeover !== undefined ? ` (first takeover ${firstTakeover} ms after the fault)` : ""}; ` +
        `${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    s.check?.(report);
  } catch (e) {
    for (const w of workers) console.error(`--- ${w.name} (${w.rt}) ---\n${w.raw.slice(-25).join("\n")}`);
    throw e;
  } finally {
    await probe?.stop().catch(() => {});
    for (const w of workers) {
      try {
        w.child.kill("SIGKILL");
      } catch { /* gone */ }
    }
    await Promise.all(workers.map((w) => w.status.catch(() => {})));
    await probeStore?.close();
    await sql.unsafe(`drop schema if exists ${schema} cascade`).catch(() => {});
    await sql.end({ timeout: 5 });
  }
}

const opts = { sanitizeOps: false, sanitizeResources: false, ignore };
/** A job of ~48 splits that takes several seconds on three workers. */
const job48 = { rows: 24_000, splits: 48, batchSize: 100, batchPauseMs: 120, at: 0.25 };

/** Retries a harness read while the store reports an outage, up to `withinMs`. */
function readAfterFault<T>(read: () => Promise<T>, withinMs: number): Promise<T> {
  return whenAvailable("the harness's read after the fault", read, withinMs);
}

Deno.test({
  name: "cluster fleet: kill -9 the stream leader of the job's bucket (restarted 3 s later)",
  ...opts,
  fn: () =>
    run({
      name: "stream leader killed",
      ...job48,
      fault: async ({ cluster, stream }) => {
        const leader = await streamLeaderOf(cluster, stream);
        await leader.kill();
        await delay(3000);
        await leader.restart();
        return `killed ${leader.name}, the stream leader`;
      },
    }),
});

Deno.test({
  name: "cluster fleet: kill -9 the node a worker is connected to (restarted 3 s later)",
  ...opts,
  fn: () =>
    run({
      name: "workers' node killed",
      ...job48,
      fault: async ({ cluster, job }) => {
        const counts = await Promise.all(cluster.nodes.map((n) => connz(n, job)));
        // The node with the fewest workers but at least one (a third of the fleet, when spread).
        const i = counts.map((c, i) => [c, i]).filter(([c]) => c > 0).sort((a, b) => a[0] - b[0])[0][1];
        const node = cluster.nodes[i];
        await node.kill();
        await delay(3000);
        await node.restart();
        return `killed ${node.name}, holding ${counts[i]} of ${counts.reduce((a, b) => a + b)} worker connections`;
      },
    }),
});

Deno.test({
  name: "cluster fleet: SIGSTOP the meta leader for longer than a lease",
  ...opts,
  fn: () =>
    run({
      name: "meta leader frozen",
      ...job48,
      fault: async ({ cluster }) => {
        const meta = cluster.node((await askUntil("the meta leader", () => cluster.metaLeader()))!);
        await meta.pause();
        await delay(LEASE_MS + 1500);
        meta.resume();
        return `froze ${meta.name}, the meta leader, for ${LEASE_MS + 1500} ms`;
      },
    }),
});

Deno.test({
  name: "cluster fleet: rolling restart of all three servers during a 2,000-split job",
  ...opts,
  fn: () =>
    run({
      name: "rolling restart",
      rows: 20_000,
      splits: 2000,
      batchSize: 10,
      batchPauseMs: 0,
      at: 0.1,
      fault: async ({ cluster }) => {
        const t0 = Date.now();
        await cluster.rollingRestart(500);
        return `restarted n1, n2, n3 in turn in ${Date.now() - t0} ms`;
      },
    }),
});

Deno.test({
  name: "cluster fleet: the stream leader isolated with one worker on its side, healed after two leases",
  ...opts,
  fn: () =>
    run({
      name: "stream leader in the minority",
      ...job48,
      fault: async ({ cluster, stream, net, workers }) => {
        const leader = await streamLeaderOf(cluster, stream);
        const leaderHost = net.hosts.find((h) => h.name === leader.name)!;
        const w = workers[0].host;
        const others = net.hosts.filter((h) => h !== leaderHost && h !== w);
        net.partition([leaderHost, w], others);
        await delay(2 * LEASE_MS);
        net.heal();
        return `cut ${leader.name} (stream leader) and ${w.name} off from the rest for ${2 * LEASE_MS} ms`;
      },
    }),
});

let fencedAfter = 0;
Deno.test({
  name: "cluster fleet: a worker cut off from the cluster fences itself within a lease and its splits are taken over",
  ...opts,
  fn: () =>
    run({
      name: "worker partitioned",
      ...job48,
      fault: async ({ net, workers }) => {
        const w = workers.find((x) => x.rt === "deno")!;
        const nodes = net.hosts.filter((h) => h.name.startsWith("n"));
        net.partition([w.host], nodes);
        const t0 = Date.now();
        // It must fence itself before anyone takes its splits (a lease), then its splits move.
        await withTimeout(
          (async () => {
            while (!w.lines.some((l) => l.at >= t0 && /^Self-fenced/.test(String(l.msg ?? "")))) await delay(50);
          })(),
          2 * LEASE_MS,
          `${w.name} to fence itself`,
        );
        fencedAfter = Date.now() - t0;
        await delay(LEASE_MS);
        net.heal();
        return `cut ${w.name} off from every server for ${Date.now() - t0} ms (it fenced itself after ${fencedAfter} ms)`;
      },
      check: (r) => {
        // It stops before anyone may judge it dead (a lease after its last beat), and its splits move.
        assert.ok(fencedAfter < LEASE_MS, `fenced after ${fencedAfter} ms`);
        assert.ok(r.takenOver >= 1, "the cut-off worker's splits were taken over");
      },
    }),
});
