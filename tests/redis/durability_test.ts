/**
 * What an acknowledged write survives on Redis, checked at connect and
 * measured: a server that can lose acknowledged writes on a restart is
 * refused unless the weaker mode is accepted by name; a primary with a
 * replica waits for it (`WAIT`) before it reports a write landed, and a
 * write the replica did not take in time is an outage, not a success;
 * every acknowledged write survives `kill -9` of a server with
 * `appendfsync always`, at its revision.
 */
import assert from "node:assert/strict";
import { RedisStore } from "../../adapters/redis.ts";
import { SplitleaseError, StoreUnavailableError, type WatchEvent } from "../../store.ts";
import { silentLogger } from "../../host.ts";
import { RedisServer } from "../helpers/redis_server.ts";
import { whenAvailable } from "../helpers/after_fault.ts";
import { take } from "../store/conformance.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

async function refusal(p: Promise<unknown>): Promise<string> {
  const e = await p.then(() => undefined, (e) => e);
  assert.ok(e instanceof SplitleaseError && e.code === "INVALID_CONFIG", `refused with INVALID_CONFIG, got ${e}`);
  return e.message;
}

Deno.test({
  name: "redis durability: appendonly no and appendfsync everysec are refused by default, and run only in the mode named for them",
  ...opts,
  fn: async () => {
    await using volatile = await RedisServer.start({ appendonly: "no" });
    const logged: Record<string, unknown>[] = [];
    const logger = (_level: string, msg: string, fields?: Record<string, unknown>) => void logged.push({ msg, ...fields });
    const connect = (url: string, extra: Record<string, unknown> = {}) => RedisStore.connect({ url, job: "d", opTimeoutMs: 1000, logger, ...extra });
    assert.match(await refusal(connect(volatile.url)), /runs with appendonly no: a restart can lose every write since the last snapshot.*durability: "none"/);
    assert.match(await refusal(connect(volatile.url, { durability: "everysec" })), /accepts only durability "everysec"/);
    await using weak = await connect(volatile.url, { durability: "none" });
    assert.match(weak.durability, /^durability "none": appendonly no \(a restart can lose every write since the last snapshot\); no replicas$/);
    assert.ok(logged.some((l) => l.msg === "Redis store connected" && l.durability === weak.durability), "the mode is logged");

    await using everysec = await RedisServer.start({ appendfsync: "everysec" });
    assert.match(await refusal(connect(everysec.url)), /appendonly yes, appendfsync everysec: a crash of its machine can lose about the last second/);
    await using ok = await connect(everysec.url, { durability: "everysec" });
    assert.match(ok.durability, /^durability "everysec"/);
    assert.deepEqual(await ok.create("k", "v"), { ok: true, revision: 1 });
  },
});

Deno.test({
  name: "redis durability: a primary with a replica waits for it before a write is landed; one the replica does not take in time is an outage; a replica is refused",
  ...opts,
  fn: async () => {
    await using primary = await RedisServer.start();
    await using replica = await RedisServer.start({ replicaof: `127.0.0.1 ${primary.port}` });
    await whenAvailable("the replica to attach", async () => {
      const info = await primary.cli("INFO", "replication");
      if (!/connected_slaves:1/.test(info) || !/state=online/.test(info)) throw new StoreUnavailableError("attach", 0);
    });
    assert.match(await refusal(RedisStore.connect({ url: replica.url, job: "r", logger: silentLogger })), /the server is a replica \(role slave\): connect to its primary/);
    await using store = await RedisStore.connect({ url: primary.url, job: "r", opTimeoutMs: 1000, logger: silentLogger });
    assert.equal(store.waitReplicas, 1);
    assert.match(store.durability, /1 replica, each write waits for 1 \(WAIT\)/);
    const a = await store.create("a", "1");
    assert.ok(a.ok);
    assert.equal(await replica.cli("HGET", "splitlease:{r}:kv", "a"), "1", "the replica has it once it is landed");

    await replica.pause();
    const t0 = Date.now();
    const lost = await store.update("a", "2", a.revision).then((r) => r, (e) => e);
    const ms = Date.now() - t0;
    await replica.resume();
    assert.ok(lost instanceof StoreUnavailableError, `an outage while the replica is frozen, got ${JSON.stringify(lost)}`);
    assert.match(lost.message, /the write reached 0 of the 1 replica it waits for within \d+ ms: it may be lost in a failover/);
    assert.ok(ms <= 1000 + 350, `within its op timeout (${ms} ms)`);
    // It is on the primary: a caller that re-reads finds it (its fate in a failover was unknown).
    const now = await whenAvailable("the re-read", () => store.get("a"));
    assert.equal(now?.value, "2");
    const b = await whenAvailable("a write once the replica is back", () => store.create("b", "1"));
    assert.ok(b.ok);
  },
});

Deno.test({
  name: "redis durability: every acknowledged write survives SIGKILL of a server with appendfsync always, at its revision; a watch resets on the new run id",
  ...opts,
  fn: async () => {
    await using server = await RedisServer.start();
    await using store = await RedisStore.connect({ url: server.url, job: "k9", opTimeoutMs: 2000, logger: silentLogger });
    const w = store.watch("");
    const it = w[Symbol.asyncIterator]();
    assert.deepEqual(await take(it, 1), [{ type: "ready" }]);
    // Writers in parallel up to the kill: what was acknowledged must be there after the restart.
    const acked = new Map<string, number>();
    let stop = false;
    const writers = Array.from({ length: 8 }, (_, i) =>
      (async () => {
        for (let n = 0; !stop; n++) {
          const key = `w${i}.k${n}`;
          const r = await store.create(key, String(n)).catch(() => undefined);
          if (r?.ok) acked.set(key, r.revision);
        }
      })()
    );
    while (acked.size < 300) await new Promise((r) => setTimeout(r, 5));
    await server.kill();
    stop = true;
    await Promise.all(writers);
    const before = acked.size;
    await server.restart();
    const all = await whenAvailable("the listing after the restart", () => store.list(""));
    const found = new Map(all.map((e) => [e.key, e.revision]));
    const missing = [...acked].filter(([k, rev]) => found.get(k) !== rev);
    assert.deepEqual(missing, [], `${missing.length} of ${before} acknowledged writes lost or moved`);
    // The restarted server has a new run id: the watch cannot prove continuity and starts over.
    const events: WatchEvent[] = [];
    while (!events.some((e) => e.type === "reset")) events.push(...await take(it, 1, 15_000));
    await w.stop();
    console.log(`  ${before} acknowledged writes before kill -9, all ${all.length >= before ? "present" : "?"} after the restart (${all.length} keys)`);
  },
});

Deno.test({
  name: "redis: a user with the ACL of OPERATIONS (its keys, its channels, the store's commands) runs the store; refused credentials are STORE_AUTH_FAILED at once",
  ...opts,
  fn: async () => {
    await using server = await RedisServer.start();
    await server.cli("ACL", "SETUSER", "worker", "on", ">worker-pw", "~splitlease:*", "&splitlease:*", "+@read", "+@write", "+@scripting", "+@pubsub", "+info", "+wait", "+config|get", "+client|setname", "+ping");
    await using store = await RedisStore.connect({ url: `redis://worker:worker-pw@127.0.0.1:${server.port}`, job: "acl", opTimeoutMs: 1000, logger: silentLogger });
    assert.match(store.durability, /^durability "always"/);
    const w = store.watch("split.");
    const it = w[Symbol.asyncIterator]();
    assert.deepEqual(await take(it, 1), [{ type: "ready" }]);
    const r = await store.create("split.a", "1");
    assert.ok(r.ok);
    assert.deepEqual(await take(it, 1), [{ type: "put", key: "split.a", value: "1", revision: r.revision }]);
    assert.deepEqual(await store.list(""), [{ key: "split.a", value: "1", revision: r.revision }]);
    await w.stop();
    const t0 = Date.now();
    const bad = await RedisStore.connect({ url: `redis://worker:wrong@127.0.0.1:${server.port}`, job: "acl", opTimeoutMs: 5000, logger: silentLogger }).then(() => undefined, (e) => e);
    assert.ok(bad instanceof SplitleaseError && bad.code === "STORE_AUTH_FAILED", String(bad));
    assert.ok(Date.now() - t0 < 2000, "at once, not at the connect deadline");
  },
});
