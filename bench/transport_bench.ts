/**
 * Deno's WebSocket client against the adapter's `denoWebSocket`
 * (TCP_NODELAY), same server, same run: latency of a burst of 50 concurrent
 * KV updates sent after an idle pause (the shape of a drain's releases or a
 * leader's seeds) and the CAS rate with 100 updates kept in flight.
 *
 *   npm run bench -- transport
 *
 * Deno's own client writes a frame's header and payload separately once the
 * payload passes ~1 KiB and leaves Nagle's algorithm on, so such a burst
 * waits for the server's delayed acknowledgement (~40 ms on Linux).
 */
import { NatsStore } from "../nats.ts";
import { denoWebSocket } from "../adapters/deno_websocket.ts";
import { NatsServer } from "../tests/helpers/nats_server.ts";
import { result } from "./_common.ts";

const BURST = 50, IN_FLIGHT = 100, RATE_MS = Number(Deno.env.get("BENCH_MS") ?? 2000), ROUNDS = 5;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function measure(server: NatsServer, label: string, wsFactory?: typeof denoWebSocket) {
  const store = await NatsStore.connect({ servers: server.wsUrl, job: `transport_${label}`, ...(wsFactory ? { wsFactory } : {}) });
  try {
    const revs = new Map<string, number>();
    for (let i = 0; i < IN_FLIGHT; i++) {
      const r = await store.create(`split.k${i}`, "x".repeat(100));
      if (!r.ok) throw new Error("create conflicted");
      revs.set(`split.k${i}`, r.revision);
    }
    const update = async (k: string) => {
      const r = await store.update(k, "y".repeat(100), revs.get(k)!);
      if (!r.ok) throw new Error("update conflicted");
      revs.set(k, r.revision);
    };
    const bursts: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      await sleep(300);
      const t0 = performance.now();
      await Promise.all([...revs.keys()].slice(0, BURST).map(update));
      bursts.push(performance.now() - t0);
    }
    let n = 0;
    const t0 = performance.now(), end = t0 + RATE_MS;
    await Promise.all([...revs.keys()].map(async (k) => {
      while (performance.now() < end) {
        await update(k);
        n++;
      }
    }));
    const rate = n / ((performance.now() - t0) / 1000);
    console.log(`  ${label}: burst of ${BURST} p50 ${median(bursts).toFixed(1)} ms (${bursts.map((b) => b.toFixed(1)).join(", ")}), ${Math.round(rate)} CAS/s at ${IN_FLIGHT} in flight`);
    return { burst: median(bursts), rate };
  } finally {
    await store.close();
  }
}

await using server = await NatsServer.start();
const builtin = await measure(server, "builtin");
const nodelay = await measure(server, "denoWebSocket", denoWebSocket);
result({
  bench: "transport",
  metric: `Deno: ${BURST} concurrent updates after idle, p50 ms: denoWebSocket ÷ Deno's WebSocket`,
  value: `${nodelay.burst.toFixed(1)} vs ${builtin.burst.toFixed(1)} ms`,
  ratio: +(nodelay.burst / builtin.burst).toFixed(3),
  target: "< 1",
});
result({
  bench: "transport",
  metric: `Deno: CAS/s at ${IN_FLIGHT} in flight: denoWebSocket ÷ Deno's WebSocket`,
  value: `${Math.round(nodelay.rate)} vs ${Math.round(builtin.rate)}/s`,
  ratio: +(nodelay.rate / builtin.rate).toFixed(2),
  target: "> 1",
});
