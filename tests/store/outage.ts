/**
 * The outage suite, run over each transport (outage_test.ts: WebSocket;
 * tests/tcp/outage_tcp_test.ts: TCP): a single server paused (frozen,
 * connections open) and stopped then restarted. Every op fails with
 * StoreUnavailableError within opTimeoutMs plus a small margin; afterwards
 * the same store works again and a live watch resumes with `reset` and a
 * fresh snapshot.
 */
import assert from "node:assert/strict";
import { StoreUnavailableError, type WatchEvent } from "../../store.ts";
import { NatsStore, type NatsStoreOptions } from "../../nats.ts";
import { delay, NatsServer, TcpProxy } from "../helpers/nats_server.ts";
import { casAfterFault, whenAvailable } from "../helpers/after_fault.ts";
import { take } from "./conformance.ts";

/** How the suite reaches a server: its listener and the store options that dial it. */
export interface Via {
  /** Shown in test names, e.g. " (denoWebSocket)". */
  label: string;
  /** The listener: "ws" (WebSocket port, ws://) or "nats" (client port, nats://). */
  listener: "ws" | "nats";
  /** Extra NatsStore options (wsFactory, transport). */
  options: Partial<NatsStoreOptions>;
}

const OP_TIMEOUT = 1000;
const MARGIN = 350;
const opts = { sanitizeOps: false, sanitizeResources: false };

/** Runs every op at once; each must fail with StoreUnavailableError in time. */
async function assertAllUnavailable(store: NatsStore, revs: Record<string, number>): Promise<void> {
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
async function untilReady(it: AsyncIterator<WatchEvent>, ms = 10_000): Promise<WatchEvent[]> {
  const out: WatchEvent[] = [];
  const deadline = Date.now() + ms;
  while (out.at(-1)?.type !== "ready") out.push(...(await take(it, 1, deadline - Date.now())));
  return out;
}

async function seed(store: NatsStore): Promise<Record<string, number>> {
  const revs: Record<string, number> = {};
  for (const k of ["a", "b", "c"]) {
    const r = await store.create(k, `${k}1`);
    assert.ok(r.ok);
    revs[k] = r.revision;
  }
  return revs;
}

/** Registers the outage cases over `via`. */
export function outageSuite(via: Via): void {
  const url = (s: NatsServer) => (via.listener === "ws" ? s.wsUrl : s.clientUrl);
  const connect = (servers: string, job: string, opTimeoutMs: number) =>
    NatsStore.connect({ servers, job, opTimeoutMs, ...via.options });

  Deno.test({
    name: `outage${via.label}: paused server fails every op in time, then the store works again`,
    ...opts,
    fn: async () => {
      await using server = await NatsServer.start();
      await using store = await connect(url(server), "pause", OP_TIMEOUT);
      const revs = await seed(store);
      await server.pause();
      try {
        await assertAllUnavailable(store, revs);
      } finally {
        server.resume();
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
    name: `outage${via.label}: stopped server fails every op in time; after restart the store and its watch resume`,
    ...opts,
    fn: async () => {
      await using server = await NatsServer.start();
      // Our store goes through a proxy, so it can stay cut off while another client writes.
      await using proxy = new TcpProxy(via.listener === "ws" ? server.wsPort : server.clientPort);
      await using store = await connect(via.listener === "ws" ? proxy.wsUrl : proxy.natsUrl, "restart", OP_TIMEOUT);
      await using writer = await connect(url(server), "restart", OP_TIMEOUT);
      const revs = await seed(store);
      const w = store.watch("");
      const it = w[Symbol.asyncIterator]();
      assert.deepEqual((await untilReady(it)).map((e) => e.type), ["put", "put", "put", "ready"]);

      await server.stop();
      await delay(100);
      await assertAllUnavailable(store, revs);

      proxy.blackhole();
      await server.restart();
      // The other client reconnects and changes state while ours is still cut off.
      const b2 = { revision: await casAfterFault(writer, "b", "b2", revs.b) };
      assert.deepEqual(await whenAvailable("the writer's delete", () => writer.delete("c")), { ok: true });
      proxy.restore();

      // Our watch: reset, then a fresh snapshot with every key's latest value.
      const events: WatchEvent[] = [];
      while (events.at(-1)?.type !== "reset") events.push(...(await take(it, 1, 10_000)));
      const snapshot = await untilReady(it);
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
    name: `outage${via.label}: ops issued while the server is down wait for the reconnect and succeed within their op timeout`,
    ...opts,
    fn: async () => {
      await using server = await NatsServer.start();
      const LONG = 8000;
      await using store = await connect(url(server), "comeback", LONG);
      const revs = await seed(store);
      await server.stop();
      await delay(200);
      // Issued while disconnected: not sent (a request sent now would be lost), held until the connection is back.
      const t0 = Date.now();
      const pending = Promise.all([store.get("a"), store.update("b", "b2", revs.b), store.list("")]);
      pending.catch(() => {}); // a failure is this test's, awaited below
      await delay(300);
      await server.restart();
      const [a, b, all] = await pending;
      const ms = Date.now() - t0;
      assert.equal(a?.value, "a1");
      assert.ok(b.ok, "the update landed");
      assert.deepEqual(all.map((e) => e.key), ["a", "b", "c"]);
      assert.ok(ms < LONG / 2, `answered ${ms} ms after they were issued: woken by the reconnect, not by their deadline`);
    },
  });
}
