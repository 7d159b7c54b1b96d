// The WebSocket transport the benches use: on Deno the adapter's Nagle-free
// client (adapters/deno_websocket.ts), as a Deno deployment should; with
// BENCH_DENO_WS=builtin, Deno's own WebSocket (its bursts stall ~40 ms).
import type { WebSocketFactory } from "../nats.ts";

type G = { Deno?: { env: { get(k: string): string | undefined } } };

/** Which client a Deno process uses: "nodelay", "builtin", or "runtime" off Deno. */
export function wsTransport(): "nodelay" | "builtin" | "runtime" {
  const d = (globalThis as G).Deno;
  if (!d) return "runtime";
  return d.env.get("BENCH_DENO_WS") === "builtin" ? "builtin" : "nodelay";
}

/** `{ wsFactory }` for NatsStore.connect / wsconnect, or nothing. */
export async function natsTransport(): Promise<{ wsFactory?: WebSocketFactory }> {
  if (wsTransport() !== "nodelay") return {};
  return { wsFactory: (await import("../adapters/deno_websocket.ts")).denoWebSocket };
}
