/**
 * Fleets of coordinator host processes (bench/scale_host.ts) for the scale
 * benchmark: spawn, start every join at once, collect reports, stop.
 *
 * @module
 */
import { bin, Child, type Msg, nodeBundle, root, rssBytes, sleep } from "./_procs.ts";

/** Config of one host process (read by bench/scale_host.ts from env SCALE_HOST). */
export interface HostOpts {
  mode: "nats" | "memory" | "pg" | "redis";
  url?: string;
  /** mode "pg": the schema of the cell's tables. */
  schema?: string;
  job: string;
  instances: string[];
  splits: number;
  role: "tiny" | "hold";
  tunables: Record<string, number>;
  planner: boolean;
  progressEvery: number;
  /** Bucket replicas (3 on a cluster; the bucket is made before the fleet starts). */
  replicas?: number;
  /** Wrap each coordinator's store in a CountingStore (default true). */
  count?: boolean;
  /** The job's shard count (default 1; above 1 every coordinator is a ShardedCoordinator). */
  shards?: number;
}

const hostEntry = "bench/scale_host.ts";
/**
 * Spawns one host on `runtime` (deno runs the source, node its esbuild
 * bundle); `flags`: extra runtime flags for this host (e.g. `--cpu-prof`).
 */
export async function spawnHost(runtime: string, name: string, opts: HostOpts, flags: string[] = []): Promise<Child> {
  const env = { SCALE_HOST: JSON.stringify(opts) };
  if (runtime === "node") {
    // BENCH_NODE_ARGS: extra Node flags for the hosts (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof").
    const extra = (Deno.env.get("BENCH_NODE_ARGS") ?? "").split(" ").filter(Boolean);
    return new Child(name, bin("node"), [...extra, ...flags, await nodeBundle(hostEntry)], env);
  }
  return new Child(name, bin("deno"), ["run", "-A", "--no-check", ...flags, `${root}${hostEntry}`], env);
}

/** A running fleet; see {@linkcode fleet}. */
export type Fleet = Awaited<ReturnType<typeof fleet>>;

/** `w` coordinators over min(w, procs) processes, all ready; `go()` starts every join at once. */
export async function fleet(
  o: {
    runtime: string;
    procs: number;
    url: string;
    job: string;
    w: number;
    s: number;
    role: "tiny" | "hold";
    tunables: Record<string, number>;
    replicas?: number;
    /** Coordinate through PostgreSQL (`url` is its postgres:// URL) in `schema`. */
    pg?: { schema: string };
    /** Coordinate through Redis (`url` is its redis:// URL). */
    redis?: boolean;
    /** Whether the fleet's coordinators carry a planner (default true; false: a planner elsewhere leads). */
    planner?: boolean;
    /** The job's shard count (default 1). */
    shards?: number;
  },
) {
  const procs = Math.min(o.w, o.procs);
  const groups: string[][] = Array.from({ length: procs }, () => []);
  for (let i = 0; i < o.w; i++) groups[i % procs].push(`w${i}`);
  const hosts = await Promise.all(groups.map((instances, p) =>
    spawnHost(o.runtime, `host${p}`, {
      mode: o.pg ? "pg" : o.redis ? "redis" : "nats",
      ...(o.pg ? { schema: o.pg.schema } : {}),
      url: o.url,
      job: o.job,
      instances,
      splits: o.s,
      role: o.role,
      tunables: o.tunables,
      replicas: o.replicas,
      planner: o.planner ?? true,
      ...(o.shards && o.shards > 1 ? { shards: o.shards } : {}),
      progressEvery: Math.max(10, Math.floor(o.s / 200 / procs)),
    })
  ));
  try {
    await Promise.all(hosts.map((h) => h.next((m) => m.ev === "ready", 60_000, "ready")));
  } catch (e) {
    for (const h of hosts) h.kill();
    throw e;
  }
  return {
    hosts,
    go: async () => {
      const t0 = Date.now(); // the hosts stamp with Date.now() too
      await Promise.all(hosts.map((h) => h.send({ cmd: "go" })));
      return t0;
    },
    /** Sum over hosts of the latest value of a per-host counter message (progress/held). */
    latest: (ev: string, field: string) => hosts.reduce((n, h) => n + (h.msgs.findLast((m) => m.ev === ev)?.[field] ?? 0), 0),
    count: (ev: string) => hosts.reduce((n, h) => n + h.msgs.filter((m) => m.ev === ev).length, 0),
    rss: () => hosts.reduce((n, h) => n + rssBytes(h.proc.pid), 0),
    report: async (ms = 30_000): Promise<Msg[]> => {
      const from = hosts.map((h) => h.msgs.length);
      await Promise.all(hosts.map((h) => h.send({ cmd: "report" })));
      const got = await Promise.allSettled(
        hosts.map((h, i) => h.next((m) => m.ev === "report" && h.msgs.indexOf(m) >= from[i], ms, "report")),
      );
      return got.flatMap((g) => (g.status === "fulfilled" ? [g.value] : []));
    },
    stop: async () => {
      await Promise.all(hosts.map((h) => h.send({ cmd: "close" })));
      await Promise.allSettled(hosts.map((h) => h.next((m) => m.ev === "closed", 20_000, "closed")));
      await Promise.all(hosts.map((h) => h.stop(5000)));
    },
  };
}

/** Waits until `done()`, `limitMs` or `rss()` above `maxRss`; says which. */
export async function until(done: () => boolean, limitMs: number, rss: () => number, maxRss: number): Promise<"done" | "timeout" | "rss"> {
  const end = performance.now() + limitMs;
  while (!done()) {
    if (performance.now() > end) return "timeout";
    if (rss() > maxRss) return "rss";
    await sleep(100);
  }
  return "done";
}
