// The differential test (differential.ts) on nats-server: a fresh bucket per run.
import { NatsStore } from "../../nats.ts";
import { NatsServer } from "../helpers/nats_server.ts";
import { differential } from "./differential.ts";

let server: NatsServer | undefined;
differential("NatsStore", async (i) => {
  server ??= await NatsServer.start();
  return await NatsStore.connect({ servers: server.wsUrl, job: `diff${i}`, opTimeoutMs: 2000 });
}, async () => await server?.[Symbol.asyncDispose]());
