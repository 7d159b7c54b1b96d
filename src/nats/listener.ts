/**
 * What listens at a server URL when a connection to it fails or stalls: a
 * nats-server has three listeners (the client port speaking the NATS
 * protocol, the WebSocket port and the monitoring port, both HTTP), and a URL
 * pointed at the wrong one used to fail only after the whole connect timeout,
 * with a different client error on each runtime. Naming the listener turns
 * that into one clear configuration error, the same everywhere.
 *
 * @module
 */
import { hostOf, redactUrl } from "../util/urls.ts";
import { probeableUrl } from "../store/store_urls.ts";

/**
 * A listener found at a URL that does not speak the URL's protocol:
 * `nats` answered in something other than HTTP (the NATS client port speaks
 * first, `INFO {...}`), `websocket` is nats-server's WebSocket port (HTTP,
 * answering a plain request with 400 and `Sec-WebSocket-Version`),
 * `monitoring` its monitoring port (HTTP, serving `/varz`), `http` any other
 * HTTP server.
 */
export type NatsListener =
  | { kind: "nats" }
  | { kind: "websocket" }
  | { kind: "monitoring" }
  | { kind: "http"; status: number };

/** The import that provides the TCP transport, as messages name it. */
export const TCP_IMPORT = 'import { tcpTransport } from "@splitlease/splitlease/nats/tcp"';

/**
 * The configuration error's text for a URL that reached `found`, saying
 * which listener it is and which URL to give instead. One text per case, on
 * every runtime.
 *
 * @example
 * ```ts
 * import { wrongListenerMessage } from "./listener.ts";
 * wrongListenerMessage("nats://127.0.0.1:8080", { kind: "websocket" });
 * // "nats://127.0.0.1:8080 is a NATS WebSocket listener (HTTP), not the NATS client port: ..."
 * ```
 */
export function wrongListenerMessage(url: string, found: NatsListener): string {
  const shown = redactUrl(url);
  const host = hostOf(url);
  const ws = /^wss?:/i.test(url);
  const monitoring = "the NATS monitoring port (HTTP: it serves /varz and /healthz)";
  if (ws) {
    const instead = "Give the server's WebSocket port instead (the websocket { listen } block of its config), " +
      `or connect to its client port with nats://${found.kind === "nats" ? host : "<host>:<client port>"} through the TCP ` +
      `transport (${TCP_IMPORT}, then pass transport: tcpTransport(); Node, Bun and Deno)`;
    switch (found.kind) {
      case "nats":
        return `${shown} is not a WebSocket listener: it answered in a protocol other than HTTP, as the NATS client ` +
          `port does (it speaks the NATS protocol, for nats:// URLs). ${instead}`;
      case "monitoring":
        return `${shown} is ${monitoring}, not a WebSocket listener. ${instead}`;
      case "websocket":
        return `${shown} is a NATS WebSocket listener`;
      case "http":
        return `${shown} is an HTTP server that did not accept a WebSocket connection (HTTP ${found.status})`;
    }
  }
  switch (found.kind) {
    case "websocket":
      return `${shown} is a NATS WebSocket listener (HTTP), not the NATS client port: connect to it with ws://${host} ` +
        "(WebSocket is the default transport: drop the transport option), or give the server's client port " +
        "(listen in its config) for nats://";
    case "monitoring":
      return `${shown} is ${monitoring}, not the NATS client port: give the server's client port ` +
        "(listen in its config) for nats://, or its WebSocket port for ws://";
    case "http":
      return `${shown} is an HTTP server (it answered HTTP ${found.status}), not a NATS client port: ` +
        "give the server's client port (listen in its config) for nats://";
    case "nats":
      return `${shown} is a NATS client port`;
  }
}

/**
 * Error texts of the three runtimes' `fetch` when the peer answered with
 * something that is not HTTP (the NATS client port's `INFO` line): Node
 * (undici's HTTPParserError), Bun (`Malformed_HTTP_Response`) and Deno
 * (hyper's "invalid HTTP version parsed", or "received unexpected message
 * from connection" when the peer's `INFO` arrived before the request was
 * written: about one probe in four, measured on Deno 2.9). A refused or
 * silent port reads differently, so it is never taken for a wrong listener.
 */
const NOT_HTTP =
  /does not match the HTTP\/1\.1 protocol|Malformed_HTTP_Response|invalid HTTP version|received unexpected message from connection|HPE_INVALID_CONSTANT/i;

function answeredNotHttp(e: unknown): boolean {
  for (let c: unknown = e, depth = 0; c && depth < 5; c = (c as { cause?: unknown }).cause, depth++) {
    const err = c as { message?: unknown; code?: unknown; name?: unknown };
    if (NOT_HTTP.test(`${err.name ?? ""} ${err.code ?? ""} ${err.message ?? ""}`)) return true;
  }
  return false;
}

/** Whether a `/varz` body is nats-server's (its server id and version). */
function isVarz(body: string): boolean {
  try {
    const v = JSON.parse(body) as { server_id?: unknown; version?: unknown };
    return typeof v.server_id === "string" && typeof v.version === "string";
  } catch {
    return false;
  }
}

/**
 * Identifies the listener behind a `ws://`/`wss://` URL with Web APIs only
 * (`fetch` of `/varz` at the same host and port): the monitoring port
 * answers it with nats-server's JSON; a peer that answers, but not in HTTP,
 * is the NATS client port. Undefined when it may be right (a WebSocket
 * listener, a proxy answering HTTP) or nothing answered.
 *
 * @example
 * ```ts
 * import { identifyHttpListener } from "./listener.ts";
 * const found = await identifyHttpListener("ws://127.0.0.1:8080", AbortSignal.timeout(1000));
 * ```
 */
export async function identifyHttpListener(url: string, signal: AbortSignal): Promise<NatsListener | undefined> {
  const probe = `${/^wss:/i.test(url) ? "https" : "http"}://${hostOf(url)}/varz`;
  try {
    const r = await fetch(probe, { signal, redirect: "manual" });
    const body = await r.text();
    if (r.status === 200 && isVarz(body)) return { kind: "monitoring" };
    return undefined;
  } catch (e) {
    return !signal.aborted && answeredNotHttp(e) ? { kind: "nats" } : undefined;
  }
}

/** What nats-server's `/varz` says about its listeners (the fields used here). */
interface Varz {
  server_name?: unknown;
  port?: unknown;
  tls_required?: unknown;
  websocket?: { port?: unknown; no_tls?: unknown };
}

/**
 * Which nats-server listener answers at a URL no store takes (`http://`,
 * `https://`, a bare `host:port`), as a clause naming the URL to give
 * instead: the monitoring port (its `/varz` names the server's client and
 * WebSocket ports), a WebSocket listener (it answers a plain request 400
 * with `Sec-WebSocket-Version`), or, hedged, the client port (it answers,
 * but not in HTTP). Undefined for a URL of another scheme, when nothing
 * answers within `signal`, or when something else does. Web APIs only
 * (`fetch`), so it runs everywhere.
 *
 * @example
 * ```ts
 * import { pointMisdirectedUrl } from "./listener.ts";
 * const clause = await pointMisdirectedUrl("http://127.0.0.1:8222", AbortSignal.timeout(1000));
 * // "it is the monitoring port of nats-server n1: its client port is nats://127.0.0.1:4222, its WebSocket listener ws://127.0.0.1:8080"
 * ```
 */
export async function pointMisdirectedUrl(url: string, signal: AbortSignal): Promise<string | undefined> {
  if (!probeableUrl(url)) return undefined;
  const hostPort = hostOf(url.trim());
  const host = hostPort.replace(/:\d+$/, "");
  const secure = /^https:/i.test(url.trim());
  try {
    const r = await fetch(`${secure ? "https" : "http"}://${hostPort}/varz`, { signal, redirect: "manual" });
    const body = await r.text();
    if (r.headers.has("sec-websocket-version")) {
      return `it is a NATS WebSocket listener: give ${secure ? "wss" : "ws"}://${hostPort}`;
    }
    if (r.status !== 200 || !isVarz(body)) return undefined;
    const v = JSON.parse(body) as Varz;
    // A server without a configured name reports its id as its name: not worth showing.
    const name = typeof v.server_name === "string" && v.server_name !== (v as { server_id?: unknown }).server_id ? ` of nats-server ${v.server_name}` : "";
    const client = typeof v.port === "number" && v.port > 0 ? `${v.tls_required === true ? "tls" : "nats"}://${host}:${v.port}` : undefined;
    const wsPort = v.websocket?.port;
    const ws = typeof wsPort === "number" && wsPort > 0 ? `${v.websocket?.no_tls === true ? "ws" : "wss"}://${host}:${wsPort}` : undefined;
    const instead = [client && `its client port is ${client}`, ws && `its WebSocket listener ${ws}`].filter(Boolean).join(", ");
    return `it is the NATS monitoring port${name}, which takes no clients${instead ? `: ${instead}` : ""}`;
  } catch (e) {
    // Only a raw socket could read the INFO line; fetch sees a peer that speaks first, not in HTTP.
    return !signal.aborted && answeredNotHttp(e)
      ? `it answered in a protocol other than HTTP, as the NATS client port does: if it is one, give nats://${hostPort}`
      : undefined;
  }
}
