/**
 * Regression: on nats-server 2.9 a key updated while a watch's consumer is
 * being set up leaves a superseded message counted as pending, so no replay
 * message ever carries `pending === 0`. The watch must still announce
 * `ready` (it asks the consumer), or `SplitCoordinator.join` hangs.
 */
import assert from "node:assert/strict";
import { NatsStore } from "../../nats.ts";
import { NatsServer } from "../helpers/nats_server.ts";

Deno.test({
  name: "watch: ready arrives even when the key is updated while the consumer starts (stale pending on 2.9)",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using server = await NatsServer.start();
    const watcher = await NatsStore.connect({ servers: server.wsUrl, job: "replay" });
    const writer = await NatsStore.connect({ servers: server.wsUrl, job: "replay" });
    try {
      const late: number[] = [];
      for (let i = 0; i < 20; i++) {
        const key = `m${i}.x`;
        const r = await writer.create(key, "0");
        assert.ok(r.ok);
        const w = watcher.watch(`m${i}.`);
        let stop = false;
        const updating = (async () => {
          let rev = r.revision;
          for (let j = 1; j <= 20 && !stop; j++) {
            const u = await writer.update(key, String(j), rev);
            if (u.ok) rev = u.revision;
            await new Promise((res) => setTimeout(res, j < 5 ? 0 : 5));
          }
        })();
        const t0 = performance.now();
        let timer: ReturnType<typeof setTimeout> | undefined;
        const ready = await Promise.race([
          (async () => {
            for await (const e of w) if (e.type === "ready") return true;
            return false;
          })(),
          new Promise<boolean>((res) => (timer = setTimeout(() => res(false), 2000))),
        ]);
        clearTimeout(timer);
        stop = true;
        await updating;
        await w.stop();
        if (!ready) late.push(i);
        else assert.ok(performance.now() - t0 < 2000);
      }
      assert.deepEqual(late, [], "every watch became ready within 2 s");
    } finally {
      await watcher.close();
      await writer.close();
    }
  },
});

Deno.test({
  name: "list: ends even when its prefix is updated while the consumer starts (stale pending on 2.9)",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    // Without the end read from the stream, 2 listings in 20 failed here for
    // want of progress: no message ever came with nothing pending.
    await using server = await NatsServer.start();
    const reader = await NatsStore.connect({ servers: server.wsUrl, job: "listing", opTimeoutMs: 1500 });
    const writer = await NatsStore.connect({ servers: server.wsUrl, job: "listing" });
    try {
      const failed: string[] = [];
      for (let i = 0; i < 20; i++) {
        const key = `m${i}.x`;
        const r = await writer.create(key, "0");
        assert.ok(r.ok);
        let stop = false;
        const updating = (async () => {
          let rev = r.revision;
          for (let j = 1; j <= 20 && !stop; j++) {
            const u = await writer.update(key, String(j), rev);
            if (u.ok) rev = u.revision;
            await new Promise((res) => setTimeout(res, j < 5 ? 0 : 5));
          }
        })();
        try {
          const entries = await reader.list(`m${i}.`);
          assert.deepEqual(entries.map((e) => e.key), [key]);
        } catch (e) {
          failed.push(`${i}: ${e}`);
        } finally {
          stop = true;
          await updating;
        }
      }
      assert.deepEqual(failed, [], "every listing ended");
    } finally {
      await reader.close();
      await writer.close();
    }
  },
});
