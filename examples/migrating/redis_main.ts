/**
 * One worker process of the migrated job on the Redis that ran the BullMQ
 * queue (docs/MIGRATING.md, "From BullMQ on the same Redis"): no NATS to
 * deploy. Run it once per replica, all with the same REDIS_URL.
 *
 * @module
 */
import process from "node:process";
import { RedisStore } from "@splitlease/splitlease/redis";
import { serve } from "@splitlease/splitlease/node"; // or /deno, /bun
import { MemorySink } from "./job.ts";
import { backfillSource } from "./splitlease.ts";

const sink = new MemorySink(); // your sink
await serve({
  // The queue's Redis: its keys stay under bull:, the job's go under splitlease:{backfill}:.
  storeFactory: () => RedisStore.connect({ url: process.env.REDIS_URL!, job: "backfill" }),
  source: backfillSource(sink, 3000, 250),
  job: "backfill",
  maxInFlight: 2,
  port: 8080,
});
