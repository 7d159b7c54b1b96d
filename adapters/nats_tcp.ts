/**
 * The TCP transport for the NATS store: `nats://` and `tls://` URLs, the
 * client port every NATS deployment has (most have no WebSocket listener),
 * through the maintained nats.js TCP transport (`@nats-io/transport-node`,
 * built on `node:net`). Runs on Node (22+), Bun and Deno (measured: the same
 * conformance, outage and fleet suites pass on all three); edge platforms
 * reach NATS over WebSocket only.
 *
 * `tls://` requires TLS (a server that offers none is refused at once);
 * `nats://` upgrades to TLS when the server requires it. nats-core keeps one
 * transport per process: while a store is connected over TCP, connecting
 * another over WebSocket throws `INVALID_CONFIG` (and the other way round),
 * and nothing else in the process may call nats-core's `wsconnect`.
 *
 * @example
 * ```ts
 * import { NatsStore } from "@splitlease/splitlease/nats";
 * import { tcpTransport } from "@splitlease/splitlease/nats/tcp";
 * const store = await NatsStore.connect({
 *   servers: "nats://127.0.0.1:4222",
 *   job: "backfill",
 *   transport: tcpTransport(),
 * });
 * await store.close();
 * ```
 *
 * @module
 */
import { NatsConnectionImpl, setTransportFactory } from "@nats-io/transport-node";
import { NodeTransport, nodeResolveHost } from "@nats-io/transport-node/lib/node_transport.js";
import type { ConnectionOptions, NatsConnection } from "@nats-io/nats-core";
import { Socket } from "node:net";
import { SplitleaseError } from "../src/errors.ts";
import type { NatsListener } from "../src/nats/listener.ts";
import type { NatsTransport, TransportImpl } from "../src/nats/transport.ts";
import { hostOf, redactUrl } from "../src/util/urls.ts";

export type { NatsTransport } from "../src/nats/transport.ts";

/**
 * TLS settings of the TCP transport (nats.js's `TlsOptions`): PEM text or
 * file paths. The server's certificate is always verified.
 *
 * @example
 * ```ts
 * import type { TcpTlsOptions } from "@splitlease/splitlease/nats/tcp";
 * const mutual: TcpTlsOptions = { caFile: "/etc/nats/ca.pem", certFile: "/etc/nats/worker.pem", keyFile: "/etc/nats/worker-key.pem" };
 * ```
 */
export interface TcpTlsOptions {
  /** The CA certificate(s) that signed the server's certificate, as PEM text (default: the runtime's trusted roots). */
  ca?: string;
  /** Path of a PEM file with the CA certificate(s). */
  caFile?: string;
  /** A client certificate (PEM text), for servers that verify clients (mutual TLS). */
  cert?: string;
  /** Path of the client certificate's PEM file. */
  certFile?: string;
  /** The client certificate's private key (PEM text). */
  key?: string;
  /** Path of the private key's PEM file. */
  keyFile?: string;
  /** Start TLS before the server's INFO (the server's `handshake_first: true`). */
  handshakeFirst?: boolean;
}

/**
 * Options of {@linkcode tcpTransport}.
 *
 * @example
 * ```ts
 * import type { TcpTransportOptions } from "@splitlease/splitlease/nats/tcp";
 * const options: TcpTransportOptions = { tls: { caFile: "/etc/nats/ca.pem" } };
 * ```
 */
export interface TcpTransportOptions {
  /**
   * TLS settings. Given, TLS is required for every URL; without them only
   * `tls://` URLs require it (`nats://` upgrades when the server requires TLS).
   */
  tls?: TcpTlsOptions;
}

/** The client port's default when a URL names none. */
const NATS_PORT = 4222;
/** How long the probe waits for a listener to speak first (the NATS client port sends `INFO` at once). */
const SPEAK_FIRST_MS = 300;
/** Most bytes the probe reads. */
const PROBE_BYTES = 64 * 1024;

/**
 * The TCP transport for `NatsStore.connect` (its `transport` option):
 * `nats://host:port` and `tls://host:port` URLs.
 *
 * @example
 * ```ts
 * import { NatsStore } from "@splitlease/splitlease/nats";
 * import { tcpTransport } from "@splitlease/splitlease/nats/tcp";
 * const store = await NatsStore.connect({
 *   servers: ["tls://nats-1.example:4222", "tls://nats-2.example:4222"],
 *   job: "backfill",
 *   transport: tcpTransport({ tls: { caFile: "/etc/nats/ca.pem" } }),
 * });
 * await store.close();
 * ```
 */
export function tcpTransport(options: TcpTransportOptions = {}): NatsTransport {
  const transport: TransportImpl = {
    name: "TCP",
    schemes: ["nats", "tls"],
    connect: (co) => connectTcp(co, options),
    identify: identifyTcpListener,
  };
  return transport;
}

/**
 * nats.js's TCP transport, closing the socket of an attempt that never got
 * the server's `INFO`. In 3.4.0 `close()` returns early when the transport
 * never connected, so an attempt that timed out against a silent listener
 * (an HTTP port, a frozen server) kept its socket open: a failed `connect`
 * to a WebSocket port left the process unable to exit.
 */
class ClosingNodeTransport extends NodeTransport {
  override close(err?: Error): Promise<void> {
    if (!this.connected && !this.done) {
      this.done = true;
      this.socket?.destroy();
    }
    return super.close(err);
  }
}

/**
 * transport-node's `connect`, with {@linkcode ClosingNodeTransport}: sets
 * nats-core's process-wide transport factory, then connects.
 */
function connectNode(co: ConnectionOptions): Promise<NatsConnection> {
  setTransportFactory({ factory: () => new ClosingNodeTransport(), dnsResolveFn: nodeResolveHost });
  return NatsConnectionImpl.connect(co);
}

/**
 * The transport for a list of server URLs, for programs configured by URL
 * (`NATS_URL`): the TCP transport for `nats://` and `tls://` URLs,
 * `undefined` (WebSocket, the default) for anything else, which
 * `NatsStore.connect` then checks.
 *
 * @example
 * ```ts
 * import { NatsStore } from "@splitlease/splitlease/nats";
 * import { transportFor } from "@splitlease/splitlease/nats/tcp";
 * const servers = (Deno.env.get("NATS_URL") ?? "nats://127.0.0.1:4222").split(",");
 * const store = await NatsStore.connect({ servers, job: "backfill", transport: transportFor(servers) });
 * await store.close();
 * ```
 */
export function transportFor(servers: string | readonly string[]): NatsTransport | undefined {
  const list = typeof servers === "string" ? [servers] : servers;
  return list.some((s) => /^\s*(nats|tls):\/\//i.test(s)) ? tcpTransport() : undefined;
}

async function connectTcp(co: ConnectionOptions, options: TcpTransportOptions): Promise<NatsConnection> {
  const servers = (Array.isArray(co.servers) ? co.servers : [co.servers ?? ""]).map(String);
  const requireTls = options.tls !== undefined || servers.some((s) => /^tls:/i.test(s));
  try {
    return await connectNode({ ...co, ...(requireTls ? { tls: { ...options.tls } } : {}) });
  } catch (e) {
    // nats-core's checkOptions: we asked for TLS and the server offers none. No retry fixes that.
    if (requireTls && /does not support 'tls'/.test(String((e as Error)?.message))) {
      throw new SplitleaseError(
        "INVALID_CONFIG",
        `NatsStore: the server at ${servers.map(redactUrl).join(", ")} offers no TLS, and ${
          options.tls ? "the transport's tls option requires it" : "tls:// requires it"
        }: use nats:// for a plain-text server, or enable TLS on the server (a tls { } block in its config)`,
        { cause: e },
      );
    }
    throw e;
  }
}

/**
 * What listens at a `nats://`/`tls://` URL, read off the wire: the NATS
 * client port speaks first (`INFO {...}`), so it is never taken for a wrong
 * one; a silent listener is sent `GET /varz` and an HTTP answer names it
 * (nats-server's WebSocket port answers 400 with `Sec-WebSocket-Version`,
 * its monitoring port the `/varz` JSON). Undefined when nothing answered or
 * it could be right (a TLS-first server).
 */
function identifyTcpListener(url: string, signal: AbortSignal): Promise<NatsListener | undefined> {
  const hostPort = hostOf(url);
  const m = /^\[?([^\]]*?)\]?(?::(\d+))?$/.exec(hostPort);
  const host = m?.[1] || hostPort;
  const port = Number(m?.[2] ?? NATS_PORT);
  return new Promise((resolve) => {
    const socket = new Socket();
    let data = "";
    let asked = false;
    let done = false;
    const finish = (found: NatsListener | undefined) => {
      if (done) return;
      done = true;
      clearTimeout(silence);
      signal.removeEventListener("abort", onAbort);
      socket.destroy();
      resolve(found);
    };
    const onAbort = () => finish(undefined);
    const ask = () => {
      if (asked || done) return;
      asked = true;
      socket.write(`GET /varz HTTP/1.0\r\nHost: ${hostPort}\r\nAccept: application/json\r\n\r\n`);
    };
    let silence: ReturnType<typeof setTimeout> | undefined;
    if (signal.aborted) return resolve(undefined);
    signal.addEventListener("abort", onAbort);
    socket.setNoDelay(true);
    socket.on("error", () => finish(asked ? classifyHttp(data) : undefined));
    socket.on("close", () => finish(asked ? classifyHttp(data) : undefined));
    socket.on("data", (chunk: Uint8Array) => {
      data += new TextDecoder().decode(chunk);
      if (!asked) {
        // It spoke first: the NATS client port (INFO), or something we cannot name.
        if (data.length >= 5 || /\r?\n/.test(data)) finish(data.startsWith("HTTP/") ? classifyHttp(data) : undefined);
        return;
      }
      if (data.length >= PROBE_BYTES) finish(classifyHttp(data));
    });
    socket.connect(port, host, () => {
      silence = setTimeout(ask, SPEAK_FIRST_MS);
    });
  });
}

/** The listener an HTTP answer comes from, or undefined when it is not HTTP. */
function classifyHttp(text: string): NatsListener | undefined {
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(text);
  if (!status) return undefined;
  const split = text.indexOf("\r\n\r\n");
  const head = (split < 0 ? text : text.slice(0, split)).toLowerCase();
  const body = split < 0 ? "" : text.slice(split + 4);
  if (/\r\nsec-websocket-version:/.test(head)) return { kind: "websocket" };
  if (status[1] === "200" && /"server_id"\s*:/.test(body)) return { kind: "monitoring" };
  return { kind: "http", status: Number(status[1]) };
}
