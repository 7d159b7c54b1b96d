// Worker process of bench/backfill_bench.ts (Deno): one splitlease worker
// (NatsStore over WebSocket + startWorker, every worker carrying the
// planner) or one consumer of a JetStream work queue (a shared durable pull
// consumer, one `next()` per free lane, explicit ack).
//
// Config: env BACKFILL (JSON, see Cfg). Protocol: JSON lines.
//   stdout: ready, started {id, at}, done {id, at}, error
//   stdin:  go (the planner may plan / consuming starts), exit
import { wsconnect } from "@nats-io/nats-core";
import { jetstream } from "@nats-io/jetstream";
import { SplitCoordinator } from "../src/coordinator/coordinator.ts";
import { silentLogger } from "../src/runtime/logger.ts";
import type { SplitSource } from "../src/runtime/source.ts";
import { startWorker } from "../src/runtime/worker.ts";
import { NatsStore } from "../nats.ts";
import { natsTransport } from "./_transport.ts";
import { eachLine } from "../tests/helpers/lines.ts";

interface Cfg {
  system: "splitlease" | "jetstream";
  id: string;
  natsUrl: string;
  /** Job / stream name of this run. */
  name: string;
  lanes: number;
  msPerRecord: number;
  /** Records per split, in plan order (split `b<i>` has sizes[i]). */
  sizes: number[];
  /** splitlease: whether each split's weight is its size. */
  weights: boolean;
}
const cfg: Cfg = JSON.parse(Deno.env.get("BACKFILL") ?? "{}");
/** Comparable across the processes of one machine (see bench/_procs.ts wallNow). */
const now = () => performance.timeOrigin + performance.now();
const emit = (o: Record<string, unknown>): void => console.log(JSON.stringify(o));
const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((r) => {
    const t = setTimeout(r, ms);
    signal?.addEventListener("abort", () => (clearTimeout(t), r()), { once: true });
  });

let go!: () => void;
const started = new Promise<void>((r) => (go = r));
const exit = async () => {
  await cleanup().catch(() => {});
  Deno.exit(0);
};
let cleanup = async (): Promise<void> => {};
void eachLine(Deno.stdin.readable, (line) => {
  const cmd = JSON.parse(line).cmd;
  if (cmd === "go") go();
  if (cmd === "exit") void exit();
}).then(() => exit());

try {
  if (cfg.system === "splitlease") {
    const store = await NatsStore.connect({ servers: cfg.natsUrl, job: cfg.name, opTimeoutMs: 2000, ...(await natsTransport()) });
    const source: SplitSource<{ records: number }> = {
      fingerprint: () => cfg.name,
      plan: async () => {
        await started; // plans for the whole fleet, once every process joined
        return {
          finality: "final" as const,
          splits: cfg.sizes.map((records, i) => ({ id: `b${i}`, descriptor: { records }, ...(cfg.weights ? { weight: records } : {}) })),
        };
      },
      async run(lane) {
        emit({ ev: "started", id: lane.splitId, at: now() });
        const ms = lane.descriptor.records * cfg.msPerRecord;
        const t0 = now();
        await sleep(ms, AbortSignal.any([lane.signal, lane.revokeSignal]));
        if (now() - t0 < ms - 1) return; // revoked or lost: released to its next owner
        await lane.complete({ watermark: lane.descriptor.records });
        emit({ ev: "done", id: lane.splitId, at: now() });
      },
    };
    const coord = await SplitCoordinator.join({
      store,
      job: cfg.name,
      instance: cfg.id,
      fingerprint: cfg.name,
      planner: (ctx) => source.plan(ctx),
      maxInFlight: cfg.lanes,
      runtime: "deno",
      logger: silentLogger,
    });
    const worker = startWorker({ coordinator: coord, source, maxInFlight: cfg.lanes, logger: silentLogger });
    cleanup = async () => {
      await worker.shutdown().catch(() => {});
      await store.close().catch(() => {});
    };
    emit({ ev: "ready" });
  } else {
    const nc = await wsconnect({ servers: cfg.natsUrl });
    const c = await jetstream(nc).consumers.get(cfg.name, "workers");
    cleanup = () => nc.close();
    emit({ ev: "ready" });
    await started;
    // One pull per free lane (no prefetch): the queue hands out messages in stream order.
    await Promise.all(Array.from({ length: cfg.lanes }, async () => {
      for (;;) {
        const m = await c.next({ expires: 5000 });
        if (!m) continue;
        const i = Number(new TextDecoder().decode(m.data));
        emit({ ev: "started", id: `b${i}`, at: now() });
        await sleep(cfg.sizes[i] * cfg.msPerRecord);
        m.ack();
        emit({ ev: "done", id: `b${i}`, at: now() });
      }
    }));
  }
} catch (e) {
  emit({ ev: "error", error: String(e) });
}
