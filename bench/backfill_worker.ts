// Worker process of bench/backfill_bench.ts (Deno): one splitlease worker
// (NatsStore over WebSocket + startWorker, every worker carrying the
// planner), one consumer of a JetStream work queue (a shared durable pull
// consumer, one `next()` per free lane, explicit ack), or no coordination
// at all (`none`: it runs the splits the bench names on stdin, `run {i}`,
// one per free lane; the baseline of what the processing and the bench's
// own reporting cost). The BullMQ peer is bench/backfill_bullmq_worker.ts
// (Node).
//
// Every split is a range [from, to) of record ids; a record costs
// msPerRecord ms of sleep and records are processed in batches of `batch`.
// splitlease commits after every batch (watermark = the next id, estimate
// { left, total, unit: "ids" }) and resumes from its committed watermark;
// a queue's message restarts its range from the start when redelivered.
// With `cuts`, the source has a `split` hook: it cuts the remaining ids
// [pos, to) into `parts` ranges, pos being the end of the batch in flight
// (at or after the committed watermark), and declines below 2 batches a
// piece.
//
// Config: env BACKFILL (JSON, see Cfg). Protocol: JSON lines.
//   stdout: ready {pid}, started {id, lane, from, to, at}, processed {id, lane,
//           from, to, at} (a batch done), cut {id, lane, keep, residuals, at}
//           (the hook's answer), ended {lane, at} (a tenancy / message ended), done
//           {id, at} (completed / acked), finished {outcome, stats} (splitlease:
//           the worker ended), leader {leader} (splitlease: leadership
//           changed), log {level, msg, fields, at}, error
//   stdin:  go (the planner may plan / consuming starts), run {i} (none: run
//           split i on a free lane), exit
import { wsconnect } from "@nats-io/nats-core";
import { jetstream } from "@nats-io/jetstream";
import { SplitCoordinator, startWorker } from "../mod.ts";
import type { SplitSource } from "../mod.ts";
import type { Logger } from "../host.ts";
import { NatsStore } from "../nats.ts";
import { natsTransport } from "./_transport.ts";
import { runRange } from "./_worker_io.ts";
import { eachLine } from "../tests/helpers/lines.ts";

type Range = { from: number; to: number };
interface Cfg {
  system: "splitlease" | "jetstream" | "none";
  id: string;
  natsUrl: string;
  /** splitlease on PostgreSQL: the store's postgres:// URL (else NATS). */
  pgUrl?: string;
  /** Job / stream name of this run. */
  name: string;
  lanes: number;
  msPerRecord: number;
  /** Records per batch (one commit per batch with splitlease). */
  batch: number;
  /** The planned splits, in plan order (split `b<i>` is splits[i]). */
  splits: Range[];
  /** splitlease: whether each split's weight is its size. */
  weights: boolean;
  /** splitlease: whether the source has a `split` hook. */
  cuts: boolean;
  /** splitlease: leaseMs. */
  leaseMs: number;
  /** splitlease: the worker's commitIntervalMs (0: every commit is written, the default). */
  commitIntervalMs?: number;
  /** JetStream: the consumer's ack wait (the worker sends `working()` every third of it). */
  ackWaitMs: number;
}
const cfg: Cfg = JSON.parse(Deno.env.get("BACKFILL") ?? "{}");
/** Comparable across the processes of one machine (see bench/_procs.ts wallNow). */
const now = () => performance.timeOrigin + performance.now();
const emit = (o: Record<string, unknown>): void => console.log(JSON.stringify(o));
const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((r) => {
    if (signal?.aborted) return r();
    const t = setTimeout(r, ms);
    signal?.addEventListener("abort", () => (clearTimeout(t), r()), { once: true });
  });

let go!: () => void;
const started = new Promise<void>((r) => (go = r));
const exit = async () => {
  await Promise.race([cleanup().catch(() => {}), sleep(3000)]);
  Deno.exit(0);
};
let cleanup = async (): Promise<void> => {};
/** none: runs split `i` (the bench sends one per free lane). */
let runSplit = (_i: number): void => {};
void eachLine(Deno.stdin.readable, (line) => {
  const { cmd, i } = JSON.parse(line);
  if (cmd === "go") go();
  if (cmd === "run") runSplit(Number(i));
  if (cmd === "exit") void exit();
}).then(() => exit());

/** Forwards warnings, errors and every line about cuts (the leader's asks, the worker's answers) to the bench. */
const logger: Logger = (level, msg, fields) => {
  if (level === "warn" || level === "error" || /\bcut/i.test(msg)) emit({ ev: "log", level, msg, fields, at: now() });
};

try {
  if (cfg.system === "splitlease") {
    const store = cfg.pgUrl
      ? await (await import("../adapters/postgres.ts")).PostgresStore.connect({ url: cfg.pgUrl, job: cfg.name, opTimeoutMs: 2000 })
      : await NatsStore.connect({ servers: cfg.natsUrl, job: cfg.name, opTimeoutMs: 2000, ...(await natsTransport()) });
    /** Lane id → the end of the batch it has started (the position it has reached). */
    const reached = new Map<string, number>();
    const source: SplitSource<Range> = {
      fingerprint: () => cfg.name,
      plan: async () => {
        await started; // plans for the whole fleet, once every process joined
        return {
          finality: "final" as const,
          splits: cfg.splits.map((r, i) => ({ id: `b${i}`, descriptor: r, ...(cfg.weights ? { weight: r.to - r.from } : {}) })),
        };
      },
      async run(lane) {
        let at = Number(lane.progress?.watermark ?? lane.descriptor.from);
        emit({ ev: "started", id: lane.splitId, lane: lane.id, from: at, to: lane.descriptor.to, at: now() });
        try {
          while (at < lane.descriptor.to) {
            if (lane.signal.aborted || lane.revokeSignal.aborted) return; // lost or revoked: released to its next owner
            const end = Math.min(at + cfg.batch, lane.descriptor.to);
            reached.set(lane.id, end);
            const t0 = now();
            await sleep((end - at) * cfg.msPerRecord, AbortSignal.any([lane.signal, lane.revokeSignal]));
            if (now() - t0 < (end - at) * cfg.msPerRecord - 1) return; // stopped mid-batch: the batch is not processed
            emit({ ev: "processed", id: lane.splitId, lane: lane.id, from: at, to: end, at: now() });
            const d = lane.descriptor; // the kept range once cut
            await lane.commit({ watermark: end, estimate: { left: d.to - end, total: d.to - d.from, unit: "ids" } }, { records: end - at });
            at = end;
          }
          await lane.complete();
          emit({ ev: "done", id: lane.splitId, at: now() });
        } catch (e) {
          if (lane.signal.aborted) return; // lost: its commits are fenced
          throw e;
        } finally {
          reached.delete(lane.id);
          emit({ ev: "ended", lane: lane.id, at: now() });
        }
      },
    };
    if (cfg.cuts) {
      source.split = (lane, { parts }) => {
        const d = lane.descriptor;
        // At or after the committed watermark and the batch in flight: nothing `run` started is given away.
        const pos = Math.max(reached.get(lane.id) ?? d.from, Number(lane.progress?.watermark ?? d.from));
        const step = Math.floor((d.to - pos) / parts);
        if (step < 2 * cfg.batch) {
          emit({ ev: "cut", id: lane.splitId, lane: lane.id, declined: true, left: d.to - pos, parts, at: now() });
          return undefined;
        }
        const ends = Array.from({ length: parts }, (_, k) => (k === parts - 1 ? d.to : pos + step * (k + 1)));
        const keep = { from: d.from, to: ends[0] };
        const residuals = ends.slice(1).map((to, k) => ({ descriptor: { from: ends[k], to }, ...(cfg.weights ? { weight: to - ends[k] } : {}) }));
        emit({ ev: "cut", id: lane.splitId, lane: lane.id, keep, residuals: residuals.map((r) => r.descriptor), left: d.to - pos, parts, at: now() });
        // Weights in ids, like the plan's: the leader's estimate of work left is weight × left / total.
        return { keep, ...(cfg.weights ? { weight: keep.to - keep.from } : {}), residuals };
      };
    }
    const coord = await SplitCoordinator.join({
      store,
      job: cfg.name,
      instance: cfg.id,
      fingerprint: cfg.name,
      planner: (ctx) => source.plan(ctx),
      maxInFlight: cfg.lanes,
      runtime: "deno",
      leaseMs: cfg.leaseMs,
      opTimeoutMs: Math.min(2000, cfg.leaseMs / 2),
      // startWorker does not set it from the hook (serve does): a coordinator joined by hand says so itself.
      ...(cfg.cuts ? { splittable: true } : {}),
      logger,
    });
    const worker = startWorker({ coordinator: coord, source, maxInFlight: cfg.lanes, logger, commitIntervalMs: cfg.commitIntervalMs ?? 0 });
    cleanup = async () => {
      await worker.shutdown().catch(() => {});
      await store.close().catch(() => {});
    };
    // Who leads (the bench spares the leader when it picks the process to kill, unless told otherwise).
    let leads = false;
    const leadership = setInterval(() => {
      const l = coord.status().isLeader;
      if (l !== leads) emit({ ev: "leader", leader: (leads = l), at: now() });
    }, 100);
    void worker.done.then((o) => {
      clearInterval(leadership);
      emit({ ev: "finished", outcome: o.kind, stats: worker.stats(), coord: coord.stats().cuts, at: now() });
    });
    emit({ ev: "ready", pid: Deno.pid });
  } else if (cfg.system === "none") {
    let lanes = 0;
    runSplit = (i) => {
      const { from, to } = cfg.splits[i];
      const lane = `${cfg.id}.${++lanes}`;
      emit({ ev: "started", id: `b${i}`, lane, from, to, at: now() });
      void runRange(from, to, cfg.batch, cfg.msPerRecord, sleep, (a, b) => emit({ ev: "processed", id: `b${i}`, lane, from: a, to: b, at: now() }))
        .then(() => {
          emit({ ev: "ended", lane, at: now() });
          emit({ ev: "done", id: `b${i}`, at: now() });
        });
    };
    emit({ ev: "ready", pid: Deno.pid });
  } else {
    const nc = await wsconnect({ servers: cfg.natsUrl });
    const c = await jetstream(nc).consumers.get(cfg.name, "workers");
    cleanup = () => nc.close();
    emit({ ev: "ready", pid: Deno.pid });
    await started;
    let lanes = 0;
    // One pull per free lane (no prefetch): the queue hands out messages in stream order.
    await Promise.all(Array.from({ length: cfg.lanes }, async () => {
      for (;;) {
        const m = await c.next({ expires: 5000 });
        if (!m) continue;
        const i = Number(new TextDecoder().decode(m.data));
        const { from, to } = cfg.splits[i];
        const lane = `${cfg.id}.${++lanes}`;
        emit({ ev: "started", id: `b${i}`, lane, from, to, at: now() });
        // In-progress acks keep a long range from being redelivered while it runs.
        const beat = setInterval(() => m.working(), cfg.ackWaitMs / 3);
        try {
          await runRange(from, to, cfg.batch, cfg.msPerRecord, sleep, (a, b) => emit({ ev: "processed", id: `b${i}`, lane, from: a, to: b, at: now() }));
        } finally {
          clearInterval(beat);
        }
        const acked = await m.ackAck().catch(() => false);
        emit({ ev: "ended", lane, at: now() });
        if (acked) emit({ ev: "done", id: `b${i}`, at: now() });
        else emit({ ev: "log", level: "warn", msg: "ack not confirmed", fields: { id: `b${i}` }, at: now() });
      }
    }));
  }
} catch (e) {
  emit({ ev: "error", error: String(e) });
}
