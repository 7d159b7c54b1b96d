/**
 * pg_range example: planner unit tests (pure and against PostgreSQL), config
 * validation, and a fleet of Deno, Bun and Node workers over a real
 * nats-server copying a table while one of them is SIGKILLed.
 *
 * Needs PostgreSQL on 127.0.0.1:5432 with trust auth (PG_URL overrides).
 * Every test creates its own schema and drops it, even on failure.
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { NatsStore } from "../../src/nats/nats_store.ts";
import { SplitRecordSchema } from "../../src/records.ts";
import { NatsServer } from "../helpers/nats_server.ts";
import {
  type IdRange,
  parsePgRangeConfig,
  planRanges,
  planTable,
  pgRangeSource,
  rangesFromTiles,
  rangeSplitId,
  type Sql,
} from "../../examples/pg_range/source.ts";
import { finished, type Proc, reap, spawnWorker, tail, waitFor, withTimeout } from "./fleet.ts";

const PG_URL = Deno.env.get("PG_URL") ?? "postgres://postgres@127.0.0.1:5432/test";

function contiguous(ranges: IdRange[], min: number, max: number): void {
  assert.ok(ranges.length > 0);
  assert.equal(ranges[0].lo, min - 1, "first range starts right below min");
  assert.equal(ranges[ranges.length - 1].hi, max, "last range ends at max");
  for (let i = 0; i < ranges.length; i++) {
    assert.ok(ranges[i].lo < ranges[i].hi, `range ${i} is not empty`);
    if (i > 0) assert.equal(ranges[i].lo, ranges[i - 1].hi, `range ${i} starts where ${i - 1} ended`);
  }
}

/** A scratch schema, dropped on dispose. */
async function scratch(): Promise<{ sql: Sql; schema: string } & AsyncDisposable> {
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

function cfg(schema: string, extra: Record<string, unknown> = {}) {
  return parsePgRangeConfig({
    url: PG_URL,
    table: `${schema}.src`,
    columns: ["payload"],
    sinkTable: `${schema}.sink`,
    copiesColumn: "copies",
    ...extra,
  });
}

async function countsPerRange(sql: Sql, table: string, ranges: IdRange[]): Promise<number[]> {
  const out: number[] = [];
  for (const r of ranges) {
    const [{ n }] = await sql.unsafe(`select count(*)::int as n from ${table} where id > $1 and id <= $2`, [r.lo, r.hi]);
    out.push(n);
  }
  return out;
}

Deno.test("pg_range planRanges: uniform ids give equal, contiguous ranges with exact ends", () => {
  const ranges = planRanges({ min: 1, max: 1000, rows: 1000, bounds: [] }, 4);
  contiguous(ranges, 1, 1000);
  assert.deepEqual(ranges.map((r) => [r.lo, r.hi]), [[0, 250], [250, 500], [500, 750], [750, 1000]]);
  assert.deepEqual(ranges.map((r) => r.rows), [250, 250, 250, 250]);
});

Deno.test("pg_range planRanges: skewed histogram cuts at quantiles, not at equal id widths", () => {
  // Half the rows in 1..1000, half in 1e12..1e12+1000 (histogram of 11 bounds).
  const big = 1e12;
  const bounds = [1, 200, 400, 600, 800, 1000, big + 200, big + 400, big + 600, big + 800, big + 1000];
  const ranges = planRanges({ min: 1, max: big + 1000, rows: 2000, bounds }, 4);
  contiguous(ranges, 1, big + 1000);
  assert.equal(ranges.length, 4);
  for (const r of ranges) assert.ok(Math.abs(r.rows - 500) <= 60, `balanced: ${JSON.stringify(ranges)}`);
  assert.ok(ranges[1].hi <= 1000, "the first half of the splits covers the low cluster");
  assert.ok(ranges[2].lo >= 1000 && ranges[2].hi >= big, "the second half covers the high cluster");
});

Deno.test("pg_range planRanges: tiny id spans give fewer ranges, never empty ones; bad input is refused", () => {
  assert.deepEqual(planRanges({ min: 5, max: 5, rows: 1, bounds: [] }, 8), [{ lo: 4, hi: 5, rows: 1 }]);
  const r = planRanges({ min: 1, max: 3, rows: 3, bounds: [] }, 10);
  contiguous(r, 1, 3);
  assert.ok(r.length <= 3);
  assert.throws(() => planRanges({ min: 0, max: 2 ** 60, rows: 1, bounds: [] }, 2), /safe integer/);
  assert.throws(() => planRanges({ min: 3, max: 1, rows: 1, bounds: [] }, 2), /below min/);
  assert.deepEqual(rangesFromTiles(1, [{ hi: 10, rows: 10 }, { hi: 20, rows: 7 }]), [
    { lo: 0, hi: 10, rows: 10 },
    { lo: 10, hi: 20, rows: 7 },
  ]);
  assert.throws(() => rangesFromTiles(1, [{ hi: 10, rows: 1 }, { hi: 10, rows: 1 }]), /ascend/);
});

Deno.test("pg_range config and descriptors: every broken rule is named", async () => {
  assert.throws(
    () => parsePgRangeConfig({ url: "mysql://x", table: "a;drop", columns: [], sinkTable: "s", batchSize: 0 }),
    (e: Error) =>
      /url: must be a postgres/.test(e.message) && /table: must be `table`/.test(e.message) &&
      /columns: /.test(e.message) && /batchSize: /.test(e.message),
  );
  assert.throws(() => parsePgRangeConfig({ url: PG_URL, table: "t", columns: ["id"], sinkTable: "s" }), /repeat the id/);
  const { source, close } = pgRangeSource({ url: PG_URL, table: "t", columns: ["v"], sinkTable: "s" });
  try {
    const schema = source.descriptorSchema!;
    assert.equal(schema.safeParse({ v: 1, table: "t", idColumn: "id", lo: 0, hi: 10 }).success, true);
    const bad = schema.safeParse({ v: 1, table: "t", idColumn: "id", lo: 10, hi: 10 });
    assert.equal(bad.success, false);
    assert.equal(schema.safeParse({ v: 1, table: "t", idColumn: "id", lo: 0, hi: 2 ** 60 }).success, false);
    assert.equal(await rangeSplitId("t", "id", 0, 10), await rangeSplitId("t", "id", 0, 10));
    assert.notEqual(await rangeSplitId("t", "id", 0, 10), await rangeSplitId("t", "id", 0, 11));
  } finally {
    await close();
  }
});

Deno.test({
  name: "pg_range planTable on PostgreSQL: empty table, exact ntile ranges, skewed ids via pg_stats histogram",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using db = await scratch();
    const { sql, schema } = db;
    const table = `${schema}.src`;
    await sql.unsafe(`create table ${table} (id bigint primary key, payload text not null)`);
    // Empty: no ranges (the job completes at once).
    const empty = await planTable(sql, cfg(schema));
    assert.equal(empty.method, "empty");
    assert.deepEqual(empty.ranges, []);
    const { source: emptySource, close } = pgRangeSource(cfg(schema), { sql });
    try {
      const plan = await emptySource.plan({ term: 1, signal: new AbortController().signal });
      assert.equal(plan.finality, "final");
      assert.deepEqual([...(plan.splits as Iterable<unknown>)], [], "an empty table plans no split");
    } finally {
      await close();
    }
    // 10 000 rows, exact: 8 ranges of exactly 1250 rows.
    await sql.unsafe(`insert into ${table} select g * 3, 'p' || g from generate_series(1, 10000) g`);
    const exact = await planTable(sql, cfg(schema, { targetSplits: 8, planning: "exact" }));
    assert.equal(exact.method, "exact");
    contiguous(exact.ranges, 3, 30000);
    assert.deepEqual(exact.ranges.map((r) => r.rows), Array(8).fill(1250));
    assert.deepEqual(await countsPerRange(sql, table, exact.ranges), Array(8).fill(1250));
    // Skewed ids: 20 000 rows in a dense block, 20 000 spread thinly far above.
    await sql.unsafe(`truncate ${table}`);
    await sql.unsafe(
      `insert into ${table} select g, 'a' from generate_series(1, 20000) g
       union all select 1000000000 + g * 50000, 'b' from generate_series(1, 20000) g`,
    );
    await sql.unsafe(`analyze ${table}`);
    const hist = await planTable(sql, cfg(schema, { targetSplits: 8, planning: "histogram" }));
    assert.equal(hist.method, "histogram");
    contiguous(hist.ranges, 1, 1000000000 + 20000 * 50000);
    const actual = await countsPerRange(sql, table, hist.ranges);
    assert.equal(actual.reduce((a, b) => a + b, 0), 40000, "ranges cover every row once");
    for (const n of actual) assert.ok(n >= 3500 && n <= 6500, `balanced from statistics: ${actual}`);
    // Estimates from statistics track the real counts.
    hist.ranges.forEach((r, i) => assert.ok(Math.abs(r.rows - actual[i]) <= 1500, `estimate ${r.rows} vs ${actual[i]}`));
    // auto: small table → exact.
    const auto = await planTable(sql, cfg(schema, { targetSplits: 8 }));
    assert.equal(auto.method, "exact");
    assert.deepEqual(await countsPerRange(sql, table, auto.ranges), Array(8).fill(5000));
    await assert.rejects(planTable(sql, cfg(schema, { table: `${schema}.nope` })), /does not exist/);
    await sql.unsafe(`create table ${schema}.t2 (id text primary key)`);
    await assert.rejects(planTable(sql, cfg(schema, { table: `${schema}.t2` })), /need smallint, integer or bigint/);
  },
});

Deno.test({
  name: "pg_range fleet: deno, bun and node workers over nats-server copy a table; one SIGKILLed mid-run; nothing lost",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const started = Date.now();
    await using db = await scratch();
    await using server = await NatsServer.start();
    const { sql, schema } = db;
    const ROWS = 30_000;
    await sql.unsafe(`create table ${schema}.src (id bigint primary key, payload text not null)`);
    await sql.unsafe(
      `create table ${schema}.sink (id bigint primary key, payload text not null, copies int not null default 1)`,
    );
    // Skewed ids: a dense block and a sparse tail.
    await sql.unsafe(
      `insert into ${schema}.src select g, md5(g::text) from generate_series(1, ${ROWS / 2}) g
       union all select 10000000 + g * 997, md5(g::text) from generate_series(1, ${ROWS / 2}) g`,
    );
    const job = `pg-${schema}`;
    const env = {
      JOB: job,
      NATS_URL: server.wsUrl,
      LEASE_MS: "1200",
      OP_TIMEOUT_MS: "500",
      DRAIN_DEADLINE_MS: "2000",
      SHUTDOWN_MARGIN_MS: "2000",
      MAX_IN_FLIGHT: "3",
      PG_RANGE_CONFIG: JSON.stringify({
        url: PG_URL,
        table: `${schema}.src`,
        columns: ["payload"],
        sinkTable: `${schema}.sink`,
        copiesColumn: "copies",
        batchSize: 250,
        batchPauseMs: 60,
        targetSplits: 12,
        poolSize: 3,
      }),
    };
    const script = "examples/pg_range/main.ts";
    const procs: Proc[] = [
      spawnWorker("deno", "w-deno", script, env),
      spawnWorker("bun", "w-bun", script, env),
      spawnWorker("node", "w-node", script, env),
    ];
    try {
      const sinkCount = async () => Number((await sql.unsafe(`select count(*)::int as n from ${schema}.sink`))[0].n);
      // Kill a worker (bun by preference) once the table is a quarter done and
      // it holds unfinished splits. Any runtime will do as the victim: bun's
      // piped stdout can lag behind its work.
      const busy = (p: Proc) => {
        const count = (e: string) => p.lines.filter((l) => l.event === e).length;
        return count("gained") > count("completed");
      };
      let victim!: Proc;
      await waitFor("a quarter of the rows copied while a worker holds unfinished splits", async () => {
        const n = await sinkCount();
        if (n === ROWS) throw new Error("the copy finished before a worker could be killed");
        const v = n >= ROWS / 4 ? [procs[1], procs[0], procs[2]].find(busy) : undefined;
        if (v) victim = v;
        return v ? n : undefined;
      }, 30_000);
      const atKill = await sinkCount();
      victim.child.kill("SIGKILL");
      await victim.status;
      const survivors = procs.filter((p) => p !== victim);
      const statuses = await withTimeout(Promise.all(survivors.map((p) => p.status)), 40_000, "survivors finish");
      statuses.forEach((s, i) => assert.equal(s.code, 0, `exit 0\n${tail(survivors[i])}`));
      for (const p of survivors) {
        const f = finished(p);
        assert.equal(f?.outcome, "drained", tail(p));
        assert.equal(f?.reason, "complete", tail(p));
      }
      const [src] = await sql.unsafe(
        `select count(*)::int as n, md5(string_agg(id::text || ':' || payload, ',' order by id)) as sum from ${schema}.src`,
      );
      const [dst] = await sql.unsafe(
        `select count(*)::int as n, md5(string_agg(id::text || ':' || payload, ',' order by id)) as sum,
                (sum(copies) - count(*))::int as dups from ${schema}.sink`,
      );
      assert.equal(dst.n, src.n, "every source row is in the sink");
      assert.equal(dst.sum, src.sum, "checksums agree");
      // Every split completed in the store.
      const store = await NatsStore.connect({ servers: server.wsUrl, job });
      try {
        const splits = await store.list("split.");
        assert.equal(splits.length, 12);
        for (const e of splits) assert.equal(SplitRecordSchema.parse(JSON.parse(e.value)).status, "completed");
      } finally {
        await store.close();
      }
      // The victim's splits were taken over (not handed over) by the survivors.
      const takeovers = survivors.flatMap((p) => p.lines.filter((l) => l.msg === "Gained split" && l.kind === "takeover"));
      assert.ok(takeovers.length >= 1, "the killed worker's splits were taken over");
      // A takeover replays at most the batch in flight per lane of the victim.
      assert.ok(dst.dups <= 3 * 250, `duplicates bounded by the victim's in-flight batches (got ${dst.dups})`);
      const copied = survivors.map((p) => `${p.name}=${(finished(p)?.stats as { recordsCommitted: number }).recordsCommitted}`);
      console.log(
        `pg_range fleet: ${src.n} rows, ${dst.dups} duplicate upserts, killed at ${atKill} rows, ` +
          `${takeovers.length} takeovers, committed ${copied.join(" ")}, ${((Date.now() - started) / 1000).toFixed(1)} s`,
      );
    } catch (e) {
      for (const p of procs) console.error(tail(p, 25));
      throw e;
    } finally {
      await reap(procs);
    }
  },
});
