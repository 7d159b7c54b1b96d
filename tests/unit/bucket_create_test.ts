// The replicated bucket's create retry (src/nats/bucket.ts): a create answered
// "no suitable peers for placement" (a peer a new or restarting cluster has
// not counted yet) is tried again within its deadline, as a timed-out one is;
// an R1 bucket, or any other refusal, fails at once.
import assert from "node:assert/strict";
import { JetStreamApiError, type JetStreamClient } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import { openBucket } from "../../src/nats/bucket.ts";
import { resolveOptions } from "../../src/nats/options.ts";

const unplaced = () => new JetStreamApiError({ code: 500, err_code: 10005, description: "no suitable peers for placement" });
const kv = {} as KV;
const js = {} as JetStreamClient;

Deno.test("bucket create: 'no suitable peers for placement' is retried within the deadline on a replicated bucket, not on R1", async () => {
  const opts = resolveOptions({ servers: "ws://127.0.0.1:1", job: "j", replicas: 3, opTimeoutMs: 1000 });
  let calls = 0;
  const got = await openBucket(js, opts, () => (++calls < 3 ? Promise.reject(unplaced()) : Promise.resolve(kv)));
  assert.equal(got, kv);
  assert.equal(calls, 3, "two refusals, then the create that lands");
  const r1 = resolveOptions({ servers: "ws://127.0.0.1:1", job: "j", opTimeoutMs: 1000 });
  calls = 0;
  await assert.rejects(() => openBucket(js, r1, () => (calls++, Promise.reject(unplaced()))), /no suitable peers/);
  assert.equal(calls, 1, "an R1 bucket has no peers to wait for");
  calls = 0;
  const other = new JetStreamApiError({ code: 400, err_code: 10052, description: "invalid stream config" });
  await assert.rejects(() => openBucket(js, opts, () => (calls++, Promise.reject(other))), /invalid stream config/);
  assert.equal(calls, 1, "another refusal is not retried");
});
