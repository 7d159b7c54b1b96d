/**
 * pg_range example: planner unit tests (pure and against PostgreSQL), config
 * validation, a fleet of Deno, Bun and Node workers over a real
 * nats-server copying a table while one of them is SIGKILLed, and the fenced
 * sink: a worker frozen with SIGSTOP while its write is on the wire resumes
 * after a peer took its split over, and its late write is refused.
 *
 * Needs PostgreSQL with trust auth at PG_URL: `npm test` starts one on a free
 * port (scripts/services.mjs); without PG_URL the tests that need it are
 * skipped, saying so.
 * Every test creates its own schema and drops it, even on failure.
 */
import assert from "node:assert/strict";
import { NatsStore } from "../../nats.ts";
import { SplitRecordSchema } from "../../src/records.ts";
import { SplitCoordinator, runWorker } from "../../mod.ts";
import { denoWebSocket } from "../../adapters/deno.ts";
import type { SplitProgress, Lane, SplitAnswer } from "../../mod.ts";
import { NatsServer } from "../helpers/nats_server.ts";
import {
  cutRange,
  type IdRange,
  parsePgRangeConfig,
  planRanges,
  planTable,
  pgRangeSource,
  type RangeDescriptor,
  rangesFromTiles,
  RangeDescriptorSchema,
  rangeSplitId,
  type RefusedWrite,
  type Sql,
} from "../../examples/pg_range/source.ts";
import { finished, type Proc, reap, spawnWorker, tail, waitFor, withTimeout } from "./fleet.ts";
import { createTables, scratch, sinkAgainstSource, rangeWorkerEnv } from "../helpers/pg_sink.ts";

const PG_URL: string = Deno.env.get("PG_URL") ?? "";
/** Tests that talk to PostgreSQL are skipped without one. */
const noPg = PG_URL === "";
if (noPg) console.warn("pg_range: PG_URL is not set (npm test starts PostgreSQL): the tests that need it are skipped");

function contiguous(ranges: IdRange[], min: number, max: number): void {
  assert.ok(ranges.length > 0);
  assert.equal(ranges[0].lo, min - 1, "first range starts right below min");
  assert.equal(ranges[ranges.length - 1].hi, max, "last range ends at max");
  for (let i = 0; i < ranges.length; i++) {
    assert.ok(ranges[i].lo < ranges[i].hi, `range ${i} is not empty`);
    if (i > 0) assert.equal(ranges[i].lo, ranges[i - 1].hi, `range ${i} starts where ${i - 1} ended`);
  }
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
  // No connection is opened here: any postgres:// URL will do.
  const url = PG_URL || "postgres://postgres@pg.invalid/test";
  assert.throws(() => parsePgRangeConfig({ url, table: "t", columns: ["id"], sinkTable: "s" }), /repeat the id/);
  const { source, close } = pgRangeSource({ url, table: "t", columns: ["v"], sinkTable: "s" });
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
  ignore: noPg,
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
  ignore: noPg,
  name: "pg_range fleet: deno, bun and node workers over nats-server copy a table; one SIGKILLed mid-run; nothing lost",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const started = Date.now();
    await using db = await scratch();
    await using server = await NatsServer.start();
    const { sql, schema } = db;
    const ROWS = 30_000;
    await createTables(sql, schema);
    // Skewed ids: a dense block and a sparse tail.
    await sql.unsafe(
      `insert into ${schema}.src select g, md5(g::text) from generate_series(1, ${ROWS / 2}) g
       union all select 10000000 + g * 997, md5(g::text) from generate_series(1, ${ROWS / 2}) g`,
    );
    const job = `pg-${schema}`;
    const env = rangeWorkerEnv(schema, job, { NATS_URL: server.wsUrl }, { leaseMs: 1200, opTimeoutMs: 500, maxInFlight: 3 }, {
      batchSize: 250,
      batchPauseMs: 60,
      targetSplits: 12,
      poolSize: 3,
    });
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
      await withTimeout(victim.status, 15_000, `the SIGKILLed ${victim.name} to exit`);
      const survivors = procs.filter((p) => p !== victim);
      const statuses = await withTimeout(Promise.all(survivors.map((p) => p.status)), 40_000, "survivors finish");
      statuses.forEach((s, i) => assert.equal(s.code, 0, `exit 0\n${tail(survivors[i])}`));
      for (const p of survivors) {
        const f = finished(p);
        assert.equal(f?.outcome, "drained", tail(p));
        assert.equal(f?.reason, "complete", tail(p));
      }
      const { src, dst } = await sinkAgainstSource(sql, schema);
      assert.equal(dst.n, src.n, "every source row is in the sink");
      assert.equal(dst.sum, src.sum, "checksums agree");
      // Every split completed in the store.
      const store = await NatsStore.connect({ servers: server.wsUrl, job });
      let residualSplits = 0;
      try {
        const splits = (await store.list("split.")).map((e) => SplitRecordSchema.parse(JSON.parse(e.value)));
        // The 12 planned, and the residuals of any cut idle lanes asked for (the workers have the split hook).
        assert.equal(splits.filter((r) => r.parent === undefined).length, 12);
        for (const r of splits) assert.equal(r.status, "completed");
        residualSplits = splits.length - 12;
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
          `${takeovers.length} takeovers, ${residualSplits} residual splits, committed ${copied.join(" ")}, ` +
          `${((Date.now() - started) / 1000).toFixed(1)} s`,
      );
    } catch (e) {
      for (const p of procs) console.error(tail(p, 25));
      throw e;
    } finally {
      await reap(procs);
    }
  },
});

Deno.test("pg_range cutRange: the ids left above the position, in pieces of at least minCutIds; none when too few", () => {
  const d: RangeDescriptor = { v: 1, table: "t", idColumn: "id", lo: 0, hi: 1000 };
  assert.deepEqual(cutRange(d, 100, 3, 200, 2), {
    keep: { ...d, hi: 400 },
    weight: 800,
    residuals: [{ descriptor: { ...d, lo: 400, hi: 700 }, weight: 600 }, { descriptor: { ...d, lo: 700, hi: 1000 }, weight: 600 }],
  });
  // Fewer pieces than asked rather than pieces below the minimum; none below two.
  assert.equal(cutRange(d, 100, 8, 300, 1)?.residuals.length, 2);
  assert.equal(cutRange(d, 500, 4, 300, 1), undefined);
  assert.equal(cutRange(d, 1000, 4, 1, 1), undefined);
  // The position is clamped into the range; every cut lies above it; the pieces tile (at, hi].
  for (const [at, parts] of [[-5, 17], [0, 2], [999 - 2, 2], [123, 5]] as const) {
    const cut = cutRange(d, at, parts, 1, 1)!;
    const ranges = [cut.keep, ...cut.residuals.map((r) => r.descriptor)];
    assert.equal(ranges[0].lo, 0);
    assert.ok(ranges[0].hi > Math.max(0, at), `cut above the position ${at}`);
    ranges.slice(1).forEach((r, i) => assert.equal(r.lo, ranges[i].hi));
    assert.equal(ranges[ranges.length - 1].hi, 1000);
    for (const r of ranges) assert.ok(RangeDescriptorSchema.safeParse(r).success);
  }
});

Deno.test({
  ignore: noPg,
  name: "pg_range cuts over nats-server: one big range among small ones, 3 workers: idle lanes cut its ids left; every row copied, duplicates bounded",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const started = Date.now();
    await using db = await scratch();
    await using server = await NatsServer.start();
    const { sql, schema } = db;
    const BIG = 24_000, SMALL = 600, BATCH = 200;
    const rows = BIG + 10 * SMALL;
    await createTables(sql, schema);
    await sql.unsafe(`insert into ${schema}.src select g, md5(g::text) from generate_series(1, ${rows}) g`);
    // The plan: ids (0, 24000] as one range, then ten ranges of 600.
    const ranges: IdRange[] = [{ lo: 0, hi: BIG, rows: BIG }];
    for (let k = 0; k < 10; k++) ranges.push({ lo: BIG + k * SMALL, hi: BIG + (k + 1) * SMALL, rows: SMALL });
    const job = `cuts-${schema}`;
    const stores: NatsStore[] = [];
    const pools: (() => Promise<void>)[] = [];
    try {
      const workers = await Promise.all(["a", "b", "c"].map(async (instance) => {
        const { source, close } = pgRangeSource(cfg(schema, { batchSize: BATCH, batchPauseMs: 5, minCutIds: 5 * BATCH, poolSize: 2 }));
        pools.push(close);
        const skewed = {
          ...source,
          plan: async () => ({
            finality: "final" as const,
            splits: await Promise.all(ranges.map(async (r) => ({
              id: await rangeSplitId(`${schema}.src`, "id", r.lo, r.hi),
              descriptor: { v: 1, table: `${schema}.src`, idColumn: "id", lo: r.lo, hi: r.hi },
              weight: r.rows,
            }))),
          }),
        };
        const store = await NatsStore.connect({ servers: [server.wsUrl], job, opTimeoutMs: 400, wsFactory: denoWebSocket });
        stores.push(store);
        const coordinator = await SplitCoordinator.join({
          store,
          job,
          instance,
          fingerprint: source.fingerprint(),
          planner: () => skewed.plan(),
          splittable: true,
          maxInFlight: 2,
          leaseMs: 2000,
          opTimeoutMs: 400,
          drainDeadlineMs: 1000,
        });
        return runWorker({ coordinator, source: skewed, logger: () => {}, maxInFlight: 2 });
      }));
      const outcomes = await withTimeout(Promise.all(workers), 20_000, "3 workers to copy the skewed table");
      for (const o of outcomes) assert.equal(o.kind, "drained", JSON.stringify(o));
      const ms = Date.now() - started;
      const { src, dst } = await sinkAgainstSource(sql, schema);
      assert.equal(dst.n, src.n, "every source row is in the sink");
      assert.equal(dst.sum, src.sum, "checksums agree");
      const records = (await stores[0].list("split.")).map((e) => SplitRecordSchema.parse(JSON.parse(e.value)));
      const residuals = records.filter((r) => r.parent !== undefined);
      const cuts = outcomes.reduce((n, o) => n + o.stats.cuts.performed, 0);
      assert.ok(cuts >= 1 && residuals.length >= 1, `at least one cut (cuts ${cuts}, residual splits ${residuals.length})`);
      assert.ok(records.every((r) => r.status === "completed"), "every split completed");
      for (const r of residuals) {
        const d = RangeDescriptorSchema.parse(r.descriptor);
        assert.ok(d.lo >= 0 && d.hi <= BIG, `only the big range was cut: (${d.lo}, ${d.hi}]`);
      }
      // At-least-once: a row is written again only within one batch per cut.
      assert.ok(dst.dups <= BATCH * cuts, `duplicate upserts ${dst.dups} within one batch per cut (${cuts} cuts)`);
      console.log(
        `pg_range cuts: ${src.n} rows, ${cuts} cuts, ${residuals.length} residual splits, ${dst.dups} duplicate upserts, ${ms} ms`,
      );
    } finally {
      await Promise.all(pools.map((close) => close()));
      await Promise.all(stores.map((s) => s.close()));
    }
  },
});

/** A lane driven by hand: records commits, never aborted. */
function handLane(splitId: string, epoch: number, descriptor: RangeDescriptor) {
  const commits: SplitProgress[] = [];
  let completed = false;
  const lane: Lane<RangeDescriptor> = {
    id: `${splitId}@${epoch}`,
    splitId,
    spec: { id: splitId, descriptor, weight: 1 },
    descriptor,
    epoch,
    fencingToken: { splitId, epoch },
    progress: undefined,
    signal: new AbortController().signal,
    revokeSignal: new AbortController().signal,
    commit(p) {
      commits.push(p);
      return Promise.resolve();
    },
    flush: () => Promise.resolve(),
    complete() {
      completed = true;
      return Promise.resolve();
    },
    fail: (reason) => Promise.reject(typeof reason === "string" ? new Error(reason) : reason),
  };
  return { lane, commits, completed: () => completed };
}

Deno.test({
  ignore: noPg,
  name: "pg_range fenced sink: a write at an older epoch of the same split is refused and the lane stops",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using db = await scratch();
    const { sql, schema } = db;
    await createTables(sql, schema, { fenced: true });
    await sql.unsafe(`insert into ${schema}.src select g, 'p' || g from generate_series(1, 10) g`);
    assert.throws(() => cfg(schema, { splitColumn: "split_id" }), /splitColumn and epochColumn go together/);
    assert.throws(() => cfg(schema, { splitColumn: "payload", epochColumn: "epoch" }), /splitColumn: must not be a copied/);
    const refused: RefusedWrite[] = [];
    const { source, close } = pgRangeSource(
      cfg(schema, { batchSize: 5, splitColumn: "split_id", epochColumn: "epoch" }),
      { sql, onRefused: (w) => refused.push(w) },
    );
    const d: RangeDescriptor = { v: 1, table: `${schema}.src`, idColumn: "id", lo: 0, hi: 10 };
    const rows = () => sql.unsafe(`select id::int, split_id, epoch::int, copies from ${schema}.sink order by id`);
    try {
      // The current owner (epoch 2) copies the range.
      const owner = handLane("s1", 2, d);
      await source.run(owner.lane);
      assert.ok(owner.completed());
      assert.deepEqual((await rows()).map((r) => [r.epoch, r.copies]), Array(10).fill([2, 1]));
      // A zombie of the same split (epoch 1) writes late: refused, no commit, it stops.
      const zombie = handLane("s1", 1, d);
      await source.run(zombie.lane);
      assert.deepEqual(refused, [{ splitId: "s1", epoch: 1, rows: 5, refused: 5, firstId: 1, lastId: 5 }]);
      assert.deepEqual(zombie.commits, [], "the zombie committed nothing");
      assert.equal(zombie.completed(), false);
      assert.deepEqual((await rows()).map((r) => [r.epoch, r.copies]), Array(10).fill([2, 1]), "rows keep epoch 2");
      // The same tenancy writing again (a retried batch) and a newer one are accepted.
      await source.run(handLane("s1", 2, d).lane);
      await source.run(handLane("s1", 3, { ...d, hi: 5 }).lane);
      assert.deepEqual((await rows()).map((r) => [r.epoch, r.copies]), [...Array(5).fill([3, 3]), ...Array(5).fill([2, 2])]);
      // A late batch of epoch 2 over ids 3..7 straddles them: ids 3-5 (epoch 3) are refused, 6-7 (its own) are not.
      // Refused in part is refused: the lane stops without committing.
      const straddling = handLane("s1", 2, { ...d, lo: 2 });
      await source.run(straddling.lane);
      assert.deepEqual(refused[1], { splitId: "s1", epoch: 2, rows: 5, refused: 3, firstId: 3, lastId: 7 });
      assert.deepEqual(straddling.commits, [], "a batch refused in part commits nothing");
      assert.equal(straddling.completed(), false);
      assert.deepEqual((await rows()).map((r) => [r.epoch, r.copies]), [...Array(5).fill([3, 3]), [2, 3], [2, 3], ...Array(3).fill([2, 2])]);
      // Another split's epochs are not comparable: its write lands.
      await source.run(handLane("s2", 1, { ...d, hi: 5 }).lane);
      assert.deepEqual((await rows()).slice(0, 5).map((r) => [r.split_id, r.epoch]), Array(5).fill(["s2", 1]));
      assert.equal(refused.length, 2, "only the zombies were refused");
    } finally {
      await close();
    }
  },
});

Deno.test({
  ignore: noPg,
  name: "pg_range split mid-run: a cut while a batch is written keeps it; a cut while reading drops rows read past it; residuals copy the rest once",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using db = await scratch();
    const { sql, schema } = db;
    await createTables(sql, schema);
    await sql.unsafe(`insert into ${schema}.src select g, 'p' || g from generate_series(1, 100) g`);
    const d: RangeDescriptor = { v: 1, table: `${schema}.src`, idColumn: "id", lo: 0, hi: 100 };
    for (const when of ["write", "read"] as const) {
      await sql.unsafe(`truncate ${schema}.sink`);
      const hand = handLane("s1", 1, d);
      let calls = 0;
      let cut: SplitAnswer<RangeDescriptor> | undefined;
      // The leader's ask lands while the third batch is being read or written.
      const asking = (real: Sql, on: "read" | "write") =>
        ({
          unsafe: async (q: string, params: unknown[]) => {
            if (on === when && ++calls === 3) {
              // 17 pieces of the 70-80 ids left: narrower than a batch.
              cut = source.split!(hand.lane, { parts: 17, fraction: 1 / 17 });
              if (cut) (hand.lane as { descriptor: RangeDescriptor }).descriptor = cut.keep;
            }
            return await real.unsafe(q, params as never);
          },
        }) as unknown as Sql;
      const { source } = pgRangeSource(cfg(schema, { batchSize: 10, minCutIds: 1 }), { sql: asking(sql, "read"), sinkSql: asking(sql, "write") });
      await source.run(hand.lane);
      assert.ok(cut, `cut while ${when === "write" ? "writing" : "reading"}`);
      assert.ok(hand.completed(), "the lane completes what it keeps");
      // Writing batch 3 (ids 21-30): kept whole, cut above 30. Reading batch 3: cut above 20 and below 30, the rows read past it dropped.
      const kept = cut.keep.hi;
      assert.ok(when === "write" ? kept > 30 : kept > 20 && kept < 30, `kept (0, ${kept}]`);
      assert.equal(cut.residuals.length, 16);
      const [mine] = await sql.unsafe(`select count(*)::int as n, max(id)::int as top from ${schema}.sink`);
      assert.deepEqual([mine.n, mine.top], [kept, kept], "the lane copied exactly its kept range");
      assert.deepEqual(hand.commits.at(-1)?.estimate, { left: 0, total: kept, unit: "ids" }, "its last commit estimates the kept range");
      for (const r of cut.residuals) {
        const other = handLane(`s1-${r.descriptor.lo}`, 1, r.descriptor);
        await source.run(other.lane);
        assert.ok(other.completed());
      }
      const [all] = await sql.unsafe(`select count(*)::int as n, max(copies)::int as most from ${schema}.sink`);
      assert.deepEqual([all.n, all.most], [100, 1], `every row copied exactly once (cut while ${when === "write" ? "writing" : "reading"})`);
    }
  },
});

/**
 * A TCP proxy that can hold what a client sends: `hold()` keeps
 * client-to-server bytes (the write is "on the wire" but has not reached the
 * server), `release()` delivers them in order. Server-to-client always flows.
 */
class HoldingProxy implements AsyncDisposable {
  readonly port: number;
  heldBytes = 0;
  #listener: Deno.Listener;
  #conns = new Set<Deno.Conn>();
  #holding = false;
  #held: { to: Deno.Conn; data: Uint8Array }[] = [];

  constructor(targetPort: number) {
    this.#listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    this.port = (this.#listener.addr as Deno.NetAddr).port;
    this.#accept(targetPort);
  }

  async #accept(targetPort: number): Promise<void> {
    try {
      for await (const client of this.#listener) {
        this.#conns.add(client);
        Deno.connect({ hostname: "127.0.0.1", port: targetPort }).then((upstream) => {
          this.#conns.add(upstream);
          this.#pump(client, upstream, true);
          this.#pump(upstream, client, false);
        }).catch(() => client.close());
      }
    } catch { /* closed */ }
  }

  async #pump(from: Deno.Conn, to: Deno.Conn, holdable: boolean): Promise<void> {
    const buf = new Uint8Array(64 * 1024);
    try {
      for (;;) {
        const n = await from.read(buf);
        if (n === null) break;
        if (holdable && this.#holding) {
          this.#held.push({ to, data: buf.slice(0, n) });
          this.heldBytes += n;
          continue;
        }
        let off = 0;
        while (off < n) off += await to.write(buf.subarray(off, n));
      }
    } catch { /* closed */ }
    for (const c of [from, to]) {
      try {
        c.close();
      } catch { /* closed */ }
    }
  }

  hold(): void {
    this.#holding = true;
  }

  async release(): Promise<void> {
    this.#holding = false;
    for (const { to, data } of this.#held.splice(0)) {
      let off = 0;
      while (off < data.length) off += await to.write(data.subarray(off));
    }
  }

  [Symbol.asyncDispose](): Promise<void> {
    try {
      this.#listener.close();
    } catch { /* closed */ }
    for (const c of this.#conns) {
      try {
        c.close();
      } catch { /* closed */ }
    }
    return Promise.resolve();
  }
}

Deno.test({
  ignore: noPg,
  name: "pg_range fenced sink over nats-server: a SIGSTOPped zombie's late write is refused after a peer took over",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using db = await scratch();
    await using server = await NatsServer.start();
    const { sql, schema } = db;
    const ROWS = 4000, BATCH = 200;
    await createTables(sql, schema, { fenced: true });
    await sql.unsafe(`insert into ${schema}.src select g, md5(g::text) from generate_series(1, ${ROWS}) g`);
    // The zombie reaches its sink through a proxy that can hold a write on the wire.
    const pg = new URL(PG_URL);
    await using proxy = new HoldingProxy(Number(pg.port || 5432));
    const sinkViaProxy = new URL(PG_URL);
    sinkViaProxy.port = String(proxy.port);
    const config = (sinkUrl?: string) =>
      JSON.stringify({
        url: PG_URL,
        ...(sinkUrl ? { sinkUrl } : {}),
        table: `${schema}.src`,
        columns: ["payload"],
        sinkTable: `${schema}.sink`,
        copiesColumn: "copies",
        splitColumn: "split_id",
        epochColumn: "epoch",
        batchSize: BATCH,
        batchPauseMs: 40,
        targetSplits: 1,
        minCutIds: ROWS, // one split, never cut: the peer gets it by takeover only
        poolSize: 1,
      });
    const env = {
      JOB: `fence-${schema}`,
      NATS_URL: server.wsUrl,
      LEASE_MS: "1000",
      OP_TIMEOUT_MS: "400",
      DRAIN_DEADLINE_MS: "1000",
      SHUTDOWN_MARGIN_MS: "2000",
    };
    const script = "examples/pg_range/main.ts";
    const procs: Proc[] = [];
    const sinkRows = async () => Number((await sql.unsafe(`select count(*)::int as n from ${schema}.sink`))[0].n);
    try {
      // The zombie-to-be holds the only split and copies a few batches.
      const zombie = spawnWorker("deno", "w-zombie", script, { ...env, PG_RANGE_CONFIG: config(sinkViaProxy.href) });
      procs.push(zombie);
      const gained = await waitFor("the first worker gains the split", () => zombie.lines.find((l) => l.event === "gained"));
      const zombieEpoch = Number(gained.epoch);
      await waitFor("two batches copied", async () => (await sinkRows()) >= 2 * BATCH || undefined);
      // Hold the zombie's next sink write on the wire: it waits for the reply,
      // still heartbeating, so it keeps the split (and cannot finish it).
      proxy.hold();
      await waitFor("a zombie write on the wire", () => proxy.heldBytes > 0 || undefined);
      const peer = spawnWorker("node", "w-peer", script, { ...env, PG_RANGE_CONFIG: config() });
      procs.push(peer);
      await waitFor("the peer serves", () => peer.lines.find((l) => l.event === "serving"));
      // Freeze the zombie: it stops heartbeating, and its write stays on the wire.
      zombie.child.kill("SIGSTOP");
      const [{ w }] = await sql.unsafe(`select max(id)::int as w from ${schema}.sink`);
      const watermark = Number(w);
      assert.ok(watermark < ROWS, "the zombie stopped mid-range");
      // The peer takes the split over at a higher epoch and copies the rest.
      const taken = await waitFor("the peer takes the split over", () => peer.lines.find((l) => l.event === "gained"));
      const peerEpoch = Number(taken.epoch);
      assert.ok(peerEpoch > zombieEpoch, `a takeover moves the epoch (${zombieEpoch} -> ${peerEpoch})`);
      await waitFor("the peer completes the split", () => peer.lines.find((l) => l.event === "completed"));
      assert.equal(await sinkRows(), ROWS);
      // The zombie wakes up and its write, held until now, reaches PostgreSQL late.
      zombie.child.kill("SIGCONT");
      await proxy.release();
      const refusedLine = await waitFor("the zombie's write is refused", () => zombie.lines.find((l) => l.event === "sinkRefused"));
      const statuses = await withTimeout(Promise.all(procs.map((p) => p.status)), 30_000, "both workers exit");
      statuses.forEach((st, i) => assert.equal(st.code, 0, tail(procs[i])));
      // Counted: one refused write, the whole held batch, at the zombie's epoch.
      const refusals = zombie.lines.filter((l) => l.event === "sinkRefused");
      assert.equal(refusals.length, 1, tail(zombie));
      assert.equal(refusedLine.epoch, zombieEpoch);
      assert.equal(refusedLine.rows, BATCH);
      assert.equal(refusedLine.refused, BATCH, "every row of the late write was refused");
      assert.equal(refusedLine.firstId, watermark + 1, "the late write was the batch after the committed watermark");
      // The rows keep the newer epoch: nothing of the late write landed.
      const [after] = await sql.unsafe(
        `select count(*)::int as n, (sum(copies) - count(*))::int as dups,
                count(*) filter (where id > ${watermark} and epoch <> ${peerEpoch})::int as overwritten,
                count(*) filter (where id <= ${watermark} and epoch <> ${zombieEpoch})::int as moved,
                md5(string_agg(id::text || ':' || payload, ',' order by id)) as sum from ${schema}.sink`,
      );
      const [src] = await sql.unsafe(
        `select md5(string_agg(id::text || ':' || payload, ',' order by id)) as sum from ${schema}.src`,
      );
      assert.equal(after.n, ROWS);
      assert.equal(after.sum, src.sum, "the sink is the source");
      assert.equal(after.overwritten, 0, "rows past the watermark keep the peer's epoch");
      assert.equal(after.moved, 0, "rows up to the watermark keep the zombie's (committed) epoch");
      assert.equal(after.dups, 0, "no row was written twice: the peer resumed at the watermark, the late write was refused");
      console.log(
        `fenced sink: zombie epoch ${zombieEpoch} frozen at ${watermark} rows, peer epoch ${peerEpoch}; ` +
          `${refusals.length} late write refused (${refusedLine.refused} rows)`,
      );
    } catch (e) {
      for (const p of procs) console.error(tail(p, 25));
      throw e;
    } finally {
      for (const p of procs) {
        try {
          p.child.kill("SIGCONT");
        } catch { /* gone */ }
      }
      await reap(procs);
    }
  },
});
