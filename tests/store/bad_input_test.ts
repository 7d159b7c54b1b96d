/**
 * A value planted by hand (another tool, a bug, an operator) that is not a
 * valid record: the store hands the string back untouched, and decoding it
 * with the record schema for its key reports InvalidRecordError naming the
 * key, for point reads, listings and watches alike.
 */
import assert from "node:assert/strict";
import { wsconnect } from "@nats-io/nats-core";
import { Kvm } from "@nats-io/kv";
import { InvalidRecordError } from "../../admin.ts";
import { NatsStore } from "../../nats.ts";
import { decodeRecord, schemaForKey } from "../../src/records.ts";
import { NatsServer } from "../helpers/nats_server.ts";
import { take } from "./conformance.ts";

function decode(key: string, value: string): unknown {
  return decodeRecord(key, value, schemaForKey(key)!);
}

Deno.test({
  name: "bad input: non-JSON and wrong-shape values planted by hand are InvalidRecordError naming the key",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    await using server = await NatsServer.start();
    await using store = await NatsStore.connect({ servers: server.wsUrl, job: "bad", opTimeoutMs: 1000 });
    // Plant values with a raw KV client, bypassing splitlease entirely.
    const nc = await wsconnect({ servers: server.wsUrl });
    try {
      const kv = await new Kvm(nc).open("splitlease_bad");
      await kv.put("split.garbage", "{not json");
      await kv.put("plan", JSON.stringify({ v: 2, term: "three" }));
    } finally {
      await nc.close();
    }

    const g = await store.get("split.garbage");
    assert.equal(g?.value, "{not json");
    assert.throws(() => decode("split.garbage", g!.value), (e) =>
      e instanceof InvalidRecordError && e.key === "split.garbage" && e.code === "INVALID_RECORD" &&
      e.issues.length === 0 && /not JSON/.test(e.message));

    const [plan] = await store.list("plan");
    assert.throws(() => decode(plan.key, plan.value), (e) =>
      e instanceof InvalidRecordError && e.key === "plan" &&
      e.issues.some((i) => i.path.join(".") === "term") && /Invalid record at key "plan"/.test(e.message));

    const w = store.watch("split.");
    const [ev] = await take(w[Symbol.asyncIterator](), 1);
    assert.ok(ev.type === "put");
    assert.throws(() => decode(ev.key, ev.value), (e) => e instanceof InvalidRecordError && e.key === "split.garbage");
    await w.stop();
  },
});
