// PostgreSQL for the tests: `npm test` (scripts/test.mjs) starts a throwaway
// server on a free loopback port and passes its URL as PG_URL. Each store
// gets a job of its own (revisions start at 0 per job), so tests share the
// server without seeing each other's keys.
import postgres from "postgres";
import {
  PgStore,
  type PgTransaction,
  postgresJsClient,
  PostgresStore,
  type PostgresStoreOptions,
  type SqlClient,
} from "../../adapters/postgres.ts";
import { resolvePgOptions } from "../../src/postgres/options.ts";
import { openJob } from "../../src/postgres/setup.ts";
import { silentLogger } from "../../host.ts";

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

/**
 * A store on a fresh job whose SQL client goes through `wrap` (a fault
 * layer), built the way `PostgresStore.connect` builds one.
 */
export async function pgStoreWith(
  wrap: (c: SqlClient) => SqlClient,
  options: Partial<PostgresStoreOptions> = {},
): Promise<PgStore<PgTransaction>> {
  const o = { url: PG_URL, job: freshJob(), opTimeoutMs: 1000, ...options };
  const { url: _u, listenUrl: _l, poolSize: _p, transactionPoolSize: _t, prepare: _r, applicationName: _a, ...core } = o;
  const opts = resolvePgOptions(core);
  const client = wrap(postgresJsClient({ ...o, applicationName: o.applicationName ?? `splitlease:${o.job}` }));
  const jobId = await openJob(client, opts, "test", silentLogger);
  return new PgStore<PgTransaction>({ client, options: opts, jobId, server: "test", logger: silentLogger });
}

/** One statement on the test server (a pool of one, closed after). */
export async function sqlOnce<T = Record<string, unknown>>(text: string, params: (string | number | null)[] = [], url = PG_URL): Promise<T[]> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    return [...await sql.unsafe(text, params)] as T[];
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/** Ends every connection whose application_name starts with `name` (a store's: `splitlease:<job>` by default): a server-side disconnect. */
export async function terminateConnections(name: string, url = PG_URL): Promise<number> {
  const rows = await sqlOnce<{ n: number }>(
    `select count(pg_terminate_backend(pid))::int as n from pg_stat_activity where starts_with(application_name, $1)`,
    [name],
    url,
  );
  return rows[0].n;
}
