import { MemoryStore } from "../../store.ts";
import { NatsStore } from "../../nats.ts";
import { NatsServer } from "../helpers/nats_server.ts";
import { conformance } from "./conformance.ts";

conformance("MemoryStore", () => Promise.resolve(new MemoryStore()));

// One server for the file; a fresh bucket (job) per test, so revisions start at 0.
let server: NatsServer | undefined;
let jobs = 0;
conformance("NatsStore", async () => {
  server ??= await NatsServer.start();
  return await NatsStore.connect({ servers: server.wsUrl, job: `conf${++jobs}`, opTimeoutMs: 1000 });
});

Deno.test({
  name: "NatsStore conformance: stop the server",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    await server?.[Symbol.asyncDispose]();
  },
});
