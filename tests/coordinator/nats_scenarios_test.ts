// The coordinator scenarios again on a real nats-server over WebSocket.
import { NatsServer } from "../helpers/nats_server.ts";
import { natsBackend } from "./nats_backend.ts";
import { coordinatorScenarios } from "./scenarios.ts";

const server = await NatsServer.startForModule();
coordinatorScenarios(natsBackend(server));
