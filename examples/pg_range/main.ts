/**
 * Runnable worker of the pg_range example on Deno, Bun or Node 24:
 *
 *   deno run -A examples/pg_range/main.ts
 *   bun run examples/pg_range/main.ts
 *   node examples/pg_range/main.ts
 *
 * Coordination settings come from the environment (see `../serve.ts`:
 * JOB, NATS_URL, INSTANCE, PORT, LEASE_MS, ...). The scan is configured by
 * PG_RANGE_CONFIG, a JSON object validated by `PgRangeConfigSchema`, e.g.
 * `{"url":"postgres://postgres@db.internal/test","table":"public.src",
 * "columns":["payload"],"sinkTable":"public.sink","copiesColumn":"copies"}`.
 * With `"splitColumn"` and `"epochColumn"` the sink is fenced; a write the
 * fence refuses is logged as `{"event":"sinkRefused",...}`. With
 * `"transaction": true` each batch and its progress commit in one
 * transaction of the store (STORE_URL must be the sink's PostgreSQL).
 * Exits 0 once the table is copied (or after a SIGTERM drain), 1 on error.
 *
 * @module
 */
import process from "node:process";
import { jsonLogger } from "../../host.ts";
import { coordinationFromEnv, runToExit, serveHere } from "../serve.ts";
import { pgRangeSource } from "./source.ts";

function configFromEnv(): unknown {
  const raw = process.env.PG_RANGE_CONFIG;
  if (!raw) throw new Error("PG_RANGE_CONFIG (a JSON object, see examples/pg_range/README.md) must be set");
  try {
    return JSON.parse(raw);
  } catch (e) {
    throw new Error(`PG_RANGE_CONFIG is not valid JSON: ${e instanceof Error ? e.message : e}`);
  }
}

const log = jsonLogger({ base: process.env.INSTANCE ? { instance: process.env.INSTANCE } : {} });
const config = configFromEnv() as { transaction?: unknown };
if (config.transaction === true && !/^postgres(ql)?:\/\//i.test(process.env.STORE_URL ?? "")) {
  throw new Error("PG_RANGE_CONFIG.transaction needs the store on the sink's PostgreSQL: set STORE_URL to its postgres:// URL");
}
const { source, close } = pgRangeSource(config as never, {
  onRefused: (w) => log("warn", "sink write refused by the fence: a newer tenancy owns the split", { event: "sinkRefused", ...w }),
});
const service = await serveHere({ ...coordinationFromEnv(), source, exit: false }).catch(async (e) => {
  await close();
  throw e;
});
await runToExit(service, close);
