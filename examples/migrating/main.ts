/**
 * One worker process of the migrated job (docs/MIGRATING.md, "Starting the
 * workers"): run it once per replica, all with the same NATS_URL. On Node
 * 22+: `node main.js` after a build; on Deno, `deno run -A main.ts` with
 * `serve` from the Deno adapter.
 *
 * @module
 */
import process from "node:process";
import { NatsStore } from "@splitlease/splitlease/nats";
import { serve } from "@splitlease/splitlease/node"; // or /deno, /bun
import { MemorySink } from "./job.ts";
import { backfillSource } from "./splitlease.ts";

const sink = new MemorySink(); // your sink
await serve({
  storeFactory: () => NatsStore.connect({ servers: process.env.NATS_URL!, job: "backfill" }),
  source: backfillSource(sink, 3000, 250),
  job: "backfill",
  maxInFlight: 2, // BullMQ's concurrency, the work queue's lanes
  port: 8080, // the fleet page, /metrics, /healthz, /readyz
});
