// The assignment scenarios again on a real nats-server over WebSocket.
import { NatsServer } from "../helpers/nats_server.ts";
import { assignmentScenarios } from "./assignment.ts";
import { natsBackend } from "./nats_backend.ts";

const server = await NatsServer.start();
assignmentScenarios(natsBackend(server));
Deno.test({ name: "nats: stop server", fn: () => server[Symbol.asyncDispose](), sanitizeOps: false, sanitizeResources: false });
