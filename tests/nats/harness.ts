// The NATS backend as the kit's suites reach it (tests/store/backend_suites.ts):
// one nats-server for the module, a fresh bucket (job) per store, values
// planted with a raw KV client.
import { wsconnect } from "@nats-io/nats-core";
import { Kvm } from "@nats-io/kv";
import { denoWebSocket } from "../../adapters/deno_websocket.ts";
import { NatsStore } from "../../nats.ts";
import { NatsServer } from "../helpers/nats_server.ts";
import type { BackendHarness } from "../store/backend_suites.ts";
import { REAL_TIMINGS, realBackend } from "../coordinator/real_backend.ts";
import { natsFaults } from "../store/outage.ts";

let server: Promise<NatsServer> | undefined;
const shared = () => (server ??= NatsServer.startForModule());
let jobs = 0;

/** The NATS harness: stores over WebSocket on a server of the module's own. */
export const natsHarness: BackendHarness = {
  id: "nats",
  store: async (opTimeoutMs = 1000) => await NatsStore.connect({ servers: (await shared()).wsUrl, job: `kit${++jobs}`, opTimeoutMs }),
  scenarios: () =>
    // As a Deno worker connects (OPERATIONS, "wsFactory"): Deno's own WebSocket
    // client leaves Nagle's algorithm on, and a write after an unanswered one
    // (a flow-control reply) then waits ~40 ms for the server's delayed ack.
    realBackend("nats", async (job) =>
      NatsStore.connect({ servers: [(await shared()).wsUrl], job, opTimeoutMs: REAL_TIMINGS.opTimeoutMs, wsFactory: denoWebSocket })),
  faults: natsFaults({ label: "", listener: "ws", options: {} }),
  async plant(store, key, value) {
    const nc = await wsconnect({ servers: (await shared()).wsUrl });
    try {
      const kv = await new Kvm(nc).open((store as NatsStore).bucket);
      await kv.put(key, value);
    } finally {
      await nc.close();
    }
  },
};
