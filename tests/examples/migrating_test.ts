/**
 * docs/MIGRATING.md's three versions of one job (examples/migrating): the
 * BullMQ queue on Redis, the JetStream work queue and the splitlease source
 * on nats-server, each run by two "processes" of two lanes, copy the same
 * rows into their sinks. The code the page shows runs, not just
 * type-checks. Redis and nats-server are started here on free loopback
 * ports and stopped even on failure.
 */
import assert from "node:assert/strict";
import { wsconnect } from "@nats-io/nats-core";
import { jetstreamManager } from "@nats-io/jetstream";
import { Queue } from "bullmq";
import { SplitCoordinator, startWorker } from "../../mod.ts";
import { NatsStore } from "../../nats.ts";
import { RedisStore } from "../../adapters/redis.ts";
import { startRedis } from "../../scripts/services.mjs";
import { NatsServer } from "../helpers/nats_server.ts";
import { withTimeout } from "../helpers/deadline.ts";
import { waitFor } from "../helpers/worker_procs.ts";
import * as bull from "../../examples/migrating/bullmq.ts";
import * as queue from "../../examples/migrating/jetstream.ts";
import { backfillSource } from "../../examples/migrating/splitlease.ts";
import { MemorySink, readRows } from "../../examples/migrating/job.ts";

const TOTAL = 3000, SIZE = 250;
const opts = { sanitizeResources: false, sanitizeOps: false };

/** Every row of the source, as a sink holds it after the job. */
async function expected(): Promise<Map<number, number>> {
  return new Map((await readRows(0, TOTAL)).map((r) => [r.id, r.value]));
}

/** Polls `cond` until it holds, for at most a minute. */
const until = (what: string, cond: () => Promise<boolean>) => waitFor(what, async () => (await cond()) || undefined, 60_000);

Deno.test({
  name: "migrating: the BullMQ version copies every row (2 workers × concurrency 2, Redis)",
  ...opts,
  fn: async () => {
    const redis = await startRedis({ log: () => {} });
    if ("error" in redis) throw new Error(redis.error);
    const connection = { host: "127.0.0.1", port: redis.port };
    const sink = new MemorySink();
    const workers = [bull.startWorker(connection, sink, 2), bull.startWorker(connection, sink, 2)];
    const q = new Queue(bull.QUEUE, { connection });
    try {
      await bull.enqueue(connection, TOTAL, SIZE);
      await bull.enqueue(connection, TOTAL, SIZE); // run twice: the job ids add nothing
      await until("every BullMQ job completed", async () => (await q.getJobCounts("completed")).completed === TOTAL / SIZE);
      assert.deepEqual(sink.rows, await expected());
      assert.equal(sink.writes, TOTAL, "each row written once: nothing failed");
    } finally {
      await Promise.all(workers.map((w) => w.close()));
      await q.close();
      await redis.stop();
    }
  },
});

Deno.test({
  name: "migrating: the JetStream work-queue version copies every row (2 workers × 2 lanes, nats-server)",
  ...opts,
  fn: async () => {
    await using server = await NatsServer.start();
    const nc = await wsconnect({ servers: server.wsUrl });
    const stop = new AbortController();
    const sink = new MemorySink();
    let workers: Promise<void> | undefined;
    try {
      await queue.enqueue(nc, TOTAL, SIZE);
      workers = Promise.all([queue.work(nc, sink, 2, stop.signal), queue.work(nc, sink, 2, stop.signal)]).then(() => {});
      const jsm = await jetstreamManager(nc);
      // Work-queue retention removes a message once it is acked.
      await until("every message acked", async () => (await jsm.streams.info(queue.STREAM)).state.messages === 0 && sink.rows.size === TOTAL);
      assert.deepEqual(sink.rows, await expected());
      assert.equal(sink.writes, TOTAL);
    } finally {
      stop.abort();
      await withTimeout(workers ?? Promise.resolve(), 10_000, "the work-queue loops to stop");
      await nc.close();
    }
  },
});

Deno.test({
  name: "migrating: the splitlease version copies every row and its split records count them (2 workers × 2 lanes, nats-server)",
  ...opts,
  fn: async () => {
    await using server = await NatsServer.start();
    const sink = new MemorySink();
    const stores: NatsStore[] = [];
    const workers = [];
    try {
      for (const instance of ["w1", "w2"]) {
        const store = await NatsStore.connect({ servers: server.wsUrl, job: "backfill" });
        stores.push(store);
        const source = backfillSource(sink, TOTAL, SIZE);
        const coordinator = await SplitCoordinator.join({
          store, job: "backfill", instance, fingerprint: source.fingerprint(), planner: (c) => source.plan(c), maxInFlight: 2,
        });
        workers.push(startWorker({ coordinator, source, maxInFlight: 2, logger: () => {} }));
      }
      const outcomes = await withTimeout(Promise.all(workers.map((w) => w.done)), 60_000, "the job to complete");
      assert.deepEqual(outcomes.map((o) => o.kind === "drained" && o.reason), ["complete", "complete"]);
      assert.deepEqual(sink.rows, await expected());
      assert.equal(sink.writes, TOTAL);
      const splits = await stores[0].list("split.");
      assert.equal(splits.length, TOTAL / SIZE);
      assert.equal(splits.reduce((n, e) => n + (JSON.parse(e.value).records ?? 0), 0), TOTAL, "the records the result counts");
    } finally {
      await Promise.all(workers.map((w) => w.shutdown({ deadlineMs: 0 }).catch(() => {})));
      for (const s of stores) await s.close().catch(() => {});
    }
  },
});

Deno.test({
  name: "migrating: the BullMQ version and the splitlease version share one Redis, each copies every row, neither touches the other's keys",
  ...opts,
  fn: async () => {
    const redis = await startRedis({ log: () => {}, appendfsync: "always" });
    if ("error" in redis) throw new Error(redis.error);
    const connection = { host: "127.0.0.1", port: redis.port };
    const bullSink = new MemorySink();
    const bullWorker = bull.startWorker(connection, bullSink, 2);
    const q = new Queue(bull.QUEUE, { connection });
    const sink = new MemorySink();
    const stores: RedisStore[] = [];
    const workers = [];
    try {
      await bull.enqueue(connection, TOTAL, SIZE);
      for (const instance of ["w1", "w2"]) {
        const store = await RedisStore.connect({ url: redis.url, job: "backfill", logger: () => {} });
        stores.push(store);
        const source = backfillSource(sink, TOTAL, SIZE);
        const coordinator = await SplitCoordinator.join({
          store, job: "backfill", instance, fingerprint: source.fingerprint(), planner: (c) => source.plan(c), maxInFlight: 2,
        });
        workers.push(startWorker({ coordinator, source, maxInFlight: 2, logger: () => {} }));
      }
      const outcomes = await withTimeout(Promise.all(workers.map((w) => w.done)), 60_000, "the job to complete");
      assert.deepEqual(outcomes.map((o) => o.kind === "drained" && o.reason), ["complete", "complete"]);
      await until("every BullMQ job completed", async () => (await q.getJobCounts("completed")).completed === TOTAL / SIZE);
      assert.deepEqual(sink.rows, await expected());
      assert.deepEqual(bullSink.rows, await expected());
      // The queue's keys and the job's, side by side.
      const client = await (await import("@redis/client")).createClient({ url: redis.url, RESP: 2 }).connect();
      try {
        const keys = (await client.sendCommand(["KEYS", "*"])) as string[];
        assert.ok(keys.some((k) => k.startsWith("bull:")), "BullMQ's keys are there");
        assert.ok(keys.some((k) => k.startsWith("splitlease:{backfill}:")), "the job's keys are there");
        assert.deepEqual(keys.filter((k) => !k.startsWith("bull:") && !k.startsWith("splitlease:")), [], "nothing else");
      } finally {
        await client.close();
      }
    } finally {
      await Promise.all(workers.map((w) => w.shutdown({ deadlineMs: 0 }).catch(() => {})));
      for (const s of stores) await s.close().catch(() => {});
      await bullWorker.close();
      await q.close();
      await redis.stop();
    }
  },
});
