/**
 * Before: the job on a JetStream work queue (docs/MIGRATING.md, middle
 * column). A producer publishes one message per range to a work-queue
 * stream; every worker process pulls from one shared durable consumer, one
 * message per free lane, says `working()` while it copies and acks at the
 * end.
 *
 * @module
 */
import { AckPolicy, jetstream, jetstreamManager, RetentionPolicy } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { BATCH, type Range, ranges, readRows, type Sink } from "./job.ts";

/** The stream, its subject and the shared consumer. */
export const STREAM = "BACKFILL", SUBJECT = "backfill.ranges", CONSUMER = "workers";

/** 1. The producer, run once: the stream, the consumer, one message per range. */
export async function enqueue(nc: NatsConnection, total: number, size: number): Promise<void> {
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: STREAM, subjects: [SUBJECT], retention: RetentionPolicy.Workqueue });
  await jsm.consumers.add(STREAM, { durable_name: CONSUMER, ack_policy: AckPolicy.Explicit, ack_wait: 15_000_000_000, max_deliver: 3 });
  const js = jetstream(nc);
  for (const r of ranges(total, size)) await js.publish(SUBJECT, JSON.stringify(r), { msgID: `range-${r.from}` });
}

/**
 * 2. The worker, in every process: `lanes` loops, each pulling the next
 * message, copying its range and acking it. A message whose ack wait ran
 * out (its worker died) is delivered again: the whole range is copied
 * again. Returns when `signal` aborts.
 */
export async function work(nc: NatsConnection, sink: Sink, lanes: number, signal: AbortSignal): Promise<void> {
  const consumer = await jetstream(nc).consumers.get(STREAM, CONSUMER);
  await Promise.all(Array.from({ length: lanes }, async () => {
    while (!signal.aborted) {
      const m = await consumer.next({ expires: 1000 });
      if (!m) continue; // nothing yet
      const { from, to } = m.json<Range>();
      for (let at = from; at < to; at += BATCH) {
        await sink.upsert(await readRows(at, Math.min(to, at + BATCH)));
        m.working(); // keeps the message ours past ack_wait
      }
      m.ack();
    }
  }));
}
