/**
 * Before: the job on BullMQ (docs/MIGRATING.md, left column). A producer
 * adds one job per range; every worker process runs a `Worker` of
 * `concurrency` lanes on the same queue; Redis holds the jobs.
 *
 * @module
 */
import { type ConnectionOptions, Queue, Worker } from "bullmq";
import { BATCH, type Range, ranges, readRows, type Sink } from "./job.ts";

/** The queue's name: the job's name. */
export const QUEUE = "backfill";

/** 1. The producer, run once: one job per range (its id makes a second run add nothing). */
export async function enqueue(connection: ConnectionOptions, total: number, size: number): Promise<void> {
  const queue = new Queue<Range>(QUEUE, { connection });
  await queue.addBulk(ranges(total, size).map((r) => ({
    name: "range",
    data: r,
    opts: { jobId: `range-${r.from}`, attempts: 3, backoff: { type: "exponential", delay: 1000 } },
  })));
  await queue.close();
}

/**
 * 2. The worker, in every process: copies each job's range batch by batch.
 * A job whose lock expired (its worker died) runs again from `from`: the
 * whole range is copied again.
 */
export function startWorker(connection: ConnectionOptions, sink: Sink, concurrency = 4): Worker<Range> {
  return new Worker<Range>(QUEUE, async (job) => {
    const { from, to } = job.data;
    for (let at = from; at < to; at += BATCH) {
      await sink.upsert(await readRows(at, Math.min(to, at + BATCH)));
      await job.updateProgress(Math.round((100 * (Math.min(to, at + BATCH) - from)) / (to - from)));
    }
  }, { connection, concurrency, lockDuration: 15_000 });
}
