// Child process of bench/scale_bench.ts: hosts several coordinators, each on
// its own NatsStore connection (mode "nats") or PostgresStore (mode "pg"), or
// all on one MemoryStore (mode "memory"), every one behind a CountingStore. Runtime-neutral: runs on Deno
// as is, on Node 24 from an esbuild bundle.
//
// Config: env SCALE_HOST (JSON, see HostConfig). Protocol: JSON lines.
//   stdout: ready, joined, failed, progress, held, done, stalled, report, closed
//   stdin:  go, report {gc?} (gc: a full collection first when the runtime exposes gc), close, exit (stdin EOF exits too), heap {path} (a V8
//           heap snapshot written to path: the million scenario's profile), and for role
//           "hold": rate {perSec} (progress-only commits on the held splits
//           at perSec per process, round-robin; 0 stops; bench/leader_load_bench.ts)
import { natsTransport } from "./_transport.ts";
import process from "node:process";
import { createInterface } from "node:readline";
import { MemoryStore, ShardedCoordinator, SplitCoordinator } from "../mod.ts";
import type { Planner, Store } from "../mod.ts";
import { NatsStore } from "../nats.ts";
import { claimAttempts, CountingStore, sumCounts } from "./counting_store.ts";

interface HostConfig {
  mode: "nats" | "memory" | "pg" | "redis";
  url?: string;
  /** mode "pg": the schema of the cell's tables. */
  schema?: string;
  job: string;
  instances: string[];
  splits: number;
  /** tiny: one final commit per gained split; hold: keep every gained split. */
  role: "tiny" | "hold";
  tunables: { leaseMs: number; maxInFlight: number; opTimeoutMs: number; seedConcurrency?: number };
  /** Whether these coordinators may lead (carry a planner). */
  planner: boolean;
  /** The planner returns its listing in parts of this many splits (`more: true`; 0 or absent: one run). */
  planPart?: number;
  /** Emit a progress line every this many completions/holds (process-wide). */
  progressEvery: number;
  /** Bucket replicas (comma-separated `url` lists every node of a cluster). */
  replicas?: number;
  /** Wrap each coordinator's store in a CountingStore (default true; it parses every split update it sends). */
  count?: boolean;
  /**
   * The job's shard count (default 1: a SplitCoordinator per instance); above 1 each instance is a
   * ShardedCoordinator over a store per shard (a bucket, a PostgreSQL job, a Redis job of its own),
   * each behind its own CountingStore (mode memory: unsupported).
   */
  shards?: number;
}

const cfg: HostConfig = JSON.parse(process.env.SCALE_HOST ?? "{}");
/** Wall-clock ms: comparable across processes to a few ms, enough for cells of seconds. */
const now = () => Date.now();
const emit = (o: Record<string, unknown>): void => void process.stdout.write(JSON.stringify(o) + "\n");
const rss = () => process.memoryUsage().rss;

/** When this process's planner was called (wall-clock ms, each call): the plan's seeding rate is measured from it. */
const plannerCalls: number[] = [];
const planner: Planner = (ctx) => {
  plannerCalls.push(now());
  // A listing in parts of `planPart` splits (0: the whole plan in one run), each naming where the next begins.
  const part = cfg.planPart && cfg.planPart > 0 ? cfg.planPart : cfg.splits;
  const from = typeof ctx.cursor === "number" ? ctx.cursor : 0;
  const to = Math.min(cfg.splits, from + part);
  const more = to < cfg.splits;
  return Promise.resolve({
    finality: more ? "open" as const : "final" as const,
    splits: Array.from({ length: to - from }, (_, i) => ({ id: `s${from + i}`, descriptor: from + i })),
    ...(more ? { cursor: to, more: true } : {}),
  });
};

interface Slot {
  instance: string;
  /** Its store (shard 0's when sharded: the plan and leader records of the job's first shard). */
  store?: CountingStore;
  raw?: Store;
  /** Sharded: each shard's counting store, in shard order. */
  shardStores?: CountingStore[];
  c?: SplitCoordinator | ShardedCoordinator;
  joinCalledAt?: number;
  joinedAt?: number;
  /** The wrapper's counts when join() returned: what joining read. */
  joinCounts?: ReturnType<CountingStore["snapshot"]>;
  firstEventAt?: number;
  firstEventType?: string;
  doneAt?: number;
  outcome?: string;
  completed: number;
  held: number;
  commitErrors: number;
  /** role "hold": held split id → its epoch (the progress pacer commits at it). */
  heldSplits: Map<string, number>;
  error?: string;
}

const slots: Slot[] = cfg.instances.map((instance) => ({ instance, completed: 0, held: 0, commitErrors: 0, heldSplits: new Map() }));
let memory: MemoryStore | undefined;
let completedTotal = 0, heldTotal = 0, lastHeldEmit = 0;
let probeFires = 0;
const probe = setInterval(() => probeFires++, 100);
const baseRss = rss();

function progress(): void {
  if (cfg.role === "tiny" && completedTotal % cfg.progressEvery === 0) emit({ ev: "progress", completed: completedTotal, at: now() });
  if (cfg.role === "hold" && Math.abs(heldTotal - lastHeldEmit) >= cfg.progressEvery) emitHeld();
}
function emitHeld(): void {
  lastHeldEmit = heldTotal;
  emit({ ev: "held", n: heldTotal, at: now() });
}
// Holders also report their count whenever it changed within the last 200 ms.
const heldTimer = cfg.role === "hold" ? setInterval(() => heldTotal !== lastHeldEmit && emitHeld(), 200) : undefined;

/**
 * Progress-only commits (no ownership change) on the held splits at
 * `perSec` for the whole process, round-robin over every slot's held
 * splits, at most one commit in flight per split: `due` counts the commits
 * the rate asked for, `skipped` those that found every held split busy,
 * `latencyMs` sums the landed commits' round trips.
 */
const commits = { due: 0, issued: 0, landed: 0, failed: 0, skipped: 0, latencyMs: 0 };
let pacer: ReturnType<typeof setInterval> | undefined;
const busy = new Set<string>();
let seq = 0, cursor = 0;
function setRate(perSec: number): void {
  clearInterval(pacer);
  pacer = undefined;
  if (!(perSec > 0)) return;
  const t0 = performance.now();
  let asked = 0;
  pacer = setInterval(() => {
    const n = Math.floor((perSec * (performance.now() - t0)) / 1000) - asked;
    asked += n;
    const held = slots.flatMap((s) => [...s.heldSplits].map(([id, epoch]) => ({ s, id, epoch })));
    for (let k = 0; k < n; k++) {
      commits.due++;
      let pick: (typeof held)[number] | undefined;
      for (let tries = 0; tries < held.length && !pick; tries++) {
        const h = held[cursor++ % held.length];
        if (!busy.has(`${h.s.instance}/${h.id}`)) pick = h;
      }
      if (!pick) {
        commits.skipped++;
        continue;
      }
      const { s, id, epoch } = pick;
      const key = `${s.instance}/${id}`;
      busy.add(key);
      commits.issued++;
      // A watermark that never regresses, even across processes (a split moved by balancing).
      const watermark = Date.now() * 1000 + (seq++ % 1000);
      const sent = performance.now();
      s.c!.commit(id, epoch, { watermark, estimate: { left: 1e6 - (seq % 1e6), total: 1e6, unit: "ids" } })
        .then(() => {
          commits.landed++;
          commits.latencyMs += performance.now() - sent;
        }, () => {
          commits.failed++;
          if (s.heldSplits.get(id) === epoch) s.heldSplits.delete(id); // fenced or gone: not committed again
        })
        .finally(() => busy.delete(key));
    }
  }, 5);
}

async function drive(s: Slot): Promise<void> {
  const c = s.c!;
  const pending = new Set<Promise<void>>();
  for (;;) {
    const e = await c.poll();
    if (!e) break;
    if (s.firstEventAt === undefined) {
      s.firstEventAt = now();
      s.firstEventType = e.type;
    }
    if (e.type === "gained") {
      if (cfg.role === "hold") {
        s.heldSplits.set(e.split.id, e.epoch);
        s.held++;
        heldTotal++;
        progress();
        continue;
      }
      const p = c.commit(e.split.id, e.epoch, { watermark: 1 }, { final: true })
        .then(() => {
          s.completed++;
          completedTotal++;
          progress();
        })
        .catch((err) => {
          s.commitErrors++;
          if (!String(err).includes("Fenced")) s.error ??= `commit ${e.split.id}: ${err}`;
        })
        .finally(() => pending.delete(p));
      pending.add(p);
    } else if (e.type === "revokeRequested") {
      // A cooperating source: the split is handed to its successor at once
      // (left unanswered, the leader fences it only after drainDeadlineMs + leaseMs).
      s.heldSplits.delete(e.splitId);
      void c.release([e.splitId]).then(() => {
        if (cfg.role !== "hold") return;
        s.held--;
        heldTotal--;
      }).catch(() => {});
    } else if (e.type === "lost" && cfg.role === "hold") {
      s.heldSplits.delete(e.splitId);
      s.held--;
      heldTotal--;
    } else if (e.type === "allComplete" || e.type === "stalled") {
      await Promise.all(pending);
      s.doneAt = now();
      s.outcome = e.type;
      emit({ ev: "done", instance: s.instance, at: s.doneAt, outcome: e.type });
      if (cfg.mode === "memory" && slots.every((x) => x.doneAt || x.error)) await report();
    }
  }
}

/** A new connection to the store of `job` (a shard's job name when sharded). */
async function openStore(instance: string, job: string): Promise<Store> {
  if (cfg.mode === "memory") return memory!;
  if (cfg.mode === "pg") {
    return await (await import("../adapters/postgres.ts")).PostgresStore.connect({
      url: cfg.url!,
      job,
      opTimeoutMs: cfg.tunables.opTimeoutMs,
      ...(cfg.schema ? { schema: cfg.schema } : {}),
      poolSize: 2,
      // BENCH_PG_LISTEN_KEYS=1: members' exact-key watches LISTEN instead of polling (listenExactKeys).
      ...(process.env.BENCH_PG_LISTEN_KEYS === "1" ? { listenExactKeys: true } : {}),
      // BENCH_PG_KEY_POLL_MS=n: a fixed period for the polled exact-key watches (keyPollMs).
      ...(process.env.BENCH_PG_KEY_POLL_MS ? { keyPollMs: Number(process.env.BENCH_PG_KEY_POLL_MS) } : {}),
    });
  }
  if (cfg.mode === "redis") {
    return await (await import("../adapters/redis.ts")).RedisStore.connect({
      url: cfg.url!,
      job,
      opTimeoutMs: cfg.tunables.opTimeoutMs,
      clientName: `splitlease:${job}:${instance}`,
      logger: () => {},
    });
  }
  return await NatsStore.connect({
    servers: cfg.url!.split(","),
    job,
    opTimeoutMs: cfg.tunables.opTimeoutMs,
    replicas: cfg.replicas,
    name: `splitlease:${job}:${instance}`,
    ...(await natsTransport()),
  });
}

async function join(s: Slot): Promise<void> {
  try {
    const options = {
      job: cfg.job,
      instance: s.instance,
      fingerprint: cfg.job,
      planner: cfg.planner ? planner : undefined,
      ...cfg.tunables,
    };
    if ((cfg.shards ?? 1) > 1) {
      if (cfg.mode === "memory") throw new Error("a sharded host needs a store per shard (mode nats, pg or redis)");
      const shardStores: CountingStore[] = (s.shardStores = []);
      s.joinCalledAt = now();
      s.c = await ShardedCoordinator.join({
        ...options,
        shards: cfg.shards!,
        // One connection per shard, each counted on its own (the sharded coordinator closes them when it stops).
        stores: async ({ index, job }) => (shardStores[index] = new CountingStore(await openStore(s.instance, job), s.instance)),
      });
      s.store = shardStores[0];
      s.raw = s.store.inner;
    } else {
      s.raw = await openStore(s.instance, cfg.job);
      s.store = cfg.count === false ? undefined : new CountingStore(s.raw, s.instance);
      s.joinCalledAt = now();
      s.c = await SplitCoordinator.join({ ...options, store: s.store ?? s.raw });
    }
    s.joinedAt = now();
    s.joinCounts = countsOf(s);
    emit({ ev: "joined", instance: s.instance, at: s.joinedAt, ms: s.joinedAt - s.joinCalledAt });
    drive(s).catch((e) => {
      s.error ??= `event loop: ${e}`;
      emit({ ev: "failed", instance: s.instance, error: s.error });
    });
  } catch (e) {
    s.error = `join: ${e}`;
    emit({ ev: "failed", instance: s.instance, error: s.error });
  }
}

/** A slot's store counts so far: every shard's summed when sharded. */
function countsOf(s: Slot): ReturnType<CountingStore["snapshot"]> | undefined {
  if (s.shardStores) return sumCounts(s.shardStores.filter(Boolean).map((x) => x.snapshot()));
  return s.store?.snapshot();
}

async function report(gc = false): Promise<void> {
  // A full collection first, when asked and exposed (Deno --v8-flags=--expose-gc, node --expose-gc): heapUsed is then what is live.
  const collect = (globalThis as { gc?: () => void }).gc;
  const g0 = now();
  if (gc && collect) collect();
  const gcMs = gc && collect ? now() - g0 : undefined;
  let planTerm: number | undefined;
  const reader = slots.find((s) => s.store)?.store;
  if (reader) {
    try {
      const e = await reader.inner.get("plan");
      planTerm = e ? JSON.parse(e.value).term : undefined;
    } catch { /* unreadable: left out */ }
  }
  const coordinators = slots.map((s) => {
    const counts = countsOf(s);
    const stats = s.c?.stats();
    return {
      instance: s.instance,
      counts,
      joinCounts: s.joinCounts,
      timeline: s.store?.timeline(),
      claimAttempts: stats && counts ? claimAttempts(stats, counts) : undefined,
      selfFences: stats?.selfFences,
      writes: stats?.writes,
      acquisitions: stats?.acquisitions,
      losses: stats?.losses,
      isLeader: s.c instanceof ShardedCoordinator ? s.c.isLeader() : s.c?.isLeader,
      // Sharded: what each shard's store landed, and which shards this member leads.
      ...(s.shardStores
        ? {
          shardWrites: s.shardStores.map((x) => x?.counts.writesLanded ?? 0),
          leads: s.shardStores.map((_, i) => (s.c as ShardedCoordinator).isLeader(i)),
        }
        : {}),
      completed: s.completed,
      held: s.held,
      commitErrors: s.commitErrors,
      joinCalledAt: s.joinCalledAt,
      joinedAt: s.joinedAt,
      firstEventAt: s.firstEventAt,
      firstEventType: s.firstEventType,
      doneAt: s.doneAt,
      outcome: s.outcome,
      error: s.error,
    };
  });
  emit({
    ev: "report",
    at: now(),
    rss: rss(),
    baseRss,
    heap: process.memoryUsage().heapUsed,
    // Where the RSS goes: V8's heap as reserved (heapTotal), memory outside it that JS objects hold (external, arrayBuffers).
    mem: (({ heapTotal, heapUsed, external, arrayBuffers }) => ({ heapTotal, heapUsed, external, arrayBuffers }))(process.memoryUsage()),
    ...(gcMs !== undefined ? { gcMs } : {}),
    probeFires,
    plannerCalls,
    planTerm,
    commits,
    total: sumCounts(coordinators.flatMap((c) => (c.counts ? [c.counts] : []))),
    coordinators,
  });
}

/** Writes a V8 heap snapshot (node:v8 works on Deno, Node and Bun alike); says where and how long it took. */
async function heapSnapshot(path: string): Promise<void> {
  const t0 = now();
  try {
    const v8 = await import("node:v8");
    const file = v8.writeHeapSnapshot(path);
    emit({ ev: "heap", path: file, ms: now() - t0, rss: rss(), heap: process.memoryUsage().heapUsed });
  } catch (e) {
    emit({ ev: "heap", error: String(e) });
  }
}

async function close(): Promise<void> {
  await Promise.all(slots.map(async (s) => {
    await s.c?.close().catch(() => {});
    if (cfg.mode === "nats") await s.raw?.close().catch(() => {});
  }));
  await memory?.close();
  clearInterval(probe);
  clearInterval(heldTimer);
  setRate(0);
  emit({ ev: "closed" });
}

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  let cmd: { cmd?: string; perSec?: number; path?: string; gc?: boolean };
  try {
    cmd = JSON.parse(line);
  } catch {
    return;
  }
  if (cmd.cmd === "go") {
    if (cfg.mode === "memory") memory = new MemoryStore();
    emit({ ev: "going", at: now() });
    void Promise.all(slots.map(join));
  } else if (cmd.cmd === "report") void report(cmd.gc === true);
  else if (cmd.cmd === "rate") setRate(Number(cmd.perSec));
  else if (cmd.cmd === "heap" && cmd.path) void heapSnapshot(cmd.path);
  else if (cmd.cmd === "close") void close();
  else if (cmd.cmd === "exit") process.exit(0);
});
lines.on("close", () => process.exit(0)); // the parent is gone
emit({ ev: "ready", rss: baseRss, pid: process.pid });
