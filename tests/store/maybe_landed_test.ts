// The maybe-landed rule of NatsStore (docs/DESIGN.md, "Store"): a write whose
// reply is lost counts as landed only if the key holds exactly its value at a
// revision above anything seen before the write. A CAS that never reached the
// stream, on a key that already holds the same bytes, must be reported as an
// outage — never as `ok` at the old revision, which a caller would take for
// a new write of its own.
import assert from "node:assert/strict";
import { StoreUnavailableError } from "../../mod.ts";
import { NatsStore } from "../../nats.ts";
import { NatsServer } from "../helpers/nats_server.ts";

const USERS = `authorization {
  users: [
    { user: "admin", password: "admin-pw" }
    { user: "reader", password: "reader-pw", permissions: {
      publish: { allow: ["$JS.API.>", "_INBOX.>"], deny: ["$KV.>"] }
      subscribe: { allow: ["_INBOX.>"] }
    } }
  ]
}`;

Deno.test({
  name: "maybe landed: an update that never reached the server, over the same bytes it would write, is STORE_UNAVAILABLE, never ok at the old revision",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    await using server = await NatsServer.start({ extra: USERS });
    const base = { servers: server.wsUrl, job: "maybe", opTimeoutMs: 1500 };
    await using admin = await NatsStore.connect({ ...base, user: "admin", pass: "admin-pw" });
    const w = await admin.create("k", "same");
    assert.ok(w.ok);
    // A connection that may read the bucket but whose writes never reach it.
    await using reader = await NatsStore.connect({ ...base, user: "reader", pass: "reader-pw", createBucket: false });
    assert.equal((await reader.get("k"))?.revision, w.revision, "it reads");
    const r = await reader.update("k", "same", w.revision).catch((e) => e);
    assert.ok(r instanceof StoreUnavailableError, `an outage, got ${JSON.stringify(r)}`);
    assert.equal((await admin.get("k"))?.revision, w.revision, "nothing was written");
  },
});
