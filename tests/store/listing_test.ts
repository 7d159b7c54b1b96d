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
/** Far below the time the whole listing takes here (about 0.45 s for 30k keys on this machine in 2026-12, 1.2 s when first written; 90k leave a margin of three), well above the gap between two messages. */
const OP_TIMEOUT_MS = 400;

Deno.test({
  name: "list: a listing that streams for longer than opTimeoutMs completes, every key once",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using server = await NatsServer.start();
    const writer = await NatsStore.connect({ servers: server.wsUrl, job: "listing", opTimeoutMs: 5000 });
    const reader = await NatsStore.connect({ servers: server.wsUrl, job: "listing", opTimeoutMs: OP_TIMEOUT_MS });
    try {
      const value = "x".repeat(200);
      for (let i = 0; i < KEYS; i += 500) {
        const rs = await Promise.all(Array.from({ length: 500 }, (_, j) => writer.create(`split.k${String(i + j).padStart(6, "0")}`, value)));
        assert.ok(rs.every((r) => r.ok));
      }
      const t0 = performance.now();
      const all = await reader.list("split.");
      const ms = performance.now() - t0;
      assert.equal(all.length, KEYS);
      assert.equal(new Set(all.map((e) => e.key)).size, KEYS);
      console.log(`listed ${KEYS} keys in ${ms.toFixed(0)} ms with opTimeoutMs ${OP_TIMEOUT_MS}`);
      if (ms <= OP_TIMEOUT_MS) console.warn(`the listing took only ${ms.toFixed(0)} ms: this machine is too fast for it to show the progress bound`);
    } finally {
      await reader.close();
      await writer.close();
    }
  },
});
