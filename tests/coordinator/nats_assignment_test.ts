// The assignment scenarios again on a real nats-server over WebSocket.
import { NatsServer } from "../helpers/nats_server.ts";
import { assignmentScenarios } from "./assignment.ts";
import { natsBackend } from "./nats_backend.ts";

const server = await NatsServer.startForModule();
assignmentScenarios(natsBackend(server));
