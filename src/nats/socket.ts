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
type Kind = "open" | "message" | "error" | "close";

/**
 * The subset of `WebSocket` the nats-core transport uses, closing eagerly.
 *
 * It also keeps every event the transport has no handler for yet. The
 * transport awaits the factory before it sets its handlers, and a socket can
 * fail in that gap: Node's WebSocket (undici) refuses a blocked port such as
 * `ws://127.0.0.1:1` without touching the network and fires `error` and
 * `close` from the same tick. Dropped, those events left the transport's
 * connect promise pending forever, and its close waiting for a close event
 * that had already passed: `NatsStore.connect` never settled on Node 24 (issue
 * 21, item 4). Kept events are delivered, in order, once the handlers are set.
 */
class PromptCloseSocket {
  #ws: WebSocket;
  #handlers: Record<Kind, Handler> = { open: null, message: null, error: null, close: null };
  /** Events that arrived while their handler was unset, in arrival order. */
  #pending: { kind: Kind; ev: unknown }[] = [];
  #flushQueued = false;
  #opened = false;
  #errored = false;
  #closeFired = false;

  constructor(ws: WebSocket) {
    this.#ws = ws;
    ws.onopen = (ev) => {
      this.#opened = true;
      this.#emit("open", ev);
    };
    ws.onmessage = (ev) => this.#emit("message", ev);
    ws.onerror = (ev) => this.#fireError(ev);
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
    this.#set("open", h);
  }
  get onopen(): Handler {
    return this.#handlers.open;
  }
  set onmessage(h: Handler) {
    this.#set("message", h);
  }
  get onmessage(): Handler {
    return this.#handlers.message;
  }
  set onerror(h: Handler) {
    this.#set("error", h);
  }
  get onerror(): Handler {
    return this.#handlers.error;
  }
  set onclose(h: Handler) {
    this.#set("close", h);
  }
  get onclose(): Handler {
    return this.#handlers.close;
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

  #set(kind: Kind, h: Handler): void {
    this.#handlers[kind] = h;
    // The transport sets its four handlers in one go: deliver what waited once it has.
    if (h && this.#pending.length > 0 && !this.#flushQueued) {
      this.#flushQueued = true;
      queueMicrotask(() => {
        this.#flushQueued = false;
        const waiting = this.#pending.splice(0);
        for (const { kind, ev } of waiting) this.#deliver(kind, ev);
      });
    }
  }

  #emit(kind: Kind, ev: unknown): void {
    // Behind events still waiting for their handlers: keep the order.
    if (this.#pending.length > 0 || this.#flushQueued) this.#pending.push({ kind, ev });
    else this.#deliver(kind, ev);
  }

  #deliver(kind: Kind, ev: unknown): void {
    const h = this.#handlers[kind];
    if (h) h(ev);
    else if (!this.#closeFired || kind === "close") this.#pending.push({ kind, ev });
  }

  #fireError(ev: unknown): void {
    if (this.#closeFired) return;
    this.#errored = true;
    // Node's ErrorEvent has an empty message: the transport's error would say nothing.
    const message = (ev as { message?: unknown })?.message;
    this.#emit("error", typeof message === "string" && message !== "" ? ev : {
      type: "error",
      message: `WebSocket connection to ${this.#ws.url} failed`,
    });
  }

  #fireClose(ev: unknown): void {
    if (this.#closeFired) return;
    // A socket that closes before it opened has failed, whether or not the
    // runtime said so with an error event: the transport only gives up on a
    // connection attempt on an error.
    if (!this.#opened && !this.#errored) {
      this.#fireError({ type: "error", message: `WebSocket connection to ${this.#ws.url} closed before it opened` });
    }
    this.#closeFired = true;
    this.#ws.onopen = null;
    this.#ws.onmessage = null;
    this.#ws.onerror = null;
    this.#emit("close", ev);
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
