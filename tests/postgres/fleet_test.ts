// The mixed fleet (tests/runtime/mixed_fleet.ts) on PostgreSQL: one Deno, one
// Bun and one Node 24 worker coordinate through the store of PG_URL.
import { PostgresStore } from "../../adapters/postgres.ts";
import { noPg, PG_URL } from "../helpers/pg.ts";
import { mixedFleet } from "../runtime/mixed_fleet.ts";

Deno.test({
  name: "fleet: one Deno, one Bun and one Node 24 worker complete a backfill on PostgreSQL: every record out, none twice",
  sanitizeOps: false,
  sanitizeResources: false,
  ignore: noPg,
  fn: () => mixedFleet({ STORE: "postgres", PG_STORE_URL: PG_URL }, (job) => PostgresStore.connect({ url: PG_URL, job, createJob: false })),
});
