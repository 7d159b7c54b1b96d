/**
 * A connection that never answers: the server stops while the path to it
 * starts black-holing traffic, so one of the client's reconnects lands on a
 * connection that takes the handshake and never answers it, and stays so
 * after the server is back and the path heals (what a half-open
 * TCP connection, or a balancer that accepted and never forwarded, does).
 * node-redis alone waits on that handshake for ever: every command times
 * out, the watch never catches up, and a graceful close never returns. The
 * store must notice and reconnect, and close in bounded time.
 */
import assert from "node:assert/strict";
import { RedisStore } from "../../adapters/redis.ts";
import { silentLogger } from "../../host.ts";
import { RedisServer } from "../helpers/redis_server.ts";
import { casAfterFault, whenAvailable } from "../helpers/after_fault.ts";
import { withTimeout } from "../helpers/deadline.ts";
import { LazyProxy, untilReady } from "../store/outage.ts";
import { take } from "../store/conformance.ts";

Deno.test({
  name: "redis: a reconnect that lands on a connection that never answers is recycled: writes and the watch resume once the path heals, and close is bounded",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    await using server = await RedisServer.start();
    await using proxy = new LazyProxy(() => server.port);
    const store = await RedisStore.connect({ url: `redis://127.0.0.1:${proxy.port}`, job: "halfopen", opTimeoutMs: 1000, logger: silentLogger });
    try {
      const a = await store.create("a", "a1");
      assert.ok(a.ok);
      const it = store.watch("")[Symbol.asyncIterator]();
      assert.deepEqual((await untilReady(it)).map((e) => e.type), ["put", "ready"]);
      // The server goes away; while the client redials, the path starts black-holing, so one of its
      // attempts lands on a connection that takes its handshake and never answers; then the server
      // is back and the path heals (a connection accepted meanwhile stays dead, as a half-open one does).
      await server.stop();
      await new Promise((r) => setTimeout(r, 200));
      proxy.isolate();
      await new Promise((r) => setTimeout(r, 2500));
      await server.restart();
      proxy.rejoin();
      // Asked as a user would right after the fault: the outage waited out (within the helper's deadline).
      const rev = await casAfterFault(store, "a", "a2", a.revision);
      assert.equal((await whenAvailable("a read after the fault", () => store.get("a")))?.value, "a2");
      // The watch catches up too (a restarted server: a reset and a snapshot holding a2).
      const last = new Map<string, string>();
      const deadline = Date.now() + 15_000;
      while (last.get("a") !== "a2" && Date.now() < deadline) {
        for (const e of await take(it, 1, Math.max(1, deadline - Date.now()))) if (e.type === "put") last.set(e.key, e.value);
      }
      assert.equal(last.get("a"), "a2", `the watch delivered a2 (at ${rev})`);
      // A close while the path black-holes again returns in bounded time.
      await server.stop();
      proxy.isolate();
      await new Promise((r) => setTimeout(r, 1500));
    } finally {
      await withTimeout(store.close(), 10_000, "store.close() on a connection that never answers");
    }
  },
});
