/**
 * The tables of the pg_range tests (tests/examples/pg_range_test.ts and the
 * PostgreSQL fault and exactly-once tests): a scratch schema, a source and
 * a sink that counts the copies of each row it was written, and the sink
 * compared with the source.
 */
import postgres from "postgres";
import { PG_URL } from "./pg.ts";

/** The postgres.js client of the scratch schema. */
// deno-lint-ignore no-explicit-any
export type Sql = postgres.Sql<any>;

/** A scratch schema on PG_URL, dropped on dispose. */
export async function scratch(): Promise<{ sql: Sql; schema: string } & AsyncDisposable> {
  const sql = postgres(PG_URL, { max: 4, onnotice: () => {} });
  const schema = `sl_pg_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  await sql.unsafe(`create schema ${schema}`);
  return {
    sql,
    schema,
    async [Symbol.asyncDispose]() {
      try {
        await sql.unsafe(`drop schema if exists ${schema} cascade`);
      } finally {
        await sql.end({ timeout: 5 });
      }
    },
  };
}

/**
 * Creates `src` (id, payload) and `sink` (the same, with a count of copies
 * written; with `fenced`, the split and epoch columns a fenced sink checks;
 * with `history`, a table `hist` a trigger fills with every write the sink
 * accepted, in order). With `rows`, fills `src` with ids 1..rows.
 */
export async function createTables(sql: Sql, schema: string, opts: { fenced?: boolean; history?: boolean; rows?: number } = {}): Promise<void> {
  await sql.unsafe(`create table ${schema}.src (id bigint primary key, payload text not null)`);
  await sql.unsafe(
    `create table ${schema}.sink (id bigint primary key, payload text not null, copies int not null default 1` +
      (opts.fenced ? `, split_id text not null, epoch bigint not null)` : `)`),
  );
  if (opts.history) {
    await sql.unsafe(`create table ${schema}.hist (seq bigserial primary key, id bigint, split_id text, epoch bigint)`);
    await sql.unsafe(
      `create function ${schema}.rec() returns trigger language plpgsql as $$ begin
         insert into ${schema}.hist (id, split_id, epoch) values (new.id, new.split_id, new.epoch); return new; end $$`,
    );
    await sql.unsafe(`create trigger rec after insert or update on ${schema}.sink for each row execute function ${schema}.rec()`);
  }
  if (opts.rows) await sql.unsafe(`insert into ${schema}.src select g, md5(g::text) from generate_series(1, ${opts.rows}) g`);
}

/** The row count and checksum of `src` and of `sink`, and the sink's rows written more than once (`dups`: copies beyond the first). */
export async function sinkAgainstSource(sql: Sql, schema: string): Promise<{ src: { n: number; sum: string }; dst: { n: number; sum: string; dups: number } }> {
  const [src] = await sql.unsafe<{ n: number; sum: string }[]>(
    `select count(*)::int as n, md5(string_agg(id::text || ':' || payload, ',' order by id)) as sum from ${schema}.src`,
  );
  const [dst] = await sql.unsafe<{ n: number; sum: string; dups: number }[]>(
    `select count(*)::int as n, md5(string_agg(id::text || ':' || payload, ',' order by id)) as sum,
            (sum(copies) - count(*))::int as dups from ${schema}.sink`,
  );
  return { src, dst };
}

/** Rows of `hist` whose epoch is below an earlier write's of the same id: a sink row overwritten by an older tenancy. */
export async function staleEpochWrites(sql: Sql, schema: string): Promise<number> {
  const [stale] = await sql.unsafe<{ n: number }[]>(
    `select count(*)::int as n from (select epoch, lag(epoch) over (partition by id order by seq) as prev from ${schema}.hist) t where prev > epoch`,
  );
  return stale.n;
}

/**
 * The environment of `examples/pg_range/main.ts` copying `schema`.src into
 * `schema`.sink (copies counted) for job `job`: `store` names the store
 * (NATS_URL or STORE_URL), `timings` LEASE_MS, OP_TIMEOUT_MS and
 * MAX_IN_FLIGHT, `config` the rest of PG_RANGE_CONFIG, `extra` more
 * variables.
 */
export function rangeWorkerEnv(
  schema: string,
  job: string,
  store: Record<string, string>,
  timings: { leaseMs: number; opTimeoutMs: number; maxInFlight: number },
  config: Record<string, unknown>,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    JOB: job,
    ...store,
    LEASE_MS: String(timings.leaseMs),
    OP_TIMEOUT_MS: String(timings.opTimeoutMs),
    DRAIN_DEADLINE_MS: "2000",
    SHUTDOWN_MARGIN_MS: "2000",
    MAX_IN_FLIGHT: String(timings.maxInFlight),
    ...extra,
    PG_RANGE_CONFIG: JSON.stringify({
      url: PG_URL,
      table: `${schema}.src`,
      columns: ["payload"],
      sinkTable: `${schema}.sink`,
      copiesColumn: "copies",
      ...config,
    }),
  };
}
