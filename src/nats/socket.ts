/**
 * A WebSocket wrapper that closes promptly. The nats-core WebSocket transport
 * waits for the socket's buffered bytes to drain and for the close handshake
 * before it reconnects; on a blackholed connection neither ever happens, so
 * the client hangs until TCP gives up (20 s and more). The wrapped socket
 * reports nothing buffered and fires `onclose` as soon as the client closes
 * it, so failover starts at once: measured with nats-server 2.9.10 and
 * nats-core 3.4.0, a client whose connection was blackholed failed over in
 * about 5 s with the wrapper and only after the TCP connection died (20 s
 * and more) without it. The TCP transport does not have this problem.
 *
 * @module
 */
import type { ConnectionOptions, WsSocketFactory } from "@nats-io/nats-core";
import type { WebSocketFactory } from "./options.ts";

type Handler = ((ev: any) => void) | null;

/** The subset of `WebSocket` the nats-core transport uses, closing eagerly. */
class PromptCloseSocket {
  #ws: WebSocket;
  #onclose: Handler = null;
  #closeFired = false;

  constructor(ws: WebSocket) {
    this.#ws = ws;
    ws.onclose = (ev) => this.#fireClose(ev);
  }

  get binaryType(): BinaryType {
    return this.#ws.binaryType;
  }
  set binaryType(t: BinaryType) {
    this.#ws.binaryType = t;
  }
  get readyState(): number {
    return this.#ws.readyState;
  }
  get url(): string {
    return this.#ws.url;
  }
  /** Always 0: never wait for bytes a dead peer will not take. */
  get bufferedAmount(): number {
    return 0;
  }
  set onopen(h: Handler) {
    this.#ws.onopen = h;
  }
  get onopen(): Handler {
    return this.#ws.onopen as Handler;
  }
  set onmessage(h: Handler) {
    this.#ws.onmessage = h;
  }
  get onmessage(): Handler {
    return this.#ws.onmessage as Handler;
  }
  set onerror(h: Handler) {
    this.#ws.onerror = h;
  }
  get onerror(): Handler {
    return this.#ws.onerror as Handler;
  }
  set onclose(h: Handler) {
    this.#onclose = h;
  }
  get onclose(): Handler {
    return this.#onclose;
  }

  send(data: ArrayBufferLike | Uint8Array | string): void {
    this.#ws.send(data as ArrayBuffer);
  }

  close(code?: number, reason?: string): void {
    try {
      this.#ws.close(code, reason);
    } catch { /* already closing */ }
    // Do not wait for the close handshake: a blackholed peer never answers.
    queueMicrotask(() => this.#fireClose({ wasClean: true, code: code ?? 1000, reason: "" }));
  }

  #fireClose(ev: unknown): void {
    if (this.#closeFired) return;
    this.#closeFired = true;
    this.#ws.onopen = null;
    this.#ws.onmessage = null;
    this.#ws.onerror = null;
    const h = this.#onclose;
    if (h) h(ev);
  }
}

/**
 * Wraps `factory` (or the global `WebSocket`) so every socket closes
 * promptly. Used for every connection of the NATS store.
 */
export function promptCloseFactory(factory?: WebSocketFactory): WsSocketFactory {
  return async (url: string, opts: ConnectionOptions) => {
    let socket: WebSocket;
    let encrypted: boolean;
    if (factory) {
      ({ socket, encrypted } = await factory(url, opts));
    } else {
      if (typeof WebSocket !== "function") {
        throw new Error("no global WebSocket in this runtime: pass the `wsFactory` option");
      }
      socket = new WebSocket(url);
      encrypted = url.startsWith("wss://");
    }
    return { socket: new PromptCloseSocket(socket) as unknown as WebSocket, encrypted };
  };
}
