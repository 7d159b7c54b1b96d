// The third round of hardening scenarios again on a real nats-server over WebSocket.
import { NatsServer } from "../helpers/nats_server.ts";
import { natsBackend } from "./nats_backend.ts";
import { hardeningIIIScenarios, leaderCostScenarios } from "./hardening_iii.ts";

const server = await NatsServer.startForModule();
hardeningIIIScenarios(natsBackend(server));
leaderCostScenarios(natsBackend(server));
