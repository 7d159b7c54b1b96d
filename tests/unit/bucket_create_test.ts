// The replicated bucket's create retry (src/nats/bucket.ts): a create answered
// "no suitable peers for placement" (a peer a new or restarting cluster has
// not counted yet) is tried again within its deadline, as a timed-out one is;
// an R1 bucket, or any other refusal, fails at once.
import assert from "node:assert/strict";
import { JetStreamApiError, type JetStreamClient } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import { openBucket, readyJetStream } from "../../src/nats/bucket.ts";
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

Deno.test("jetstream ready: a cluster that answers JetStream's account info late (a timeout) or 'temporarily unavailable' is asked again within the deadline; a single server once", async () => {
  const { TimeoutError } = await import("@nats-io/nats-core");
  const jsm = {} as Awaited<ReturnType<JetStreamClient["jetstreamManager"]>>;
  const settling = [new TimeoutError(), new JetStreamApiError({ code: 503, err_code: 10008, description: "JetStream system temporarily unavailable" })];
  const fake = (fails: unknown[]) => {
    const calls = { n: 0 };
    const client = { jetstreamManager: () => (calls.n++ < fails.length ? Promise.reject(fails[calls.n - 1]) : Promise.resolve(jsm)) } as unknown as JetStreamClient;
    return { client, calls };
  };
  const r3 = resolveOptions({ servers: "ws://127.0.0.1:1", job: "j", replicas: 3, opTimeoutMs: 1000 });
  const a = fake(settling);
  assert.equal(await readyJetStream(a.client, r3, Date.now() + 10_000), jsm);
  assert.equal(a.calls.n, 3, "a timeout and a 10008, then the answer");
  const r1 = resolveOptions({ servers: "ws://127.0.0.1:1", job: "j", opTimeoutMs: 1000 });
  const b = fake(settling);
  await assert.rejects(() => readyJetStream(b.client, r1, Date.now() + 10_000), TimeoutError);
  assert.equal(b.calls.n, 1, "a single server answers once it takes connections: asked once");
  const c = fake([new TimeoutError(), new TimeoutError()]);
  await assert.rejects(() => readyJetStream(c.client, r3, Date.now() - 1), TimeoutError);
  assert.equal(c.calls.n, 1, "past the deadline: not asked again");
  const d = fake([new JetStreamApiError({ code: 400, err_code: 10039, description: "jetstream not enabled for account" })]);
  await assert.rejects(() => readyJetStream(d.client, r3, Date.now() + 10_000), /not enabled/);
  assert.equal(d.calls.n, 1, "another refusal is not retried");
});
