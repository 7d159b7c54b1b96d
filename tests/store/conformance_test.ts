import { MemoryStore } from "../../store.ts";
import { NatsStore } from "../../nats.ts";
import { NatsServer } from "../helpers/nats_server.ts";
import { conformance } from "./conformance.ts";
import { denoWebSocket } from "../../adapters/deno_websocket.ts";

conformance("MemoryStore", () => Promise.resolve(new MemoryStore()));

// The Deno adapter's WebSocket client (TCP_NODELAY) must behave exactly like Deno's own (which
// tests/nats/backend_test.ts runs through every suite of the kit). One server for the file (torn
// down when the module unloads: teardown is not a test); a fresh bucket (job) per test, so
// revisions start at 0.
let server: Promise<NatsServer> | undefined;
let jobs = 0;
conformance("NatsStore (denoWebSocket)", async () => {
  server ??= NatsServer.startForModule();
  return await NatsStore.connect({ servers: (await server).wsUrl, job: `conf${++jobs}`, opTimeoutMs: 1000, wsFactory: denoWebSocket });
});
