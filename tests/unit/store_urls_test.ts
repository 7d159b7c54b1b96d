// One scheme message (issue 40, item 7): the store URL registry
// (src/store/store_urls.ts) names every scheme the CLI, the examples'
// launcher and the stores take, and answers a near miss with its fix —
// `nat://`, `tcp://`, a bare `host:port`, `pg://` — and a URL of another
// backend with how to connect to that one. Every backend of the registry is
// wired (cli/store_backends.ts), and the usage names every scheme.
// The probes of a listener behind `http://` are in tests/tcp and tests/ops.
import assert from "node:assert/strict";
import {
  NATS_URLS,
  POSTGRES_URLS,
  schemeOf,
  splitStoreUrls,
  STORE_URL_KINDS,
  storeKindOfUrls,
  storeSchemesText,
  storeUrlHint,
  wrongStoreUrlMessage,
} from "../../src/store/store_urls.ts";
import { STORE_BACKENDS } from "../../cli/store_backends.ts";
import { USAGE } from "../../src/cli/args.ts";
import { coordinationFromEnv } from "../../examples/serve.ts";
import { NatsStore } from "../../nats.ts";
import { PostgresStore } from "../../adapters/postgres.ts";
import { RedisStore } from "../../adapters/redis.ts";
import { SplitleaseError } from "../../mod.ts";

// A bare host:port is guessed by the backend's standard port, taken from the registry here: these are pure
// string functions, nothing connects (the other URLs use ports nothing listens on: 7001-7003).
const [PG_PORT, REDIS_PORT] = ["postgres", "redis"].map((id) => STORE_URL_KINDS.find((k) => k.id === id)!.defaultPort);

const ALL = "nats://, tls://, ws:// or wss:// URLs (NATS), one postgres:// or postgresql:// URL (PostgreSQL), or one redis:// or rediss:// URL (Redis)";

/** The INVALID_CONFIG message `fn` throws. */
function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof SplitleaseError && e.code === "INVALID_CONFIG", String(e));
    return e.message;
  }
  assert.fail("accepted");
}

Deno.test("store urls: every scheme of every backend, in one phrase, in the usage and in every refusal", () => {
  assert.equal(storeSchemesText(), ALL);
  assert.deepEqual(STORE_URL_KINDS.flatMap((k) => k.schemes.map((s) => s.scheme)), ["nats", "tls", "ws", "wss", "postgres", "postgresql", "redis", "rediss"]);
  for (const k of STORE_URL_KINDS) {
    for (const s of k.schemes) assert.ok(USAGE.includes(`${s.scheme}://`), `the usage names ${s.scheme}://`);
  }
  // Each backend of the registry is wired, under its own id.
  assert.deepEqual(Object.keys(STORE_BACKENDS).sort(), STORE_URL_KINDS.map((k) => k.id).sort());
  for (const [id, b] of Object.entries(STORE_BACKENDS)) assert.equal(b.kind.id, id);
  for (const url of ["http://127.0.0.1:8222", "memcached://cache:11211", "127.0.0.1:7001"]) {
    assert.ok(refusal(() => storeKindOfUrls([url], "--servers")).includes(`is not a store URL: give ${ALL}`), url);
  }
});

Deno.test("store urls: a near miss is named with its fix", () => {
  const cases: [string, string][] = [
    ["nat://127.0.0.1:7001", "did you mean nats://127.0.0.1:7001?"],
    ["tcp://127.0.0.1:7001", "did you mean nats://127.0.0.1:7001?"],
    ["NATS:127.0.0.1:7001", "did you mean nats://127.0.0.1:7001?"],
    ["wx://h:8080", "did you mean ws://h:8080?"],
    ["postgress://db/app", "did you mean postgres://db/app?"],
    ["pg://app:secret@db/app", "did you mean postgres://***@db/app?"],
    ["127.0.0.1:7001", "it has no scheme: did you mean nats://127.0.0.1:7001?"],
    ["nats.internal", "it has no scheme: did you mean nats://nats.internal?"],
    [`db.internal:${PG_PORT}`, `it has no scheme: did you mean postgres://db.internal:${PG_PORT}/<database>?`],
    ["[::1]:7001", "it has no scheme: did you mean nats://[::1]:7001?"],
    ["redis://cache:7003", ""],
    ["valkey://cache:7003", "did you mean redis://cache:7003?"],
    [`cache.internal:${REDIS_PORT}`, `it has no scheme: did you mean redis://cache.internal:${REDIS_PORT}?`],
    ["memcached://cache:11211", ""],
    ["nats://fine:7001", ""],
  ];
  for (const [url, hint] of cases) assert.equal(storeUrlHint(url), hint, url);
  assert.match(storeUrlHint("http://nats:8222"), /^NATS, PostgreSQL and Redis take no HTTP URL \(nats-server's HTTP ports are its monitoring port, which takes no clients, and its WebSocket listener: ws:\/\/nats:8222\)/);
  assert.match(storeUrlHint("https://nats:443"), /WebSocket listener: wss:\/\/nats:443\)/);
  assert.ok(!storeUrlHint("pg://app:secret@db/app").includes("secret"), "credentials never shown");
});

Deno.test("store urls: one backend per setting, one URL for PostgreSQL, and its commas are its own", () => {
  assert.deepEqual(splitStoreUrls(" nats://a:7001 , nats://b:7001 "), ["nats://a:7001", "nats://b:7001"]);
  assert.deepEqual(splitStoreUrls("postgres://u@h1:7002,h2:7002/db"), ["postgres://u@h1:7002,h2:7002/db"]);
  assert.deepEqual(splitStoreUrls(""), []);
  assert.equal(storeKindOfUrls(["postgresql://u@h/db"], "STORE_URL"), POSTGRES_URLS, "postgresql:// is accepted");
  assert.equal(storeKindOfUrls(["ws://a:1", "nats://b:2"], "STORE_URL"), NATS_URLS);
  assert.match(refusal(() => storeKindOfUrls(["nats://a:1", "postgres://u@h/db"], "--servers")), /--servers mixes NATS and PostgreSQL URLs \("postgres:\/\/\*\*\*@h\/db"\)/);
  assert.match(refusal(() => storeKindOfUrls(["postgres://a/db", "postgres://b/db"], "STORE_URL")), /gives 2 PostgreSQL URLs: a PostgreSQL store is one URL/);
  assert.equal(schemeOf(" WSS://x:1"), "wss");
});

Deno.test("store urls: a store given another backend's URL says which backend it is and how to connect to it", async () => {
  assert.equal(
    wrongStoreUrlMessage("postgres://u:secret@db/app", NATS_URLS, "server"),
    'server "postgres://***@db/app" is a PostgreSQL URL, not a NATS one (nats://, tls://, ws:// or wss://): connect to PostgreSQL with PostgresStore.connect (@splitlease/splitlease/postgres)',
  );
  const nats = await NatsStore.connect({ servers: "postgresql://u@db/app", job: "j" }).then(() => "", (e) => e.message);
  assert.match(nats, /^NatsStore: server "postgresql:\/\/\*\*\*@db\/app" is a PostgreSQL URL, not a NATS one \(ws:\/\/ or wss:\/\/ \(WebSocket\), or nats:\/\/ or tls:\/\/ with the TCP transport\): connect to PostgreSQL with PostgresStore\.connect/);
  const redis = await NatsStore.connect({ servers: "redis://cache:7003", job: "j" }).then(() => "", (e) => e.message);
  assert.match(redis, /^NatsStore: server "redis:\/\/cache:7003" is a Redis URL, not a NATS one .*: connect to Redis with RedisStore\.connect \(@splitlease\/splitlease\/redis\)$/);
  const other = await NatsStore.connect({ servers: "memcached://cache:11211", job: "j" }).then(() => "", (e) => e.message);
  assert.equal(other, 'NatsStore: server "memcached://cache:11211" is not a NATS URL: give ws:// or wss:// (WebSocket), or nats:// or tls:// with the TCP transport');
  const typo = await NatsStore.connect({ servers: "nat://127.0.0.1:1", job: "j" }).then(() => "", (e) => e.message);
  assert.match(typo, /is not a NATS URL: .*; did you mean nats:\/\/127\.0\.0\.1:1\?$/);
  const pg = await PostgresStore.connect({ url: "nats://127.0.0.1:7001", job: "j" }).then(() => "", (e) => e.message);
  assert.match(pg, /url "nats:\/\/127\.0\.0\.1:7001" is a NATS URL, not a PostgreSQL one \(postgres:\/\/ or postgresql:\/\/\): connect to NATS with NatsStore\.connect/);
  const redis2 = await RedisStore.connect({ url: "redis://a:7003,redis://b:7003", job: "j" }).then(() => "", (e) => e.message);
  assert.match(redis2, /url "redis:\/\/a:7003,redis:\/\/b:7003" is not a URL: give redis:\/\/\[user:password@\]host\[:port\]\[\/db\]/, "one server, not a list");
  const redisPg = await RedisStore.connect({ url: "postgres://u@db/app", job: "j" }).then(() => "", (e) => e.message);
  assert.match(redisPg, /url "postgres:\/\/\*\*\*@db\/app" is a PostgreSQL URL, not a Redis one \(redis:\/\/ or rediss:\/\/\): connect to PostgreSQL with PostgresStore\.connect/);
  const pgTypo = await PostgresStore.connect({ url: "postgress://u@db/app", job: "j" }).then(() => "", (e) => e.message);
  assert.match(pgTypo, /url "postgress:\/\/\*\*\*@db\/app" is not a PostgreSQL URL: give postgres:\/\/ or postgresql:\/\/; did you mean postgres:\/\/\*\*\*@db\/app\?/);
});

Deno.test("store urls: the examples' launcher refuses a URL no backend takes before anything starts, naming every scheme", () => {
  const of = (env: Record<string, string>) => coordinationFromEnv({ JOB: "j", ...env });
  assert.equal(
    refusal(() => of({ STORE_URL: "memcached://u:secret@cache:11211" })),
    `STORE_URL "memcached://***@cache:11211" is not a store URL: give ${ALL}`,
  );
  assert.match(refusal(() => of({ NATS_URL: "nat://n:7001" })), /^NATS_URL "nat:\/\/n:7001" is not a store URL: give .*; did you mean nats:\/\/n:7001\?$/);
  assert.match(refusal(() => of({ STORE_URL: "postgress://db/app" })), /did you mean postgres:\/\/db\/app\?$/);
  assert.ok("storeFactory" in of({ STORE_URL: "127.0.0.1:7002" }), "a bare host:port is refused by the factory, once it asked what listens there");
  assert.ok("storeFactory" in of({ STORE_URL: "postgresql://u@db/app" }), "postgresql:// is accepted");
  assert.ok("storeFactory" in of({ STORE_URL: "rediss://u:secret@cache:6380" }), "rediss:// is accepted");
  assert.ok("storeFactory" in of({ STORE_URL: "tls://n1:7001,tls://n2:7001" }));
});
