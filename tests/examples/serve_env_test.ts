/**
 * The examples read one name for the address to listen on (issue 21, item
 * 6): `BIND`, as `examples/object_store` does. The shared launcher used to
 * read `HOSTNAME_BIND` while its comment said `HOSTNAME` (which shells and
 * Kubernetes set to the host or pod name: never a bind address).
 */
import assert from "node:assert/strict";
import { coordinationFromEnv } from "../../examples/serve.ts";
import { NatsStore } from "../../nats.ts";
import { tcpTransport } from "../../adapters/nats_tcp.ts";
import { NatsServer } from "../helpers/nats_server.ts";

Deno.test("examples: the launcher listens on BIND (HOSTNAME_BIND as an alias), never on HOSTNAME", async () => {
  const host = (env: Record<string, string>) => coordinationFromEnv({ JOB: "j", ...env }).hostname;
  assert.equal(host({ BIND: "127.0.0.1" }), "127.0.0.1");
  assert.equal(host({ HOSTNAME_BIND: "127.0.0.2" }), "127.0.0.2", "the old name still works");
  assert.equal(host({ BIND: "127.0.0.1", HOSTNAME_BIND: "127.0.0.2" }), "127.0.0.1", "BIND wins");
  assert.equal(host({ HOSTNAME: "backfill-7d9f-abcde" }), "0.0.0.0", "a pod name is not an address");
  assert.equal(host({}), "0.0.0.0");
  // The documentation of the launcher and of the object-store example name the same variable.
  const launcher = await Deno.readTextFile(new URL("../../examples/serve.ts", import.meta.url));
  const objectStore = await Deno.readTextFile(new URL("../../examples/object_store/main.ts", import.meta.url));
  assert.match(launcher, /`BIND` \(the address to listen on/);
  assert.match(objectStore, /BIND \(default 0\.0\.0\.0\)/);
  assert.doesNotMatch(launcher, /\(default 8080\), `HOSTNAME`/, "HOSTNAME is not offered as the bind variable");
});

Deno.test("examples: the launcher's store comes from STORE_URL (postgres:// or NATS URLs) or NATS_URL, and a bad one is named", async () => {
  const of = (env: Record<string, string>) => coordinationFromEnv({ JOB: "j", ...env });
  assert.ok("store" in of({}), "no URL: the embedded MemoryStore");
  assert.equal(typeof (of({ STORE_URL: "postgres://app@db:5432/app" }) as { storeFactory?: unknown }).storeFactory, "function");
  assert.equal(typeof (of({ STORE_URL: "ws://nats:8080,ws://nats2:8080" }) as { storeFactory?: unknown }).storeFactory, "function");
  assert.equal(typeof (of({ STORE_URL: "nats://nats:4222" }) as { storeFactory?: unknown }).storeFactory, "function");
  assert.equal(typeof (of({ NATS_URL: "ws://nats:8080" }) as { storeFactory?: unknown }).storeFactory, "function");
  assert.throws(() => of({ STORE_URL: "postgres://a@b/c", NATS_URL: "ws://n:1" }), /STORE_URL and NATS_URL are both set/);
  assert.throws(() => of({ STORE_URL: "mysql://u:secret@db/app" }), (e: Error) => /STORE_URL "mysql:\/\/\*\*\*@db\/app" is not a store URL: give nats:\/\//.test(e.message) && !e.message.includes("secret"));
  // SHARDS: the job's shard count, one embedded store per shard without a URL (serve refuses a bad count).
  assert.equal(of({ SHARDS: "3" }).shards, 3);
  assert.equal((of({ SHARDS: "3" }) as { stores?: unknown[] }).stores?.length, 3);
  assert.equal(of({}).shards, undefined, "unset: one shard, as always");
  assert.throws(() => of({ SHARDS: "many" }), /SHARDS must be a number/);
  // Connecting names the URL's server, never its password.
  const factory = of({ STORE_URL: "postgres://u:secret@127.0.0.1:1/app", OP_TIMEOUT_MS: "200" }).storeFactory!;
  await assert.rejects(Promise.resolve().then(() => factory({ index: 0, job: "j" })), (e: Error) => /127\.0\.0\.1:1\/app/.test(e.message) && !e.message.includes("secret"));
});

Deno.test({
  name: "examples: the launcher's NATS_URL takes nats:// (the TCP transport) as well as ws://",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using server = await NatsServer.start();
    const opts = coordinationFromEnv({ JOB: "env-tcp", NATS_URL: server.clientUrl });
    assert.ok(opts.storeFactory, "a NATS store, not the embedded one");
    const store = await opts.storeFactory({ index: 0, job: "env-tcp" });
    try {
      assert.ok((await store.create("k", "over tcp")).ok);
    } finally {
      await store.close();
    }
    // Read back over the client port's protocol only: the listener it reached is the client port.
    await using check = await NatsStore.connect({ servers: server.clientUrl, job: "env-tcp", transport: tcpTransport() });
    assert.equal((await check.get("k"))?.value, "over tcp");
    // SHARDS: the factory opens each shard's own bucket on the same URL.
    const sharded = coordinationFromEnv({ JOB: "env-tcp", NATS_URL: server.clientUrl, SHARDS: "2" });
    assert.equal(sharded.shards, 2);
    const shard1 = await sharded.storeFactory!({ index: 1, job: "env-tcp--shard1" });
    try {
      assert.equal(shard1.job, "env-tcp--shard1");
      assert.equal(await shard1.get("k"), undefined, "a bucket of its own");
    } finally {
      await shard1.close();
    }
    // A URL no backend takes, at one of the server's listeners: the factory names the listener and the URL to give.
    const pointed = coordinationFromEnv({ JOB: "env-tcp", STORE_URL: `http://127.0.0.1:${server.monitorPort}` });
    await assert.rejects(
      Promise.resolve().then(() => pointed.storeFactory!({ index: 0, job: "env-tcp" })),
      new RegExp(`STORE_URL "http://127\\.0\\.0\\.1:${server.monitorPort}" is not a store URL: .*; it is the NATS monitoring port .*: its client port is nats://127\\.0\\.0\\.1:${server.clientPort}`),
    );
  },
});
