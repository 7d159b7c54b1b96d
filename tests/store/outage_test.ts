/**
 * Outages over WebSocket: Deno's own client and the Nagle-free client of the
 * Deno adapter (the same suite runs over TCP in tests/tcp/outage_tcp_test.ts).
 */
import { denoWebSocket } from "../../adapters/deno_websocket.ts";
import { outageSuite } from "./outage.ts";

outageSuite({ label: "", listener: "ws", options: {} });
outageSuite({ label: " (denoWebSocket)", listener: "ws", options: { wsFactory: denoWebSocket } });
