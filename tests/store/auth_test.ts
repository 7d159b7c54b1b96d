/**
 * Authentication against a real nats-server with an `authorization` block:
 * refused credentials are STORE_AUTH_FAILED at once (not an outage reported
 * after the timeout), credentials in the server URL are used, and no
 * password ever appears in an error message.
 */
import assert from "node:assert/strict";
import { SplitleaseError } from "../../mod.ts";
import { NatsStore } from "../../nats.ts";
import { NatsServer } from "../helpers/nats_server.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
/** Long on purpose: a refusal must come long before it. */
const OP_TIMEOUT_MS = 10_000;

function withCreds(wsUrl: string, userinfo: string): string {
  return wsUrl.replace("ws://", `ws://${userinfo}@`);
}

async function refused(connect: Promise<NatsStore>, secret: string, login: RegExp): Promise<void> {
  const started = performance.now();
  const error = await connect.then(
    async (s) => {
      await s.close();
      return undefined;
    },
    (e) => e,
  );
  const took = performance.now() - started;
  assert.ok(error instanceof SplitleaseError, `refused with a SplitleaseError, got ${error}`);
  assert.equal(error.code, "STORE_AUTH_FAILED", error.message);
  assert.match(error.message, /refused the login with /);
  assert.match(error.message, login);
  assert.match(error.message, /Authorization Violation/);
  assert.ok(!error.message.includes(secret), `no secret in: ${error.message}`);
  assert.ok(took < OP_TIMEOUT_MS / 2, `refused at once, not after the ${OP_TIMEOUT_MS} ms timeout (${took.toFixed(0)} ms)`);
}

Deno.test({
  name: "auth: user/password refused at once as STORE_AUTH_FAILED; accepted as options or in the URL",
  ...opts,
  fn: async () => {
    await using server = await NatsServer.start({ extra: 'authorization { user: "sl", password: "s3cret-pw" }' });
    const base = { job: "auth", opTimeoutMs: OP_TIMEOUT_MS };
    await refused(
      NatsStore.connect({ ...base, servers: server.wsUrl, user: "sl", pass: "wrong-pw" }),
      "wrong-pw",
      /user "sl" and a password/,
    );
    await refused(NatsStore.connect({ ...base, servers: server.wsUrl }), "s3cret-pw", /no credentials/);
    await refused(
      NatsStore.connect({ ...base, servers: withCreds(server.wsUrl, "sl:wrong-pw") }),
      "wrong-pw",
      /user "sl" and a password/,
    );
    for (
      const connect of [
        () => NatsStore.connect({ ...base, servers: server.wsUrl, user: "sl", pass: "s3cret-pw" }),
        () => NatsStore.connect({ ...base, servers: withCreds(server.wsUrl, "sl:s3cret-pw") }),
        () => NatsStore.connect({ ...base, servers: withCreds(server.wsUrl, "sl:s3cret%2Dpw") }),
      ]
    ) {
      await using store = await connect();
      const r = await store.create("plan", "{}");
      assert.ok(r.ok || r.conflict, "the store works");
    }
  },
});

Deno.test({
  name: "auth: a token in the URL (ws://token@host) is used; a wrong one is STORE_AUTH_FAILED",
  ...opts,
  fn: async () => {
    await using server = await NatsServer.start({ extra: 'authorization { token: "t0k3n-abc" }' });
    const base = { job: "auth-token", opTimeoutMs: OP_TIMEOUT_MS };
    await refused(NatsStore.connect({ ...base, servers: withCreds(server.wsUrl, "nope") }), "nope", /a token/);
    await using store = await NatsStore.connect({ ...base, servers: withCreds(server.wsUrl, "t0k3n-abc") });
    assert.ok((await store.create("k", "v")).ok);
  },
});
