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

Deno.test({
  name: "examples: the launcher's NATS_URL takes nats:// (the TCP transport) as well as ws://",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using server = await NatsServer.start();
    const opts = coordinationFromEnv({ JOB: "env-tcp", NATS_URL: server.clientUrl });
    assert.ok(opts.storeFactory, "a NATS store, not the embedded one");
    const store = await opts.storeFactory();
    try {
      assert.ok((await store.create("k", "over tcp")).ok);
    } finally {
      await store.close();
    }
    // Read back over the client port's protocol only: the listener it reached is the client port.
    await using check = await NatsStore.connect({ servers: server.clientUrl, job: "env-tcp", transport: tcpTransport() });
    assert.equal((await check.get("k"))?.value, "over tcp");
  },
});
