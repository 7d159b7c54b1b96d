/**
 * A NatsStore listing is bounded by progress, not by one op timeout for the
 * whole call (issue 9: a leader's recount of 10k splits used to time out
 * under load and depose it). A listing that takes several op timeouts to
 * stream completes; a stalled one still fails.
 */
import assert from "node:assert/strict";
import { NatsStore } from "../../nats.ts";
import { NatsServer } from "../helpers/nats_server.ts";

const KEYS = 90_000;
/**
 * The reader's op timeout: a quarter of what one listing of the bucket took
 * on this machine in this run (a fixed 400 ms stopped showing the bound once
 * 90k keys listed in less on a quiet machine), never below 100 ms, well
 * above the gap between two messages.
 */
const FLOOR_MS = 100;

Deno.test({
  name: "list: a listing that streams for longer than opTimeoutMs completes, every key once",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using server = await NatsServer.start();
    const writer = await NatsStore.connect({ servers: server.wsUrl, job: "listing", opTimeoutMs: 5000 });
    let reader: NatsStore | undefined;
    try {
      const value = "x".repeat(200);
      for (let i = 0; i < KEYS; i += 500) {
        const rs = await Promise.all(Array.from({ length: 500 }, (_, j) => writer.create(`split.k${String(i + j).padStart(6, "0")}`, value)));
        assert.ok(rs.every((r) => r.ok));
      }
      const t0 = performance.now();
      assert.equal((await writer.list("split.")).length, KEYS);
      const opTimeoutMs = Math.max(FLOOR_MS, Math.round((performance.now() - t0) / 4));
      reader = await NatsStore.connect({ servers: server.wsUrl, job: "listing", opTimeoutMs });
      const t1 = performance.now();
      const all = await reader.list("split.");
      const ms = performance.now() - t1;
      assert.equal(all.length, KEYS);
      assert.equal(new Set(all.map((e) => e.key)).size, KEYS);
      console.log(`listed ${KEYS} keys in ${ms.toFixed(0)} ms with opTimeoutMs ${opTimeoutMs}`);
      if (ms <= opTimeoutMs) console.warn(`the listing took only ${ms.toFixed(0)} ms: this machine is too fast for it to show the progress bound`);
    } finally {
      await reader?.close();
      await writer.close();
    }
  },
});
