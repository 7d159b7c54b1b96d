// The second round of hardening scenarios again on a real nats-server over WebSocket.
import { NatsServer } from "../helpers/nats_server.ts";
import { natsBackend } from "./nats_backend.ts";
import { hardeningIIScenarios } from "./hardening_ii.ts";

const server = await NatsServer.startForModule();
hardeningIIScenarios(natsBackend(server));
