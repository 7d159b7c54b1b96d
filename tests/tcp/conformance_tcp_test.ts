/**
 * The store conformance suite over the TCP transport (nats:// at the client
 * port): the same cases as over WebSocket (tests/store/conformance_test.ts).
 * A file of its own: nats-core keeps one transport per process, and Deno
 * runs each test file in an isolate of its own.
 */
import { NatsStore } from "../../nats.ts";
import { tcpTransport } from "../../adapters/nats_tcp.ts";
import { NatsServer } from "../helpers/nats_server.ts";
import { conformance } from "../store/conformance.ts";

let server: Promise<NatsServer> | undefined;
let jobs = 0;
const transport = tcpTransport();
conformance("NatsStore over TCP", async () => {
  server ??= NatsServer.startForModule();
  return await NatsStore.connect({ servers: (await server).clientUrl, job: `tcp${++jobs}`, opTimeoutMs: 1000, transport });
});

