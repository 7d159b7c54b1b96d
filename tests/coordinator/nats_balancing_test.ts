// The balancing scenarios again on a real nats-server over WebSocket.
import { NatsServer } from "../helpers/nats_server.ts";
import { balancingScenarios } from "./balancing.ts";
import { natsBackend } from "./nats_backend.ts";

const server = await NatsServer.startForModule();
balancingScenarios(natsBackend(server));
