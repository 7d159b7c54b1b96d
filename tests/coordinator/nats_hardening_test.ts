// The hardening scenarios again on a real nats-server over WebSocket.
import { NatsServer } from "../helpers/nats_server.ts";
import { natsBackend } from "./nats_backend.ts";
import { hardeningScenarios } from "./hardening.ts";

const server = await NatsServer.startForModule();
hardeningScenarios(natsBackend(server));
