/**
 * Outages over the Nagle-free WebSocket client of the Deno adapter (Deno's
 * own client goes through every outage case in tests/nats/backend_test.ts,
 * TCP in tests/tcp/outage_tcp_test.ts).
 */
import { denoWebSocket } from "../../adapters/deno_websocket.ts";
import { outageSuite } from "./outage.ts";

outageSuite({ label: " (denoWebSocket)", listener: "ws", options: { wsFactory: denoWebSocket } });
