// PostgreSQL for the tests: `npm test` (scripts/test.mjs) starts a throwaway
// server on a free loopback port and passes its URL as PG_URL. Each store
// gets a job of its own (revisions start at 0 per job), so tests share the
// server without seeing each other's keys.
import { PostgresStore, type PostgresStoreOptions } from "../../adapters/postgres.ts";

export const PG_URL: string = Deno.env.get("PG_URL") ?? "";
/** True when there is no PostgreSQL to test against (the tests that need one are ignored, saying so). */
export const noPg: boolean = PG_URL === "";
if (noPg) console.warn("PG_URL is not set (npm test starts PostgreSQL): the PostgreSQL tests are ignored");

const run = `${Date.now().toString(36)}${Math.floor(Math.random() * 1296).toString(36)}`;
let seq = 0;

/** A job name no other test (or earlier run on the same server) uses. */
export function freshJob(prefix = "t"): string {
  return `${prefix}${run}x${++seq}`;
}

/** A store on a fresh job (or `job`), with a short operation timeout. */
export function pgStore(options: Partial<PostgresStoreOptions> = {}): Promise<PostgresStore> {
  return PostgresStore.connect({ url: PG_URL, job: freshJob(), opTimeoutMs: 1000, ...options });
}
