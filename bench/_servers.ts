/**
 * The NATS setups a bench can run on, chosen with `BENCH_NATS` (comma list;
 * `npm run bench -- scale --nats=current,2.9,current-r3` sets it):
 *
 * - `current`: one node of the pinned current release (`NATS_SERVER`, which
 *   `npm run bench` resolves like `npm test`: NATS_SERVER_BIN, the cached
 *   build, Debian's);
 * - `2.9`: one node of Debian's 2.9.10 (`NATS_SERVER_COMPAT`);
 * - `current-r3`: a 3-node cluster of the current release with R3 buckets,
 *   clients given every node's URL.
 *
 * @module
 */
import { COMPAT_NATS_SERVER, NATS_SERVER, NatsCluster, NatsServer } from "../tests/helpers/nats_server.ts";
import { cpuSeconds, serverPid, type Varz, varz } from "./_procs.ts";

/** One running setup. */
export interface NatsSetup extends AsyncDisposable {
  /** `current`, `2.9` or `current-r3`. */
  kind: string;
  /** e.g. "2.15.2 R3 ×3". */
  label: string;
  version: string;
  /** Every node's WebSocket URL. */
  urls: string[];
  /** `urls` joined with commas (what a host process gets). */
  url: string;
  /** Replicas for buckets made on this setup. */
  replicas: number;
  /** Message counters summed over the nodes. */
  varz(): Promise<Varz>;
  /** CPU seconds of every node's process, summed. */
  cpuSeconds(): number;
  /** One node's monitoring URL (for samplers). */
  monitorUrl: string;
  /** Every node: its server name, monitoring URL and CPU seconds so far (the sharded cells count CPU per node). */
  nodes: NatsNode[];
}

/** One node of a setup. */
export interface NatsNode {
  name: string;
  monitorUrl: string;
  cpuSeconds(): number;
}

/** One stream as a node's /jsz reports it: its writes so far (last sequence) and its leader's server name. */
export interface StreamInfo {
  name: string;
  lastSeq: number;
  leader: string;
}

/**
 * The streams named `names` (e.g. `KV_splitlease_<job>`) with their leader
 * and last sequence, from the first node of `nodes` that answers for each
 * (a replicated stream's leader as the cluster reports it; a single node's
 * streams are led by that node).
 */
export async function streamInfo(nodes: NatsNode[], names: string[]): Promise<StreamInfo[]> {
  const found = new Map<string, StreamInfo>();
  for (const n of nodes) {
    try {
      const r = await fetch(`${n.monitorUrl}/jsz?streams=true`, { signal: AbortSignal.timeout(5000) });
      const j = await r.json() as {
        server_name?: string;
        account_details?: { stream_detail?: { name: string; state?: { last_seq?: number }; cluster?: { leader?: string } }[] }[];
      };
      for (const a of j.account_details ?? []) {
        for (const sd of a.stream_detail ?? []) {
          if (!names.includes(sd.name)) continue;
          const leader = sd.cluster?.leader ?? (nodes.length === 1 ? n.name : undefined);
          // The leader's own count is the one to read (a follower may lag it by a few).
          if (leader && (!found.has(sd.name) || leader === n.name)) found.set(sd.name, { name: sd.name, lastSeq: sd.state?.last_seq ?? 0, leader });
        }
      }
    } catch { /* this node did not answer: another may */ }
  }
  return names.map((name) => found.get(name) ?? { name, lastSeq: NaN, leader: "?" });
}

/** The setups `BENCH_NATS` asks for (default `current`). */
export function setupKinds(): string[] {
  return (Deno.env.get("BENCH_NATS") ?? "current").split(",").map((s) => s.trim()).filter(Boolean);
}

/**
 * Starts one setup. `extra`: more server config lines (e.g. `prof_port: N`
 * for Go's pprof endpoints; BENCH_NATS_EXTRA adds to it).
 */
export async function startNats(kind: string, extra?: string): Promise<NatsSetup> {
  const bin = kind.startsWith("2.9") ? COMPAT_NATS_SERVER ?? "/usr/sbin/nats-server" : NATS_SERVER;
  extra = [extra, Deno.env.get("BENCH_NATS_EXTRA")].filter(Boolean).join("\n") || undefined;
  if (kind === "current" || kind === "2.9") {
    const s = await NatsServer.start({ bin, extra });
    return {
      kind,
      label: `${s.version} R1`,
      version: s.version,
      urls: [s.wsUrl],
      url: s.wsUrl,
      replicas: 1,
      varz: () => varz(s.monitorUrl),
      cpuSeconds: () => cpuSeconds(serverPid(s.dir) ?? -1),
      monitorUrl: s.monitorUrl,
      nodes: [{ name: s.name, monitorUrl: s.monitorUrl, cpuSeconds: () => cpuSeconds(serverPid(s.dir) ?? -1) }],
      [Symbol.asyncDispose]: () => s[Symbol.asyncDispose](),
    };
  }
  if (kind === "current-r3" || kind === "2.9-r3") {
    if (kind === "2.9-r3") throw new Error("2.9-r3: replicated buckets are refused on 2.9.10 (nats-server#4320)");
    const c = await NatsCluster.start(3, { bin, extra });
    return {
      kind,
      label: `${c.nodes[0].version} R3 ×3`,
      version: c.nodes[0].version,
      urls: c.wsUrls,
      url: c.wsUrls.join(","),
      replicas: 3,
      varz: async () => {
        const vs = await Promise.all(c.nodes.map((n) => varz(n.monitorUrl)));
        return vs.reduce((a, v) => ({
          out_msgs: a.out_msgs + v.out_msgs,
          in_msgs: a.in_msgs + v.in_msgs,
          out_bytes: a.out_bytes + v.out_bytes,
          in_bytes: a.in_bytes + v.in_bytes,
          cpu: a.cpu + v.cpu,
          mem: a.mem + v.mem,
        }));
      },
      cpuSeconds: () => c.nodes.reduce((n, x) => n + cpuSeconds(x.pid ?? -1), 0),
      monitorUrl: c.nodes[0].monitorUrl,
      nodes: c.nodes.map((x) => ({ name: x.name, monitorUrl: x.monitorUrl, cpuSeconds: () => cpuSeconds(x.pid ?? -1) })),
      [Symbol.asyncDispose]: () => c[Symbol.asyncDispose](),
    };
  }
  throw new Error(`BENCH_NATS: unknown setup ${JSON.stringify(kind)} (current, 2.9 or current-r3)`);
}

/** The PostgreSQL `npm run bench` started (PG_URL, PG_PID), to run the PostgreSQL store next to NATS. */
export interface PgSetup {
  kind: "pg";
  /** e.g. "PostgreSQL 15". */
  label: string;
  url: string;
  /** CPU seconds of the server so far: the postmaster and every backend. */
  cpuSeconds(): number;
  /** A schema of its own for one cell (every cell starts on empty tables). */
  schema(): string;
}

let schemas = 0;
/** The PostgreSQL setup, or `undefined` when the bench runs without one (BENCH_PG=0). */
export function pgSetup(): PgSetup | undefined {
  const url = Deno.env.get("PG_URL");
  if (!url) return undefined;
  const pid = Number(Deno.env.get("PG_PID") ?? -1);
  return {
    kind: "pg",
    label: "PostgreSQL",
    url,
    cpuSeconds: () => pgCpuSeconds(pid),
    schema: () => `bench_${Date.now().toString(36)}_${++schemas}`,
  };
}

/** The Redis `npm run bench` started for the Redis store (REDIS_STORE_URL, REDIS_STORE_PID; appendfsync always). */
export interface RedisSetup {
  kind: "redis";
  /** e.g. "Redis (AOF always)". */
  label: string;
  url: string;
  /** CPU seconds of the server so far. */
  cpuSeconds(): number;
}

/** The Redis store's setup, or `undefined` when the bench runs without one (BENCH_REDIS=0). */
export function redisSetup(): RedisSetup | undefined {
  const url = Deno.env.get("REDIS_STORE_URL");
  if (!url) return undefined;
  const pid = Number(Deno.env.get("REDIS_STORE_PID") ?? -1);
  return { kind: "redis", label: "Redis (AOF always)", url, cpuSeconds: () => cpuSeconds(pid) };
}

/** CPU seconds of a PostgreSQL server: its postmaster and every process it started (backends, walwriter, ...), live or exited. */
export function pgCpuSeconds(postmaster: number): number {
  let total = 0;
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${e.name}/stat`);
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const ppid = Number(f[1]);
      const pid = Number(e.name);
      if (pid === postmaster) total += (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / 100; // its own, and its exited children's
      else if (ppid === postmaster) total += (Number(f[11]) + Number(f[12])) / 100;
    } catch { /* gone */ }
  }
  return total;
}
