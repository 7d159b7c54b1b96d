// The job lifecycle scenarios (issue 41) again on a real nats-server over WebSocket.
import { NatsServer } from "../helpers/nats_server.ts";
import { natsBackend } from "./nats_backend.ts";
import { lifecycleScenarios } from "./lifecycle.ts";

const server = await NatsServer.startForModule();
lifecycleScenarios(natsBackend(server));
