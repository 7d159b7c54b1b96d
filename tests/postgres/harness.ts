// PostgreSQL as the kit's suites reach it (tests/store/backend_suites.ts): the
// server the test command started (PG_URL), a fresh job per store; servers
// of the test's own (tests/helpers/pg_server.ts) to fault; values planted
// with SQL through the schema's own write function.
import { PostgresStore } from "../../adapters/postgres.ts";
import type { BackendHarness } from "../store/backend_suites.ts";
import { REAL_TIMINGS, realBackend } from "../coordinator/real_backend.ts";
import { noPg, pgStore, sqlOnce } from "../helpers/pg.ts";
import { PgServer } from "../helpers/pg_server.ts";
import { channelsOfKey } from "../../src/postgres/channels.ts";
import { LazyProxy } from "../store/outage.ts";

/** The PostgreSQL harness. */
export const pgHarness: BackendHarness = {
  id: "postgres",
  ...(noPg ? { missing: "PG_URL is not set (npm test starts PostgreSQL)" } : {}),
  store: (opTimeoutMs = 1000) => pgStore({ opTimeoutMs }),
  scenarios: () => realBackend("postgres", (job) => pgStore({ job, opTimeoutMs: REAL_TIMINGS.opTimeoutMs, pollIntervalMs: 250 })),
  faults: {
    label: "postgres",
    // Reads are retried within their deadline after a lost connection; writes never (DESIGN, "Store").
    holdsWrites: false,
    async start() {
      const server = await PgServer.start();
      const proxy = new LazyProxy(() => server.port);
      const url = (port: number) => `postgres://postgres@127.0.0.1:${port}/test`;
      return {
        connect: (job, opTimeoutMs, proxied) =>
          PostgresStore.connect({ url: url(proxied ? proxy.port : server.port), job, opTimeoutMs }),
        pause: () => server.pause(),
        resume: () => server.resume(),
        stop: () => server.kill(),
        restart: () => server.restart(),
        async killConnections() {
          await server.psql("test", "select count(pg_terminate_backend(pid)) from pg_stat_activity where application_name like 'splitlease:%'");
        },
        isolate: () => proxy.isolate(),
        rejoin: () => proxy.rejoin(),
        async [Symbol.asyncDispose]() {
          await proxy[Symbol.asyncDispose]();
          await server[Symbol.asyncDispose]();
        },
      };
    },
  },
  async plant(store, key, value) {
    const s = (store as PostgresStore).schema;
    const [{ id }] = await sqlOnce<{ id: number }>(`select id from ${s}.jobs where name = $1`, [store.job!]);
    await sqlOnce(`select ${s}.put($1, $2, $3, null, $4, false)`, [id, key, value, channelsOfKey(id, key)]);
  },
};
