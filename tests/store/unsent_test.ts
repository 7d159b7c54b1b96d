// Issue 33 item 7: a write nobody received ("no responders": no stream
// answered, as while a replicated bucket elects its stream leader or before
// a fresh one's leader is known across a busy cluster) is sent again within
// the operation timeout, never reported as an outage at once nor treated as
// maybe landed. Reproduced on one server by taking the bucket's stream away
// and bringing it back while writes are on their way.
import assert from "node:assert/strict";
import { wsconnect } from "@nats-io/nats-core";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { jetstream } from "@nats-io/jetstream";
import { StoreUnavailableError } from "../../mod.ts";
import { NatsStore } from "../../nats.ts";
import { NatsServer } from "../helpers/nats_server.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

Deno.test({
  name: "unsent writes: a create and an update answered 'no responders' are sent again until the stream answers, within opTimeoutMs",
  ...opts,
  fn: async () => {
    await using server = await NatsServer.start();
    await using store = await NatsStore.connect({ servers: server.wsUrl, job: "unsent", opTimeoutMs: 4000 });
    const nc = await wsconnect({ servers: server.wsUrl });
    try {
      const jsm = await jetstreamManager(nc);
      const first = await store.create("k", "v1");
      assert.ok(first.ok);
      const info = await jsm.streams.info(`KV_${store.bucket}`);
      const recreate = async () => {
        await new Promise((r) => setTimeout(r, 400));
        await new Kvm(jetstream(nc)).create("splitlease_unsent", { history: 1, maxValueSize: info.config.max_msg_size });
      };
      // The stream goes away: every write now reaches nobody.
      await jsm.streams.delete(`KV_${store.bucket}`);
      const [created] = await Promise.all([store.create("a", "x"), recreate()]);
      assert.ok(created.ok, "the create landed once the stream was back");
      await jsm.streams.delete(`KV_${store.bucket}`);
      const [updated] = await Promise.all([store.update("a", "y", created.revision).catch((e) => e), recreate()]);
      // The stream came back empty: the CAS at the old revision is a conflict, an answer, not an outage.
      assert.deepEqual(updated, { ok: false, conflict: true });
      // Nobody answers for longer than the timeout: an outage, reported as such.
      await jsm.streams.delete(`KV_${store.bucket}`);
      const started = Date.now();
      await assert.rejects(() => store.create("b", "z"), (e) => e instanceof StoreUnavailableError && /no stream answered/.test(e.message));
      assert.ok(Date.now() - started >= 2000, "tried until the op timeout, less the reserve for a re-read");
    } finally {
      await nc.close();
    }
  },
});
