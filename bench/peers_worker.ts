// Worker process of bench/peers_bench.ts, run on Node 24 from an esbuild
// bundle: one worker of splitlease (NatsStore over WebSocket + startWorker),
// of a JetStream work queue (shared durable pull consumer, explicit ack, NAK
// to hand back) or of BullMQ (local Redis).
//
// Config: env PEERS (JSON, see Cfg). Protocol: JSON lines.
//   stdout: ready, joined, planned, published, held, started, progress, handback, report, redis, closed
//   stdin:  go, publish, handback, report, redis, cleanup, exit (stdin EOF exits too)
//
// Roles: consumer (does the tasks), standby (maxInFlight 0: only watches for the end),
// planner (splitlease: plans, then leaves), holder (takes `tasks` tasks and
// holds them until `handback`), receiver (a consumer that reports when it
// starts each task).
import process from "node:process";
import { wsconnect } from "@nats-io/nats-core";
import { type Consumer, jetstream, type JsMsg } from "@nats-io/jetstream";
import { Redis } from "ioredis";
import { type Job, Queue, QueueEvents, Worker as BullWorker, WaitingError } from "bullmq";
import { SplitCoordinator, startWorker } from "../mod.ts";
import type { Coordinator, Store, SplitSource, Worker } from "../mod.ts";
import type { Logger } from "../host.ts";
import { silentLogger } from "../host.ts";
import { NatsStore } from "../nats.ts";
import { CountingStore } from "./counting_store.ts";
import { TracingStore } from "./tracing_store.ts";
import { serveCommands } from "./_worker_io.ts";
import { appendFileSync } from "node:fs";

interface Cfg {
  system: "splitlease" | "jetstream" | "bullmq";
  role: "consumer" | "standby" | "planner" | "holder" | "receiver";
  id: string;
  natsUrl: string;
  /** splitlease on PostgreSQL: the store's postgres:// URL (else NATS). */
  pgUrl?: string;
  /** splitlease on Redis: the store's redis:// URL. */
  redisUrl?: string;
  /** Job / stream / queue name of this run. */
  name: string;
  tasks: number;
  maxInFlight: number;
  /** splitlease consumers: carry the planner (planning included). */
  plans?: boolean;
}
const cfg: Cfg = JSON.parse(process.env.PEERS ?? "{}");
/** CLOCK_MONOTONIC in ms: the same clock in every Node process on this machine (timeOrigin-based times drift apart by ms). */
const now = () => Number(process.hrtime.bigint()) / 1e6;
const emit = (o: Record<string, unknown>): void => void process.stdout.write(JSON.stringify(o) + "\n");
// The bench's own Redis (`npm run bench -- peers` starts it on a free port).
const redisConn = { host: "127.0.0.1", port: Number(process.env.REDIS_PORT), maxRetriesPerRequest: null };
const hold = cfg.role === "holder";
const reportStarts = cfg.role === "holder" || cfg.role === "receiver";

// What every system reports.
let completed = 0, firstCompletionAt = 0, lastCompletionAt = 0, completeSeenAt = 0;
const drainedAts: number[] = [];
let lastProgress = 0;
function done(): void {
  completed++;
  lastCompletionAt = now();
  firstCompletionAt ||= lastCompletionAt;
  if (completed - lastProgress >= 100) progress();
}
function progress(): void {
  lastProgress = completed;
  emit({ ev: "progress", completed, at: now() });
}
const progressTimer = setInterval(() => completed !== lastProgress && progress(), 100);

// --- splitlease ----------------------------------------------------------------
let store: CountingStore | undefined, raw: Store | undefined, worker: Worker | undefined, coord: SplitCoordinator | undefined;
const source: SplitSource<number> = {
  fingerprint: () => cfg.name,
  plan: () =>
    Promise.resolve({
      finality: "final" as const,
      splits: Array.from({ length: cfg.tasks }, (_, i) => ({ id: `t${i}`, descriptor: i })),
    }),
  async run(lane) {
    if (reportStarts) emit({ ev: "started", id: lane.splitId, at: now() });
    if (hold) {
      await new Promise<void>((r) => {
        if (lane.revokeSignal.aborted || lane.signal.aborted) return r();
        lane.revokeSignal.addEventListener("abort", () => r(), { once: true });
        lane.signal.addEventListener("abort", () => r(), { once: true });
      });
      return; // cooperative: released (zero replay) to the next owner
    }
    await lane.complete();
    done();
  },
};

/**
 * BENCH_PEERS_LOG=dir: the coordinator's warnings, errors and decisions of
 * note (outcome, leadership), stamped on the shared monotonic clock, one
 * file per worker; silent otherwise.
 */
const logDir = process.env.BENCH_PEERS_LOG;
const NOTE = /outcome|[Ll]ead|[Ee]lect|[Cc]omplete/;
const benchLogger: Logger = logDir
  ? (level, msg, fields) => {
    if (level === "warn" || level === "error" || (level === "info" && NOTE.test(msg) && msg !== "split completed")) {
      appendFileSync(`${logDir}/${cfg.name}-${cfg.id}.log`, JSON.stringify({ at: now(), level, msg, ...fields }) + "\n");
    }
  }
  : silentLogger;

/** The coordinator with `allComplete` time-stamped as the worker polls it. */
function stamped(c: SplitCoordinator): Coordinator {
  return new Proxy(c, {
    get(t, p) {
      if (p === "poll") {
        return async () => {
          const e = await t.poll();
          if (e?.type === "allComplete") completeSeenAt ||= now();
          return e;
        };
      }
      const v = Reflect.get(t, p, t);
      return typeof v === "function" ? v.bind(t) : v;
    },
  }) as Coordinator;
}

async function splitleaseGo(): Promise<void> {
  const t0 = now();
  coord = await SplitCoordinator.join({
    store: store!,
    job: cfg.name,
    instance: cfg.id,
    fingerprint: cfg.name,
    planner: cfg.role === "planner" || cfg.plans ? (ctx) => source.plan(ctx) : undefined,
    maxInFlight: cfg.role === "planner" ? 1 : cfg.role === "standby" ? 0 : cfg.maxInFlight,
    runtime: "node",
    logger: benchLogger,
  });
  emit({ ev: "joined", at: now(), ms: now() - t0 });
  if (cfg.role === "planner") {
    while (!((coord.status().plan?.generation ?? 0) > 0)) await new Promise((r) => setTimeout(r, 1));
    emit({ ev: "planned", at: now(), ms: now() - t0 });
    await coord.close();
  } else if (cfg.role === "standby") {
    // A standby (maxInFlight 0) never holds a split; it still sees the end.
    for (;;) {
      const e = await coord.poll();
      if (!e) break;
      if (e.type === "allComplete") completeSeenAt ||= now();
    }
  } else {
    worker = startWorker({ coordinator: stamped(coord), source, maxInFlight: cfg.maxInFlight, logger: benchLogger });
  }
}

// --- JetStream work queue -----------------------------------------------------------
const subject = `peers.${cfg.name}`;
let nc: Awaited<ReturnType<typeof wsconnect>> | undefined;
const heldMsgs: JsMsg[] = [];
let published = false, tail = false;

async function jsSetup(): Promise<void> {
  nc = await wsconnect({ servers: cfg.natsUrl });
  const sub = nc.subscribe(`${subject}.done`);
  (async () => {
    for await (const _ of sub) completeSeenAt ||= now();
  })();
  const pub = nc.subscribe(`${subject}.published`);
  (async () => {
    for await (const _ of pub) {
      published = true;
      if (cfg.role === "consumer") void checkEnd();
    }
  })();
  // The tail: some consumer got a message with nothing left undelivered. From
  // then on every consumer confirms each ack and checks for the end, and each
  // checks once now (its earlier plain acks may have been the last ones).
  const tailSub = nc.subscribe(`${subject}.tail`);
  (async () => {
    for await (const _ of tailSub) {
      if (tail || cfg.role !== "consumer") continue;
      tail = true;
      await nc!.flush();
      await checkEnd();
    }
  })();
  await nc.flush();
}

/** The completion signal: once the consumer's ack floor reaches the last task, tell everyone. */
let jsConsumer: Consumer | undefined;
async function checkEnd(): Promise<void> {
  jsConsumer ??= await jetstream(nc!).consumers.get(cfg.name, "workers");
  const ci = await jsConsumer.info();
  if (ci.ack_floor.stream_seq >= cfg.tasks && ci.num_ack_pending === 0) nc!.publish(`${subject}.done`);
}

async function jsGo(): Promise<void> {
  if (cfg.role === "standby") return;
  const c = await jetstream(nc!).consumers.get(cfg.name, "workers");
  if (hold) {
    const batch = await c.fetch({ max_messages: cfg.tasks, expires: 10_000 });
    for await (const m of batch) {
      emit({ ev: "started", id: m.seq, at: now() });
      heldMsgs.push(m);
      if (heldMsgs.length >= cfg.tasks) break;
    }
    return;
  }
  const msgs = await c.consume({ max_messages: cfg.maxInFlight });
  (async () => {
    for await (const m of msgs) {
      if (reportStarts) emit({ ev: "started", id: m.seq, at: now() });
      // In the tail (everything published, nothing left undelivered) confirm
      // each ack and check whether it was the last one.
      if (!tail && published && m.info.pending === 0 && cfg.role === "consumer") {
        tail = true;
        nc!.publish(`${subject}.tail`);
      }
      if (tail) {
        // Not awaited: the next message is processed meanwhile.
        m.ackAck().then(() => (done(), checkEnd())).catch((e) => emit({ ev: "error", cmd: "ack", error: String(e) }));
      } else {
        m.ack();
        done();
      }
    }
  })();
}

async function jsPublish(): Promise<void> {
  const js = jetstream(nc!);
  const t0 = now();
  for (let i = 0; i < cfg.tasks; i += 1000) {
    const n = Math.min(1000, cfg.tasks - i);
    await Promise.all(Array.from({ length: n }, (_, k) => js.publish(`${subject}.task`, JSON.stringify({ i: i + k }))));
  }
  nc!.publish(`${subject}.published`);
  await nc!.flush();
  emit({ ev: "published", at: now(), ms: now() - t0 });
}

// --- BullMQ -----------------------------------------------------------------------
let queue: Queue | undefined, bull: BullWorker | undefined, events: QueueEvents | undefined;
const heldJobs: { job: Job; token: string; release: (e: Error) => void }[] = [];

async function bullSetup(): Promise<void> {
  queue = new Queue(cfg.name, { connection: redisConn });
  await queue.waitUntilReady();
  if (cfg.role === "standby") {
    events = new QueueEvents(cfg.name, { connection: redisConn });
    events.on("drained", () => drainedAts.push(now()));
    await events.waitUntilReady();
    return;
  }
  bull = new BullWorker(
    cfg.name,
    (job, token) => {
      if (reportStarts) emit({ ev: "started", id: job.id, at: now() });
      if (!hold) return Promise.resolve();
      return new Promise<void>((_, reject) => heldJobs.push({ job, token: token!, release: reject }));
    },
    { connection: redisConn, concurrency: cfg.maxInFlight, autorun: false },
  );
  bull.on("completed", () => done());
  bull.on("drained", () => drainedAts.push(now()));
  await bull.waitUntilReady();
}

async function bullPublish(): Promise<void> {
  const t0 = now();
  for (let i = 0; i < cfg.tasks; i += 1000) {
    const n = Math.min(1000, cfg.tasks - i);
    await queue!.addBulk(Array.from({ length: n }, (_, k) => ({ name: "t", data: { i: i + k } })));
  }
  emit({ ev: "published", at: now(), ms: now() - t0 });
}

/** What a splitlease observer knows of the job (for a completion that did not arrive). */
function coordStatus(c: SplitCoordinator): Record<string, unknown> {
  const st = c.status();
  return { id: cfg.id, state: st.state, leader: st.leader, plan: st.plan, held: st.held.length };
}

/** CPU time (user + system) this process used so far, in ms. */
function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/** Commands Redis processed and CPU ms it used so far (INFO), read on a connection of its own. */
async function redisCommands(): Promise<{ commands: number; cpuMs: number }> {
  const client = new Redis(redisConn);
  try {
    const info = await client.info();
    const field = (k: string) => Number(new RegExp(`${k}:([\\d.]+)`).exec(info)?.[1] ?? NaN);
    return { commands: field("total_commands_processed"), cpuMs: (field("used_cpu_user") + field("used_cpu_sys")) * 1000 };
  } finally {
    client.disconnect();
  }
}

// --- commands ------------------------------------------------------------------------
async function handback(): Promise<void> {
  const at = now();
  emit({ ev: "handback", at, held: heldMsgs.length + heldJobs.length });
  if (cfg.system === "splitlease") await worker?.shutdown({ reason: "handback" });
  else if (cfg.system === "jetstream") {
    for (const m of heldMsgs) m.nak();
    await nc!.flush();
  } else {
    await bull!.pause(true); // take nothing new; the moved jobs go to the other worker
    await Promise.all(heldJobs.map(async (h) => {
      await h.job.moveToWait(h.token);
      h.release(new WaitingError());
    }));
  }
  emit({ ev: "handedBack", at: now(), ms: now() - at });
}

function report(): void {
  emit({
    ev: "report",
    completed,
    firstCompletionAt,
    lastCompletionAt,
    completeSeenAt,
    drainedAts,
    counts: store?.snapshot(),
    rss: process.memoryUsage().rss,
    cpuMs: cpuMs(),
    leaderPasses: coord?.stats().leaderPasses ?? 0,
    status: coord ? coordStatus(coord) : undefined,
  });
}

async function exit(): Promise<void> {
  clearInterval(progressTimer);
  const bounded = (p: Promise<unknown> | undefined) =>
    Promise.race([p?.catch(() => {}), new Promise((r) => setTimeout(r, 3000))]);
  await bounded(worker ? worker.shutdown() : coord?.close());
  await bounded(raw?.close());
  await bounded(bull?.close(true));
  await bounded(events?.close());
  await bounded(queue?.close());
  await bounded(nc?.close());
  process.exit(0);
}

const handlers: Record<string, () => Promise<void> | void> = {
  go: () => {
    emit({ ev: "going", at: now() });
    return cfg.system === "splitlease" ? splitleaseGo() : cfg.system === "jetstream" ? jsGo() : void bull?.run();
  },
  publish: () => (cfg.system === "jetstream" ? jsPublish() : bullPublish()),
  handback,
  report,
  redis: async () => emit({ ev: "redis", ...await redisCommands() }),
  cleanup: async () => {
    await queue?.obliterate({ force: true });
    emit({ ev: "cleaned" });
  },
  exit,
};
serveCommands(handlers, emit, () => process.exit(0));

try {
  if (cfg.system === "splitlease") {
    raw = cfg.pgUrl
      ? await (await import("../adapters/postgres.ts")).PostgresStore.connect({ url: cfg.pgUrl, job: cfg.name, opTimeoutMs: 5000 })
      : cfg.redisUrl
      ? await (await import("../adapters/redis.ts")).RedisStore.connect({ url: cfg.redisUrl, job: cfg.name, opTimeoutMs: 5000, logger: () => {} })
      : await NatsStore.connect({ servers: cfg.natsUrl, job: cfg.name, opTimeoutMs: 5000 });
    // BENCH_PEERS_TRACE=dir: every store operation and watch delivery, one line each, in dir/<id>.trace.
    const traceDir = process.env.BENCH_PEERS_TRACE;
    const traced: Store = traceDir
      ? new TracingStore(raw, now, (l) => appendFileSync(`${traceDir}/${cfg.name}-${cfg.id}.trace`, l + "\n"))
      : raw;
    // Writes landed are counted; claims are not (it would parse every split update this process sends).
    store = new CountingStore(traced, cfg.id, { claims: false });
  } else if (cfg.system === "jetstream") await jsSetup();
  else await bullSetup();
  emit({ ev: "ready", pid: process.pid });
} catch (e) {
  emit({ ev: "error", cmd: "setup", error: String(e) });
  process.exit(1);
}
