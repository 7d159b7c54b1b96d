/**
 * A 3-node cluster with an R1 bucket: the store survives losing (kill or
 * network partition) the node it is connected to when that node does not
 * hold the bucket; when the bucket's node dies, ops fail with
 * StoreUnavailableError and resume when it returns. `replicas: 3` is refused
 * on 2.9.10 with the CAS-bug explanation (run on Debian's 2.9.10 when `npm
 * test` has it beside the current release: `NATS_SERVER_COMPAT`). Replicated
 * buckets on current servers are tested in tests/cluster/.
 */
import assert from "node:assert/strict";
import { wsconnect } from "@nats-io/nats-core";
import { jetstreamManager } from "@nats-io/jetstream";
import { SplitleaseError, StoreUnavailableError, type WatchEvent } from "../../store.ts";
import { NatsStore } from "../../nats.ts";
import { COMPAT_NATS_SERVER, NATS_SERVER, NatsCluster, TcpProxy } from "../helpers/nats_server.ts";
import { askUntil, casAfterFault, whenAvailable } from "../helpers/after_fault.ts";
import { take } from "./conformance.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const OP_TIMEOUT = 1000;

/**
 * Server name of the node holding the bucket's stream. Asked right after the
 * bucket's creation on a cluster that just started: the question is asked
 * again until a leader is named (a first run, beside another, saw the one
 * stream-info request time out).
 */
async function holder(urls: string[], job: string): Promise<string> {
  return (await askUntil(`the node holding bucket splitlease_${job}`, async () => {
    const nc = await wsconnect({ servers: urls });
    try {
      const jsm = await jetstreamManager(nc);
      return (await jsm.streams.info(`KV_splitlease_${job}`)).cluster?.leader || undefined;
    } finally {
      await nc.close();
    }
  }, undefined, 30_000))!;
}

/** Retries `fn` until it succeeds or `ms` pass; only StoreUnavailableError is retried. */
function eventually<T>(fn: () => Promise<T>, ms = 15_000): Promise<T> {
  return whenAvailable("a store operation after the fault", fn, ms);
}

/**
 * Setup, not under test: a store that has just connected to the nodes
 * without the bucket may see no responder for it until the cluster has
 * spread the stream's interest (past the op timeout in a loaded full run),
 * so the create is retried; one that reported an outage may have landed.
 * Returns the key's revision.
 */
async function createEventually(store: NatsStore, key: string, value: string): Promise<number> {
  const c = await eventually(() => store.create(key, value));
  if (c.ok) return c.revision;
  const cur = await store.get(key);
  assert.equal(cur?.value, value, "conflict, and the key does not hold our value");
  return cur!.revision;
}

/**
 * Setup, not under test: creates job `job`'s bucket on a cluster that just
 * started. Each node's health check passed, but a loaded full run still saw
 * the bucket's creation time out at 3 s (a meta leader settling), so the
 * connect is retried while the store is unavailable; a retry opens the
 * bucket a timed-out attempt created.
 */
async function createBucket(urls: string[], job: string): Promise<void> {
  const setup = await eventually(() => NatsStore.connect({ servers: urls, job, opTimeoutMs: 3000 }), 30_000);
  await setup.close();
}

/**
 * What a caller does with an ambiguous write: retry the CAS while the store
 * is unavailable, and on a conflict re-read, since an earlier attempt that
 * reported StoreUnavailableError may have landed after all.
 */
function casEventually(store: NatsStore, key: string, value: string, rev: number): Promise<number> {
  return casAfterFault(store, key, value, rev);
}

async function untilReady(it: AsyncIterator<WatchEvent>, ms = 15_000): Promise<WatchEvent[]> {
  const out: WatchEvent[] = [];
  const deadline = Date.now() + ms;
  while (out.at(-1)?.type !== "ready") out.push(...(await take(it, 1, deadline - Date.now())));
  return out;
}

/** Reads until a reset, then the fresh snapshot; returns its puts as an object. */
async function resumedSnapshot(it: AsyncIterator<WatchEvent>): Promise<Record<string, string>> {
  const deadline = Date.now() + 15_000;
  while ((await take(it, 1, deadline - Date.now()))[0].type !== "reset");
  const snap = await untilReady(it);
  return Object.fromEntries(snap.flatMap((e) => (e.type === "put" ? [[e.key, e.value]] : [])));
}

Deno.test({
  name: "cluster: failover when the connected node (not the bucket's) is killed or partitioned",
  ...opts,
  fn: async () => {
    await using cluster = await NatsCluster.start(3, { pingInterval: "500ms" });
    // Create the bucket once, then see where it landed.
    await createBucket(cluster.wsUrls, "fo");
    const bucketNode = await holder(cluster.wsUrls, "fo");
    const others = cluster.nodes.filter((n) => n.name !== bucketNode);

    // 1. Partition: the client reaches others[0] through a proxy that we blackhole.
    await using proxy = new TcpProxy(others[0].wsPort);
    // Fail over to the other non-bucket node first, so step 2 can kill it.
    const servers = [proxy.wsUrl, others[1].wsUrl, cluster.node(bucketNode).wsUrl];
    await using store = await eventually(() =>
      NatsStore.connect({
        servers,
        job: "fo",
        opTimeoutMs: OP_TIMEOUT,
        pingIntervalMs: 500,
        noRandomize: true,
      })
    );
    assert.equal(store.server, `127.0.0.1:${proxy.port}`);
    const created = await createEventually(store, "k", "1");
    const it = store.watch("")[Symbol.asyncIterator]();
    await untilReady(it);

    proxy.blackhole();
    const t0 = Date.now();
    const rev2 = await casEventually(store, "k", "2", created);
    const failover = Date.now() - t0;
    assert.ok(failover < 8000, `failover took ${failover} ms`);
    assert.notEqual(store.server, `127.0.0.1:${proxy.port}`);
    assert.deepEqual(await resumedSnapshot(it), { k: "2" });
    console.log(`partition failover: ${failover} ms`);

    // 2. Kill the node we are connected to now (not the bucket's).
    proxy.restore();
    assert.equal(store.server, `127.0.0.1:${others[1].wsPort}`);
    {
      await others[1].kill();
      const t1 = Date.now();
      await casEventually(store, "k", "3", rev2);
      assert.ok(Date.now() - t1 < 8000, `failover took ${Date.now() - t1} ms`);
      assert.deepEqual(await resumedSnapshot(it), { k: "3" });
      console.log(`kill failover: ${Date.now() - t1} ms`);
    }
  },
});

Deno.test({
  name: "cluster: when the bucket's node dies, ops fail in time and resume when it returns",
  ...opts,
  fn: async () => {
    await using cluster = await NatsCluster.start(3, { pingInterval: "500ms" });
    await createBucket(cluster.wsUrls, "bn");
    const bucketNode = cluster.node(await holder(cluster.wsUrls, "bn"));
    const others = cluster.nodes.filter((n) => n !== bucketNode);
    await using store = await eventually(() =>
      NatsStore.connect({
        servers: others.map((n) => n.wsUrl),
        job: "bn",
        opTimeoutMs: OP_TIMEOUT,
        pingIntervalMs: 500,
      })
    );
    const created = await createEventually(store, "k", "1");
    const it = store.watch("")[Symbol.asyncIterator]();
    await untilReady(it);

    await bucketNode.kill();
    for (const op of [() => store.get("k"), () => store.update("k", "x", created), () => store.list("")]) {
      const t0 = Date.now();
      await assert.rejects(op(), StoreUnavailableError);
      assert.ok(Date.now() - t0 <= OP_TIMEOUT + 350, `took ${Date.now() - t0} ms`);
    }

    await bucketNode.restart();
    const cur = await eventually(() => store.get("k"), 20_000);
    assert.equal(cur?.value, "1");
    // Right after the bucket's node came back: its stream may still be recovering, as a user's write would find.
    const u = { revision: await casEventually(store, "k", "2", cur!.revision) };
    // The watch came back too (by itself, or with reset + snapshot): it shows the final state.
    const events: WatchEvent[] = [];
    while (!events.some((e) => e.type === "put" && e.value === "2")) events.push(...(await take(it, 1, 15_000)));
    const last = events.filter((e) => e.type === "put").at(-1);
    assert.deepEqual(last, { type: "put", key: "k", value: "2", revision: u.revision });
  },
});

/** A server older than 2.9.21 to run the refusal on: the compatibility one, or the main one when it is that old. */
const OLD_SERVER = COMPAT_NATS_SERVER ??
  (/v2\.9\.([0-9]|1[0-9]|20)\b/.test(new TextDecoder().decode(new Deno.Command(NATS_SERVER, { args: ["--version"] }).outputSync().stdout))
    ? NATS_SERVER
    : undefined);

Deno.test({
  name: "cluster: replicas: 3 on nats-server 2.9.10 is refused with the CAS bug named",
  ...opts,
  ignore: OLD_SERVER === undefined,
  fn: async () => {
    await using cluster = await NatsCluster.start(3, { bin: OLD_SERVER });
    assert.ok(/^2\.9\./.test(cluster.nodes[0].version), `runs on 2.9 (got ${cluster.nodes[0].version})`);
    await assert.rejects(
      NatsStore.connect({ servers: cluster.wsUrls, job: "r3", replicas: 3 }),
      (e) =>
        e instanceof SplitleaseError && e.code === "UNSUPPORTED_SERVER" && /nats-server#4320/.test(e.message) &&
        /2\.9\.21/.test(e.message),
    );
  },
});
