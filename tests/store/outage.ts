/**
 * The outage suite, run on every backend (`backendSuites`) and, for NATS,
 * over each transport (outage_test.ts: WebSocket; tests/tcp/outage_tcp_test.ts:
 * TCP): a single server paused (frozen, connections open), stopped then
 * restarted, and stripped of its client connections. Every op fails with
 * StoreUnavailableError within opTimeoutMs plus a small margin; afterwards
 * the same store works again and a live watch resumes with `reset` and a
 * fresh snapshot after a restart, and without losing a change after its
 * connections were killed.
 *
 * A backend takes part through a {@linkcode FaultServer}: a server of the
 * test's own that its harness can stop, pause and strip of connections.
 */
import assert from "node:assert/strict";
import { type Store, StoreUnavailableError, type WatchEvent } from "../../store.ts";
import { NatsStore, type NatsStoreOptions } from "../../nats.ts";
import { delay, NatsServer, TcpProxy } from "../helpers/nats_server.ts";
import { casAfterFault, whenAvailable } from "../helpers/after_fault.ts";
import { take } from "./conformance.ts";

/**
 * A server of one backend under a test's control. Stores of `connect(..,
 * true)` go through a TCP proxy of its own, which `isolate` black-holes
 * (the store hears nothing and is told nothing) while other clients reach
 * the server.
 */
export interface FaultServer extends AsyncDisposable {
  /** A store of `job` on this server, through the server's proxy when `proxied`. */
  connect(job: string, opTimeoutMs: number, proxied?: boolean): Promise<Store>;
  /** Freezes the server (SIGSTOP): connections stay open, nothing answers. */
  pause(): Promise<void>;
  /** Resumes a paused server. */
  resume(): Promise<void>;
  /** Stops the server; its data survives for `restart()`. */
  stop(): Promise<void>;
  /** Starts it again on the same port and data. */
  restart(): Promise<void>;
  /** The server (or, for a backend that cannot, the proxy in front of it) drops every client connection. */
  killConnections(): Promise<void>;
  /** Proxied stores stop hearing the server, without any connection closing. */
  isolate(): void;
  /** Proxied stores reach the server again (connections opened meanwhile stay dead). */
  rejoin(): void;
}

/** How the outage suite reaches a backend: a name for the tests, and its fault servers. */
export interface FaultHarness {
  /** Shown in test names, e.g. "nats", "postgres", "nats (denoWebSocket)". */
  label: string;
  /** A fresh server of the test's own. */
  start(): Promise<FaultServer>;
  /**
   * Whether a write issued while the store is disconnected is held until the
   * connection is back and then sent (NATS, Redis: it was never sent, so it
   * cannot have landed), rather than failed at once (PostgreSQL: its reads
   * are retried within their deadline, its writes never).
   */
  holdsWrites: boolean;
}

/** How the NATS outage suite reaches a server: its listener and the store options that dial it. */
export interface Via {
  /** Shown in test names, e.g. " (denoWebSocket)". */
  label: string;
  /** The listener: "ws" (WebSocket port, ws://) or "nats" (client port, nats://). */
  listener: "ws" | "nats";
  /** Extra NatsStore options (wsFactory, transport). */
  options: Partial<NatsStoreOptions>;
}

/** A proxy in front of `port`, made when first asked for: what every harness's `isolate` and `rejoin` drive. */
export class LazyProxy implements AsyncDisposable {
  #port: () => number;
  #proxy: TcpProxy | undefined;
  constructor(port: () => number) {
    this.#port = port;
  }
  /** The proxy's port. */
  get port(): number {
    return (this.#proxy ??= new TcpProxy(this.#port())).port;
  }
  isolate(): void {
    this.#proxy?.blackhole();
  }
  rejoin(): void {
    this.#proxy?.restore();
  }
  dropAll(): void {
    this.#proxy?.dropAll();
  }
  async [Symbol.asyncDispose](): Promise<void> {
    await this.#proxy?.[Symbol.asyncDispose]();
  }
}

/** The NATS fault harness over `via` (a nats-server of the test's own; connections killed through the proxy). */
export function natsFaults(via: Via): FaultHarness {
  return {
    label: `nats${via.label}`,
    holdsWrites: true,
    async start(): Promise<FaultServer> {
      const server = await NatsServer.start();
      const port = () => (via.listener === "ws" ? server.wsPort : server.clientPort);
      const proxy = new LazyProxy(port);
      const scheme = via.listener === "ws" ? "ws" : "nats";
      return {
        connect: (job, opTimeoutMs, proxied) =>
          NatsStore.connect({ servers: `${scheme}://127.0.0.1:${proxied ? proxy.port : port()}`, job, opTimeoutMs, ...via.options }),
        pause: () => server.pause(),
        resume: () => Promise.resolve(server.resume()),
        stop: () => server.stop(),
        restart: () => server.restart(),
        // nats-server cannot be told to drop its clients: the proxy drops them, as a reset would.
        killConnections: () => Promise.resolve(proxy.dropAll()),
        isolate: () => proxy.isolate(),
        rejoin: () => proxy.rejoin(),
        async [Symbol.asyncDispose]() {
          await proxy[Symbol.asyncDispose]();
          await server[Symbol.asyncDispose]();
        },
      };
    },
  };
}

const OP_TIMEOUT = 1000;
const MARGIN = 350;
const opts = { sanitizeOps: false, sanitizeResources: false };

/** Runs every op at once; each must fail with StoreUnavailableError in time. */
async function assertAllUnavailable(store: Store, revs: Record<string, number>): Promise<void> {
  const ops: [string, () => Promise<unknown>][] = [
    ["create", () => store.create("fresh", "x")],
    ["update", () => store.update("a", "a-lost", revs.a)],
    ["delete", () => store.delete("b", revs.b)],
    ["delete", () => store.delete("c")],
    ["get", () => store.get("a")],
    ["list", () => store.list("")],
  ];
  const results = await Promise.all(ops.map(async ([op, fn]) => {
    const t0 = Date.now();
    try {
      const r = await fn();
      return { op, ms: Date.now() - t0, error: undefined, result: r };
    } catch (error) {
      return { op, ms: Date.now() - t0, error, result: undefined };
    }
  }));
  for (const r of results) {
    assert.ok(
      r.error instanceof StoreUnavailableError,
      `${r.op}: expected StoreUnavailableError, got ${r.error ?? JSON.stringify(r.result)}`,
    );
    assert.equal(r.error.op, r.op);
    assert.equal(r.error.timeoutMs, OP_TIMEOUT);
    assert.ok(r.ms <= OP_TIMEOUT + MARGIN, `${r.op} took ${r.ms} ms`);
  }
}

/** Reads events until `ready`. */
export async function untilReady(it: AsyncIterator<WatchEvent>, ms = 10_000): Promise<WatchEvent[]> {
  const out: WatchEvent[] = [];
  const deadline = Date.now() + ms;
  while (out.at(-1)?.type !== "ready") out.push(...(await take(it, 1, deadline - Date.now())));
  return out;
}

async function seed(store: Store): Promise<Record<string, number>> {
  const revs: Record<string, number> = {};
  for (const k of ["a", "b", "c"]) {
    const r = await store.create(k, `${k}1`);
    assert.ok(r.ok);
    revs[k] = r.revision;
  }
  return revs;
}

/** Registers the outage cases of NATS over `via` (a transport's listener and options). */
export function outageSuite(via: Via): void {
  outageCases(natsFaults(via));
}

/** Registers the outage cases on the servers `h` starts. */
export function outageCases(h: FaultHarness): void {
  Deno.test({
    name: `outage ${h.label}: paused server fails every op in time, then the store works again`,
    ...opts,
    fn: async () => {
      await using server = await h.start();
      await using store = await server.connect("pause", OP_TIMEOUT);
      const revs = await seed(store);
      await server.pause();
      try {
        await assertAllUnavailable(store, revs);
      } finally {
        await server.resume();
      }
      // The frozen server handles the queued requests on resume, and a read
      // can overtake the queued write of "a-lost" (it timed out for us, but
      // may still land: a maybe-landed write). So, as a user's code would:
      // re-read once the store answers again, and on a conflict the key must
      // hold exactly that late write (or our own write that reported the
      // outage and landed); then carry on.
      const a = await whenAvailable("the read after the resume", () => store.get("a"));
      assert.ok(a && (a.value === "a1" || a.value === "a-lost"));
      const rev = await casAfterFault(store, "a", "a2", a.revision, (v) => v === "a-lost");
      const now = await whenAvailable("the read of the write", () => store.get("a"));
      assert.deepEqual(now, { key: "a", value: "a2", revision: rev });
    },
  });

  Deno.test({
    name: `outage ${h.label}: stopped server fails every op in time; after restart the store and its watch resume`,
    ...opts,
    fn: async () => {
      await using server = await h.start();
      // Our store goes through the proxy, so it can stay cut off while another client writes.
      await using store = await server.connect("restart", OP_TIMEOUT, true);
      await using writer = await server.connect("restart", OP_TIMEOUT);
      const revs = await seed(store);
      const w = store.watch("");
      const it = w[Symbol.asyncIterator]();
      assert.deepEqual((await untilReady(it)).map((e) => e.type), ["put", "put", "put", "ready"]);

      await server.stop();
      await delay(100);
      await assertAllUnavailable(store, revs);

      server.isolate();
      await server.restart();
      // The other client reconnects and changes state while ours is still cut off.
      const b2 = { revision: await casAfterFault(writer, "b", "b2", revs.b) };
      assert.deepEqual(await whenAvailable("the writer's delete", () => writer.delete("c")), { ok: true });
      server.rejoin();

      // Our watch: reset, then a fresh snapshot with every key's latest value.
      const events: WatchEvent[] = [];
      while (events.at(-1)?.type !== "reset") events.push(...(await take(it, 1, 15_000)));
      const snapshot = await untilReady(it, 15_000);
      const fresh = new Map(snapshot.flatMap((e) => (e.type === "put" ? [[e.key, e.value] as const] : [])));
      assert.deepEqual(Object.fromEntries(fresh), { a: "a1", b: "b2" }, JSON.stringify(snapshot));

      // Live again, same store object (asked as a user would, right after the fault: the outage waited out).
      const u = { revision: await casAfterFault(store, "a", "a2", revs.a) };
      const live = await take(it, 1, 10_000);
      assert.deepEqual(live, [{ type: "put", key: "a", value: "a2", revision: u.revision }]);
      assert.deepEqual(await whenAvailable("the listing after the fault", () => store.list("")), [
        { key: "a", value: "a2", revision: u.revision },
        { key: "b", value: "b2", revision: b2.revision },
      ]);
    },
  });

  Deno.test({
    name: `outage ${h.label}: connections killed by the server: writes resume, and the watch misses no change`,
    ...opts,
    fn: async () => {
      await using server = await h.start();
      await using store = await server.connect("killed", OP_TIMEOUT, true);
      await using writer = await server.connect("killed", OP_TIMEOUT);
      const revs = await seed(store);
      const w = store.watch("");
      const it = w[Symbol.asyncIterator]();
      assert.deepEqual((await untilReady(it)).map((e) => e.type), ["put", "put", "put", "ready"]);
      await server.killConnections();
      // While ours reconnect, another client changes a key.
      const b2 = await casAfterFault(writer, "b", "b2", revs.b);
      const a2 = await casAfterFault(store, "a", "a2", revs.a);
      // A watch that resumed hands out both changes; one that started over hands out a reset and a
      // snapshot holding them. Either way, each key's last value arrives.
      const last = new Map<string, string>();
      const deadline = Date.now() + 15_000;
      while (last.get("a") !== "a2" || last.get("b") !== "b2") {
        const [e] = await take(it, 1, Math.max(1, deadline - Date.now()));
        if (e.type === "put") last.set(e.key, e.value);
      }
      assert.deepEqual(await whenAvailable("the listing after the kill", () => store.list("")), [
        { key: "a", value: "a2", revision: a2 },
        { key: "b", value: "b2", revision: b2 },
        { key: "c", value: "c1", revision: revs.c },
      ]);
    },
  });

  Deno.test({
    name: `outage ${h.label}: ops issued while the server is down wait for the reconnect and succeed within their op timeout`,
    ...opts,
    fn: async () => {
      await using server = await h.start();
      const LONG = 8000;
      await using store = await server.connect("comeback", LONG);
      const revs = await seed(store);
      await server.stop();
      await delay(200);
      // Issued while disconnected: not sent (a request sent now would be lost), held until the connection is back
      // (a backend that fails a write at once still retries its reads).
      const t0 = Date.now();
      const pending = Promise.all([store.get("a"), h.holdsWrites ? store.update("b", "b2", revs.b) : undefined, store.list("")]);
      pending.catch(() => {}); // a failure is this test's, awaited below
      await delay(300);
      await server.restart();
      const [a, b, all] = await pending;
      const ms = Date.now() - t0;
      assert.equal(a?.value, "a1");
      if (h.holdsWrites) assert.ok(b?.ok, "the update landed");
      assert.deepEqual(all.map((e) => e.key), ["a", "b", "c"]);
      assert.ok(ms < LONG / 2, `answered ${ms} ms after they were issued: woken by the reconnect, not by their deadline`);
    },
  });
}
