// BullMQ worker process of bench/backfill_bench.ts, run on Node from an
// esbuild bundle (as bench/peers_worker.ts): one BullMQ Worker of
// `concurrency` lanes on the bench's Redis (REDIS_PORT). One job per planned
// split (data { i }), added in plan order by the worker told to `publish`;
// a job processes its range [from, to) in batches of `batch` records, each
// record costing msPerRecord ms of sleep, and restarts from `from` when
// redelivered (a stalled job: its lock expired and the stalled check moved
// it back to wait).
//
// Config: env BACKFILL (JSON, see Cfg). Protocol: JSON lines, as
// bench/backfill_worker.ts.
//   stdout: ready {pid}, published, started, processed, ended, done, log, error
//   stdin:  publish, go, exit (stdin EOF exits too)
import process from "node:process";
import { Queue, Worker } from "bullmq";
import { runRange, serveCommands } from "./_worker_io.ts";

type Range = { from: number; to: number };
interface Cfg {
  id: string;
  /** Queue name of this run. */
  name: string;
  lanes: number;
  msPerRecord: number;
  batch: number;
  splits: Range[];
  /** lockDuration (the lock is renewed every half of it). */
  lockMs: number;
  /** stalledInterval: how often a worker moves jobs whose lock expired back to wait. */
  stalledMs: number;
}
const cfg: Cfg = JSON.parse(process.env.BACKFILL ?? "{}");
const connection = { host: "127.0.0.1", port: Number(process.env.REDIS_PORT), maxRetriesPerRequest: null };
const now = () => performance.timeOrigin + performance.now();
const emit = (o: Record<string, unknown>): void => console.log(JSON.stringify(o));
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

let lanes = 0;
const queue = new Queue(cfg.name, { connection });
const worker = new Worker(
  cfg.name,
  async (job) => {
    const i = (job.data as { i: number }).i;
    const { from, to } = cfg.splits[i];
    const lane = `${cfg.id}.${++lanes}`;
    emit({ ev: "started", id: `b${i}`, lane, from, to, at: now() });
    try {
      await runRange(from, to, cfg.batch, cfg.msPerRecord, sleep, (a, b) => emit({ ev: "processed", id: `b${i}`, lane, from: a, to: b, at: now() }));
    } finally {
      emit({ ev: "ended", lane, at: now() });
    }
  },
  { connection, concurrency: cfg.lanes, autorun: false, lockDuration: cfg.lockMs, stalledInterval: cfg.stalledMs },
);
// After the job is moved to completed in Redis: what a queue user calls done.
worker.on("completed", (job) => emit({ ev: "done", id: `b${(job.data as { i: number }).i}`, at: now() }));
worker.on("stalled", (id) => emit({ ev: "log", level: "warn", msg: "job stalled: moved back to wait", fields: { job: id }, at: now() }));
worker.on("error", (e) => emit({ ev: "log", level: "warn", msg: "worker error", fields: { error: String(e) }, at: now() }));

async function exit(): Promise<void> {
  const bounded = (p: Promise<unknown>) => Promise.race([p.catch(() => {}), sleep(3000)]);
  await bounded(worker.close(true));
  await bounded(queue.close());
  process.exit(0);
}

const handlers: Record<string, () => Promise<void> | void> = {
  publish: async () => {
    await queue.addBulk(cfg.splits.map((_, i) => ({ name: "split", data: { i } })));
    emit({ ev: "published", at: now() });
  },
  go: () => void worker.run().catch((e) => emit({ ev: "error", cmd: "go", error: String(e?.stack ?? e) })),
  exit,
};
serveCommands(handlers, emit, () => void exit());

try {
  await Promise.all([queue.waitUntilReady(), worker.waitUntilReady()]);
  emit({ ev: "ready", pid: process.pid });
} catch (e) {
  emit({ ev: "error", error: String(e) });
  process.exit(1);
}
