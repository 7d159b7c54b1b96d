// The NATS backend for the shared coordinator scenarios: one nats-server per
// test file, a fresh bucket (job) per fleet, real time.
import { NatsStore } from "../../nats.ts";
import { denoWebSocket } from "../../adapters/deno.ts";
import { type Store, StoreUnavailableError } from "../../mod.ts";
import type { NatsServer } from "../helpers/nats_server.ts";
import { type Backend, Fleet, RealDriver, type Timings } from "./fleet.ts";

/** Real-time timings: short, but inside every config rule. */
export const NATS_TIMINGS: Timings = {
  leaseMs: 1000,
  opTimeoutMs: 400,
  drainDeadlineMs: 500,
  replanIntervalMs: 1000,
  retryBackoffMs: 50,
  retryBackoffMaxMs: 400,
};

let seq = 0;

/**
 * The fleet's first store, which creates its bucket: setting up, not under
 * test, so an outage here (a busy server creating the bucket past the
 * scenario's 400 ms op timeout) is waited out for up to 5 s.
 */
async function setUp(open: () => Promise<Store>): Promise<Store> {
  const until = Date.now() + 5000;
  for (;;) {
    try {
      return await open();
    } catch (e) {
      if (!(e instanceof StoreUnavailableError) || Date.now() >= until) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** A real-time backend: a fresh job per fleet, on stores `connect(job)` opens (another process's connection each). */
export function realBackend(name: string, connect: (job: string) => Promise<Store>, timings: Timings = NATS_TIMINGS): Backend {
  return {
    name,
    realtime: true,
    async fleet(wrap?: (s: Store) => Store) {
      const job = `t${Date.now().toString(36)}${seq++}`;
      const store = await setUp(() => connect(job));
      const f = new Fleet(wrap ? wrap(store) : store, new RealDriver());
      f.job = job;
      f.timings = timings;
      (f as Fleet & { raw: Store }).raw = store;
      if (wrap) f.onDispose.push(() => store.close());
      return f;
    },
    async extraStore(f: Fleet) {
      const s = await connect(f.job);
      f.onDispose.push(() => s.close());
      return s;
    },
  };
}

export function natsBackend(server: NatsServer): Backend {
  // As a Deno worker connects (OPERATIONS, "wsFactory"): Deno's own WebSocket
  // client leaves Nagle's algorithm on, and a write after an unanswered one
  // (a flow-control reply) then waits ~40 ms for the server's delayed ack.
  return realBackend(
    "nats",
    (job) => NatsStore.connect({ servers: [server.wsUrl], job, opTimeoutMs: NATS_TIMINGS.opTimeoutMs, wsFactory: denoWebSocket }),
  );
}
