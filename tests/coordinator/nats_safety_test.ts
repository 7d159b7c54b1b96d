// The safety scenarios again on a real nats-server over WebSocket.
import { NatsServer } from "../helpers/nats_server.ts";
import { natsBackend } from "./nats_backend.ts";
import { safetyScenarios } from "./safety.ts";

const server = await NatsServer.startForModule();
safetyScenarios(natsBackend(server));
