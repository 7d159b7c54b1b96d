// Connecting to a PostgreSQL that refuses: out of connection slots (53300),
// shutting down (57P03), or a URL whose database does not exist (3D000).
// Each is told as what it is, with the fix: the server's reason in every
// retry line and in the final error, the connections a store opens and the
// option that lowers them, a `createdb` hint instead of the login hint.
import assert from "node:assert/strict";
import postgres from "postgres";
import { SplitleaseError, StoreUnavailableError } from "../../store.ts";
import { PostgresJobCatalog, PostgresStore } from "../../adapters/postgres.ts";
import { noPg, PG_URL } from "../helpers/pg.ts";
import { PgServer } from "../helpers/pg_server.ts";

const opts = { sanitizeOps: false, sanitizeResources: false, ignore: noPg };

type Line = { level: string; message: string; fields: Record<string, unknown> };
function recorder(): { lines: Line[]; logger: (level: string, message: string, fields?: Record<string, unknown>) => void } {
  const lines: Line[] = [];
  return { lines, logger: (level, message, fields = {}) => void lines.push({ level, message, fields }) };
}

/** A server with 8 slots, 2 of them for superusers, and every other slot held: a non-superuser gets 53300. */
async function fullServer(): Promise<{ server: PgServer; app: string; release: () => Promise<void>; [Symbol.asyncDispose](): Promise<void> }> {
  const server = await PgServer.start({ max_connections: "8", superuser_reserved_connections: "2" });
  await server.psql("test", "create role app login; grant all on database test to app; grant all on schema public to app");
  const hog = postgres(server.url, { max: 6, onnotice: false, fetch_types: false });
  const held = await Promise.all(Array.from({ length: 6 }, () => hog.reserve()));
  let released = false;
  const release = async () => {
    if (released) return;
    released = true;
    for (const c of held) c.release();
    await hog.end({ timeout: 1 });
  };
  return {
    server,
    app: server.url.replace("postgres://postgres@", "postgres://app@"),
    release,
    async [Symbol.asyncDispose]() {
      await release();
      await server[Symbol.asyncDispose]();
    },
  };
}

Deno.test({
  name: "postgres connect: a server out of connection slots is retried within connectWaitMs, each retry and the error naming the reason, the budget and the option",
  ...opts,
  fn: async () => {
    await using full = await fullServer();
    // Within a connect wait past the driver's connect timeout (2 s here): several attempts.
    const rec = recorder();
    const t0 = Date.now();
    const e = await PostgresStore.connect({ url: full.app, job: "j", opTimeoutMs: 1000, connectWaitMs: 5000, logger: rec.logger }).then(
      () => assert.fail("connected to a full server"),
      (e) => e,
    );
    const took = Date.now() - t0;
    assert.ok(e instanceof StoreUnavailableError, String(e));
    const m = (e as Error).message;
    assert.match(m, /the server refused the connection: too many connections \("remaining connection slots are reserved[^"]*", SQLSTATE 53300\)/);
    assert.match(m, /up to 9 connections/);
    assert.match(m, /poolSize 4 for statements, 1 to LISTEN, transactionPoolSize 4/);
    assert.match(m, /lower poolSize and transactionPoolSize/);
    assert.match(m, /max_connections/);
    assert.doesNotMatch(m, /unreachable|no answer/);
    const retries = rec.lines.filter((l) => l.fields.event === "storeConnectRetry");
    assert.ok(retries.length >= 2, `retried: ${JSON.stringify(rec.lines)}`);
    for (const r of retries) {
      assert.equal(r.message, "PostgreSQL refused the connection: too many connections; retrying");
      assert.equal(r.fields.reason, "too many connections");
      assert.equal(r.fields.sqlState, "53300");
      assert.equal(r.fields.connections, 9);
    }
    // The wait is kept: the last attempt starts within it and lasts at most an attempt's bound
    // (the driver's connect timeout, 2 s here, and 1.5 s for its verdict), plus slack for a busy machine.
    const attemptMs = 2000 + 1500;
    assert.ok(took >= 5000 && took < 5000 + attemptMs + 2000, `took ${took} ms`);

    // With the default connect wait (opTimeoutMs), one attempt: it waits for the driver's verdict
    // instead of timing out first as "unreachable".
    const t1 = Date.now();
    await assert.rejects(
      PostgresStore.connect({ url: full.app, job: "j", opTimeoutMs: 1000, poolSize: 2, transactionPoolSize: 1, logger: () => {} }),
      (e) => {
        assert.ok(e instanceof StoreUnavailableError);
        assert.match(e.message, /the server refused the connection: too many connections/);
        assert.match(e.message, /1 attempt /);
        assert.match(e.message, /up to 4 connections to the server \(poolSize 2 for statements, 1 to LISTEN, transactionPoolSize 1/);
        return true;
      },
    );
    assert.ok(Date.now() - t1 < attemptMs + 2000, `took ${Date.now() - t1} ms`);

    // The job catalog (splitlease jobs, delete) says the same.
    await assert.rejects(
      PostgresJobCatalog.connect({ url: full.app, opTimeoutMs: 1000 }),
      (e) => e instanceof StoreUnavailableError && /the server refused the connection: too many connections/.test(e.message),
    );

    // Slots freed: the connect that waits gets in, and its log says how many connections it may open.
    const waiting = recorder();
    const connecting = PostgresStore.connect({ url: full.app, job: "j", opTimeoutMs: 1000, connectWaitMs: 30_000, poolSize: 3, logger: waiting.logger });
    connecting.catch(() => {});
    const deadline = Date.now() + 10_000;
    while (!waiting.lines.some((l) => l.fields.event === "storeConnectRetry")) {
      assert.ok(Date.now() < deadline, "the connect was refused at least once");
      await new Promise((r) => setTimeout(r, 50));
    }
    await full.release();
    const store = await connecting;
    try {
      const open = waiting.lines.filter((l) => l.fields.event === "storeConnected");
      assert.equal(open.length, 1, JSON.stringify(waiting.lines));
      assert.equal(open[0].level, "info");
      assert.deepEqual([open[0].fields.connections, open[0].fields.poolSize, open[0].fields.transactionPoolSize], [8, 3, 4]);
      assert.match(open[0].message, /up to 8 connections .*lower poolSize and transactionPoolSize to open fewer/);
      assert.ok((await store.create("k", "v")).ok);
    } finally {
      await store.close();
    }
  },
});

Deno.test({
  name: "postgres connect: a server shutting down (57P03) is retried, each retry naming the reason",
  ...opts,
  fn: async () => {
    await using server = await PgServer.start();
    // A smart shutdown waits for its clients to leave and refuses new ones meanwhile.
    const client = postgres(server.url, { max: 1, onnotice: false, fetch_types: false });
    await client`select 1`;
    try {
      Deno.kill(server.pid, "SIGTERM");
      const rec = recorder();
      await assert.rejects(
        PostgresStore.connect({ url: server.url, job: "j", opTimeoutMs: 1000, connectWaitMs: 1500, logger: rec.logger }),
        (e) => {
          assert.ok(e instanceof StoreUnavailableError);
          assert.match(e.message, /the server refused the connection: it is not accepting connections now \(starting up, shutting down or in recovery\) \("the database system is shutting down", SQLSTATE 57P03\)/);
          assert.doesNotMatch(e.message, /max_connections/, "not a matter of connection slots");
          return true;
        },
      );
      const retries = rec.lines.filter((l) => l.fields.event === "storeConnectRetry");
      assert.ok(retries.length >= 2, JSON.stringify(rec.lines));
      for (const r of retries) assert.equal(r.fields.sqlState, "57P03");
    } finally {
      await client.end({ timeout: 1 });
    }
  },
});

Deno.test({
  name: "postgres connect: a database that does not exist is INVALID_CONFIG at once with a createdb hint, not a login failure",
  ...opts,
  fn: async () => {
    const url = PG_URL.replace(/\/[^/?]*(\?|$)/, "/nodb$1");
    const t0 = Date.now();
    for (
      const connect of [
        () => PostgresStore.connect({ url, job: "j", connectWaitMs: 30_000, logger: () => {} }),
        () => PostgresJobCatalog.connect({ url }),
      ]
    ) {
      await assert.rejects(connect(), (e) => {
        assert.ok(e instanceof SplitleaseError, String(e));
        assert.equal(e.code, "INVALID_CONFIG", e.message);
        assert.match(e.message, /database "nodb" does not exist \(3D000\) on 127\.0\.0\.1:\d+\/nodb: create it \(`createdb nodb`/);
        assert.doesNotMatch(e.message, /password|grants/);
        return true;
      });
    }
    assert.ok(Date.now() - t0 < 5000, `not retried: ${Date.now() - t0} ms`);
  },
});
