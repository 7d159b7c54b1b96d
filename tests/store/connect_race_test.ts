/**
 * Processes that connect to a job for the first time at the same moment
 * (serverless invocations, a fleet starting) all create its bucket; the
 * server answers the losers "stream name in use" or, when the requests
 * cross, "subjects overlap". Every one of them must open the bucket.
 */
import assert from "node:assert/strict";
import { NatsStore } from "../../nats.ts";
import { NatsServer } from "../helpers/nats_server.ts";

Deno.test({
  name: "connect: processes creating one job's bucket at the same moment all open it",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using server = await NatsServer.start();
    for (let round = 0; round < 120; round++) {
      const job = `race${round}`;
      const results = await Promise.allSettled(Array.from({ length: 8 }, () => NatsStore.connect({ servers: server.wsUrl, job })));
      const failed = results.filter((r) => r.status === "rejected").map((r) => String((r as PromiseRejectedResult).reason));
      for (const r of results) if (r.status === "fulfilled") await r.value.close();
      assert.deepEqual(failed, [], `round ${round}: every connect opens the bucket`);
    }
  },
});
