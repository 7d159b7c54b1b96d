/**
 * PostgreSQL range scan under splitlease: the leader plans balanced id ranges
 * of a table from its id distribution; workers copy their range to a sink
 * table in keyset-paginated batches with an idempotent upsert, committing the
 * last id copied as the watermark (a takeover resumes right after it).
 * A running range can be cut for idle workers (`split`): the ids left after
 * the last one copied (or being copied) are cut into ranges of at least
 * `minCutIds`; commits carry an estimate of the ids left.
 * With `splitColumn` and `epochColumn` the sink is fenced: every row carries
 * the lane's fencing token, and the upsert refuses to overwrite a row that a
 * newer tenancy of the same split wrote, so a paused process that resumes
 * after its split moved on cannot overwrite the new owner's rows.
 *
 * Planning stays cheap on big tables: `min(id)`/`max(id)` are two index
 * probes, and the distribution comes from the planner statistics ANALYZE
 * keeps (`pg_stats.histogram_bounds`: ~100 equal-population buckets over a
 * sample, plus `pg_class.reltuples`), so no row is read. Small tables (below
 * `exactMaxRows`) or tables without statistics are planned exactly with one
 * `ntile()` pass over the primary-key index instead. See README.md.
 *
 * @module
 */
import postgres from "postgres";
import { z } from "zod";
import { FencedError, SplitleaseError, splitIdFrom } from "../../mod.ts";
import type { PlanContext, PlannedSplit, PlanResult, Lane, SplitSource } from "../../mod.ts";

/** A postgres.js client (any options). */
// deno-lint-ignore no-explicit-any
export type Sql = postgres.Sql<any>;

const IDENT = /^[A-Za-z_][A-Za-z0-9_$]{0,62}$/;
const identifier = z.string().regex(IDENT, "must be a plain SQL identifier ([A-Za-z_][A-Za-z0-9_$]*, at most 63 chars)");
const qualified = z.string().refine(
  (s) => s.split(".").length <= 2 && s.split(".").every((p) => IDENT.test(p)),
  "must be `table` or `schema.table` of plain SQL identifiers",
);

/** Configuration of {@linkcode pgRangeSource}. */
export const PgRangeConfigSchema = z.object({
  /** Connection URL of the source database (`postgres://user@host:5432/db`). */
  url: z.string().regex(/^postgres(ql)?:\/\//, "must be a postgres:// or postgresql:// URL"),
  /** Connection URL of the sink database (default: `url`). */
  sinkUrl: z.string().regex(/^postgres(ql)?:\/\//, "must be a postgres:// or postgresql:// URL").optional(),
  /** Source table (`table` or `schema.table`). */
  table: qualified,
  /** Integer key column (smallint, integer or bigint), unique; indexed for keyset scans. */
  idColumn: identifier.default("id"),
  /** Columns copied to the sink (the id column is always copied). */
  columns: z.array(identifier).min(1).max(1600),
  /** Sink table: same column names, a unique constraint on the id column. */
  sinkTable: qualified,
  /**
   * Optional integer column of the sink counting how often a row was written:
   * 1 on insert, + 1 on every upsert of an already-present id (a replay).
   */
  copiesColumn: identifier.optional(),
  /**
   * Fenced sink: a text column of the sink that receives the split id of the
   * writing tenancy (give `epochColumn` with it).
   */
  splitColumn: identifier.optional(),
  /**
   * Fenced sink: an integer (bigint) column of the sink that receives the
   * writing tenancy's epoch. A row is only overwritten by a write of another
   * split or of the same split at an equal or higher epoch; the lane stops
   * when its write is refused (give `splitColumn` with it).
   */
  epochColumn: identifier.optional(),
  /**
   * Same-transaction sink: each batch's upsert and its progress commit in
   * ONE transaction on the coordination store's database (the worker must
   * run on a PostgresStore, and `sinkTable` must be in the store's
   * database). A lane that lost its split has its rows rolled back with its
   * refused commit, so every row is written exactly once, without a fenced
   * sink; `sinkUrl` does not apply.
   */
  transaction: z.boolean().default(false),
  /** Rows per batch (one read, one upsert, one commit). */
  batchSize: z.number().int().min(1).max(100_000).default(1000),
  /** Number of ranges to plan (fewer when the table has fewer distinct ids). */
  targetSplits: z.number().int().min(1).max(100_000).default(64),
  /** `auto` (default): `exact` below `exactMaxRows` or without statistics, `histogram` above. */
  planning: z.enum(["auto", "exact", "histogram"]).default("auto"),
  /** Row estimate below which `auto` plans exactly with one ntile() pass. */
  exactMaxRows: z.number().int().min(0).default(1_000_000),
  /**
   * Least ids of a piece when a running range is cut for idle workers
   * (default 10 × `batchSize`): a cut makes fewer pieces than asked rather
   * than smaller ones, and none when less than twice this is left.
   */
  minCutIds: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
  /** Pause between batches (rate limit), ms. */
  batchPauseMs: z.number().int().min(0).max(60_000).default(0),
  /** Retries of a batch on transient database errors before the split is failed. */
  retries: z.number().int().min(0).max(100).default(5),
  /** Connections per pool (source and sink each). */
  poolSize: z.number().int().min(1).max(100).default(4),
}).superRefine((c, ctx) => {
  if (c.columns.includes(c.idColumn)) {
    ctx.addIssue({ code: "custom", path: ["columns"], message: `must not repeat the id column ${c.idColumn}` });
  }
  if (new Set(c.columns).size !== c.columns.length) {
    ctx.addIssue({ code: "custom", path: ["columns"], message: "must not contain duplicates" });
  }
  if (c.copiesColumn && (c.copiesColumn === c.idColumn || c.columns.includes(c.copiesColumn))) {
    ctx.addIssue({ code: "custom", path: ["copiesColumn"], message: "must not be a copied column" });
  }
  if ((c.splitColumn === undefined) !== (c.epochColumn === undefined)) {
    ctx.addIssue({ code: "custom", path: ["epochColumn"], message: "splitColumn and epochColumn go together" });
  }
  for (const key of ["splitColumn", "epochColumn"] as const) {
    const col = c[key];
    if (col && (col === c.idColumn || c.columns.includes(col) || col === c.copiesColumn)) {
      ctx.addIssue({ code: "custom", path: [key], message: "must not be a copied or counting column" });
    }
  }
  if (c.splitColumn && c.splitColumn === c.epochColumn) {
    ctx.addIssue({ code: "custom", path: ["epochColumn"], message: "must differ from splitColumn" });
  }
  if (c.transaction && c.sinkUrl !== undefined) {
    ctx.addIssue({ code: "custom", path: ["sinkUrl"], message: "does not apply with transaction: the sink is the store's database" });
  }
});

/** Input form of the config (defaults optional). */
export type PgRangeConfigInput = z.input<typeof PgRangeConfigSchema>;
/** Validated config. */
export type PgRangeConfig = z.output<typeof PgRangeConfigSchema>;

/** Validates a config; throws `INVALID_CONFIG` naming every broken rule. */
export function parsePgRangeConfig(input: unknown): PgRangeConfig {
  const r = PgRangeConfigSchema.safeParse(input);
  if (!r.success) {
    const issues = r.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`);
    throw new SplitleaseError("INVALID_CONFIG", `invalid pg_range config: ${issues.join("; ")}`);
  }
  return r.data;
}

const safeInt = z.number().int().min(Number.MIN_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER);

/** Descriptor of one range split: ids in `(lo, hi]` of `table`. */
export const RangeDescriptorSchema = z.object({
  v: z.literal(1),
  table: qualified,
  idColumn: identifier,
  /** Exclusive lower bound. */
  lo: safeInt,
  /** Inclusive upper bound. */
  hi: safeInt,
}).refine((d) => d.lo < d.hi, { message: "lo must be below hi", path: ["hi"] });

/** A range split's descriptor. */
export type RangeDescriptor = z.output<typeof RangeDescriptorSchema>;

/** A planned id range `(lo, hi]` and its estimated row count. */
export interface IdRange {
  /** Exclusive lower bound. */
  lo: number;
  /** Inclusive upper bound. */
  hi: number;
  /** Estimated (or, when planned exactly, counted) rows. */
  rows: number;
}

/** Statistics a plan is computed from. */
export interface IdStats {
  /** Smallest id (exact). */
  min: number;
  /** Largest id (exact). */
  max: number;
  /** Estimated row count. */
  rows: number;
  /**
   * Equal-population quantile points of the ids, ascending (a histogram's
   * bounds). Empty: ids are assumed uniform over `[min, max]`.
   */
  bounds: readonly number[];
}

function assertSafe(what: string, n: number): void {
  if (!Number.isSafeInteger(n)) {
    throw new SplitleaseError(
      "INVALID_ARGUMENT",
      `${what} ${n} is not a safe integer: ids must lie within ±${Number.MAX_SAFE_INTEGER}`,
    );
  }
}

/**
 * Plans at most `targetSplits` ranges covering `[min, max]` exactly (the
 * first starts at `min - 1` exclusive, the last ends at `max` inclusive,
 * each starts where the previous ended), cut at equal-population quantiles of
 * the histogram so skewed ids still give balanced row counts. Pure.
 */
export function planRanges(stats: IdStats, targetSplits: number): IdRange[] {
  const { min, max } = stats;
  assertSafe("min id", min);
  assertSafe("max id", max);
  assertSafe("min id - 1", min - 1);
  if (max < min) throw new SplitleaseError("INVALID_ARGUMENT", `max id ${max} is below min id ${min}`);
  if (!Number.isInteger(targetSplits) || targetSplits < 1) {
    throw new SplitleaseError("INVALID_ARGUMENT", `targetSplits must be an integer >= 1 (got ${targetSplits})`);
  }
  const rows = Math.max(0, stats.rows);
  // Points of equal population: the histogram clamped to the exact [min, max].
  const inner = [...stats.bounds].filter((b) => Number.isFinite(b) && b > min && b < max).sort((a, b) => a - b);
  // Id k stands for the unit interval (k - 1, k], so (lo, hi] holds hi - lo ids.
  const pts = [min - 1, ...inner, max];
  const m = pts.length - 1; // buckets
  const quantile = (q: number): number => {
    const t = q * m;
    const j = Math.min(m - 1, Math.floor(t));
    return pts[j] + (t - j) * (pts[j + 1] - pts[j]);
  };
  const cdf = (x: number): number => {
    if (x <= min - 1) return 0;
    if (x >= max || m === 0) return 1;
    let j = 0;
    while (j < m - 1 && pts[j + 1] <= x) j++;
    const w = pts[j + 1] - pts[j];
    return w <= 0 ? (j + 1) / m : (j + (x - pts[j]) / w) / m;
  };
  const cuts: number[] = [];
  for (let i = 1; i < targetSplits; i++) {
    const c = Math.floor(quantile(i / targetSplits));
    const prev = cuts.length ? cuts[cuts.length - 1] : min - 1;
    if (c > prev && c >= min && c < max) cuts.push(c);
  }
  const edges = [min - 1, ...cuts, max];
  const out: IdRange[] = [];
  for (let i = 0; i + 1 < edges.length; i++) {
    const lo = edges[i];
    const hi = edges[i + 1];
    out.push({ lo, hi, rows: Math.round(rows * (cdf(hi) - cdf(lo))) });
  }
  return out;
}

/**
 * Ranges from exact tiles: `tiles[i]` is the largest id of tile `i` and its
 * row count, ascending (what an ntile() pass returns). Exact boundaries and
 * counts. Pure.
 */
export function rangesFromTiles(min: number, tiles: readonly { hi: number; rows: number }[]): IdRange[] {
  assertSafe("min id - 1", min - 1);
  const out: IdRange[] = [];
  let lo = min - 1;
  for (const t of tiles) {
    assertSafe("tile bound", t.hi);
    if (t.hi <= lo) throw new SplitleaseError("INVALID_ARGUMENT", `tiles must ascend (got ${t.hi} after ${lo})`);
    out.push({ lo, hi: t.hi, rows: t.rows });
    lo = t.hi;
  }
  return out;
}

/** Double-quotes an identifier (or `schema.table`) for SQL text. */
export function quoteIdent(name: string): string {
  return name.split(".").map((p) => `"${p.replaceAll('"', '""')}"`).join(".");
}

function toId(v: unknown, what: string): number {
  const n = typeof v === "number" ? v : typeof v === "bigint" ? Number(v) : Number(String(v));
  assertSafe(what, n);
  return n;
}

/** How a plan was computed (for logs and tests). */
export interface RangePlanInfo {
  /** `exact` (ntile pass), `histogram` (pg_stats) or `uniform` (no statistics) or `empty`. */
  method: "exact" | "histogram" | "uniform" | "empty";
  /** The planned ranges. */
  ranges: IdRange[];
  /** `pg_class.reltuples` (-1: never analyzed). */
  reltuples: number;
}

/**
 * Reads the id distribution of `config.table` and plans balanced ranges.
 * Cheap on big tables (see the module doc); exact on small ones.
 */
export async function planTable(sql: Sql, config: PgRangeConfig): Promise<RangePlanInfo> {
  const table = quoteIdent(config.table);
  const id = quoteIdent(config.idColumn);
  const meta = await sql`
    select c.reltuples::float8 as reltuples, n.nspname as schema, c.relname as name,
           format_type(a.atttypid, a.atttypmod) as idtype
      from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
      left join pg_attribute a on a.attrelid = c.oid and a.attname = ${config.idColumn} and not a.attisdropped
     where c.oid = to_regclass(${table})`;
  if (meta.length === 0) {
    throw new SplitleaseError("INVALID_CONFIG", `table ${config.table} does not exist`);
  }
  const { reltuples, schema, name, idtype } = meta[0] as {
    reltuples: number;
    schema: string;
    name: string;
    idtype: string | null;
  };
  if (idtype === null) throw new SplitleaseError("INVALID_CONFIG", `${config.table} has no column ${config.idColumn}`);
  if (!["smallint", "integer", "bigint"].includes(idtype)) {
    throw new SplitleaseError(
      "INVALID_CONFIG",
      `${config.table}.${config.idColumn} is ${idtype}; range scans need smallint, integer or bigint ids`,
    );
  }
  const [ends] = await sql.unsafe(`select min(${id})::text as min, max(${id})::text as max from ${table}`);
  if (ends.min === null) return { method: "empty", ranges: [], reltuples };
  const min = toId(ends.min, "min id");
  const max = toId(ends.max, "max id");
  const hist = await sql`
    select histogram_bounds::text::text[] as bounds from pg_stats
     where schemaname = ${schema} and tablename = ${name} and attname = ${config.idColumn}`;
  const bounds = (hist[0]?.bounds as string[] | null | undefined)?.map((b) => Number(b)) ?? [];
  const exact = config.planning === "exact" ||
    (config.planning === "auto" && (bounds.length === 0 || reltuples < 0 || reltuples < config.exactMaxRows));
  if (exact) {
    const tiles = await sql.unsafe(
      `select max(i)::text as hi, count(*)::int as rows
         from (select ${id} as i, ntile($1) over (order by ${id}) as t from ${table}) x
        group by t order by t`,
      [config.targetSplits],
    );
    return {
      method: "exact",
      ranges: rangesFromTiles(min, tiles.map((t) => ({ hi: toId(t.hi, "tile bound"), rows: Number(t.rows) }))),
      reltuples,
    };
  }
  const rows = reltuples > 0 ? reltuples : max - min + 1;
  return {
    method: bounds.length > 0 ? "histogram" : "uniform",
    ranges: planRanges({ min, max, rows, bounds }, config.targetSplits),
    reltuples,
  };
}

/** The split id of a range: deterministic from table, id column and bounds. */
export function rangeSplitId(table: string, idColumn: string, lo: number, hi: number): Promise<string> {
  return splitIdFrom(["pg_range", table, idColumn, lo, hi]);
}

const TRANSIENT = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "CONNECT_TIMEOUT",
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now
  "53300", // too_many_connections
  "40001", // serialization_failure
  "40P01", // deadlock_detected
]);

/** A batch the fence refused inside a transaction: rolls the transaction back, then the lane stops. */
class RefusedBatch extends Error {}

/** Whether a database error is worth retrying (connection loss, shutdown, serialization). */
export function isTransient(e: unknown): boolean {
  const code = (e as { code?: unknown })?.code;
  return typeof code === "string" && TRANSIENT.has(code);
}

function sleep(ms: number, signals: AbortSignal[]): Promise<void> {
  return new Promise((resolve) => {
    if (signals.some((s) => s.aborted)) return resolve();
    const done = () => {
      clearTimeout(t);
      for (const s of signals) s.removeEventListener("abort", done);
      resolve();
    };
    const t = setTimeout(done, ms);
    for (const s of signals) s.addEventListener("abort", done, { once: true });
  });
}

/** Options of {@linkcode pgRangeSource} beyond the config. */
export interface PgRangeDeps {
  /** Source client (default: a pool on `config.url`, closed by `close()`). */
  sql?: Sql;
  /** Sink client (default: `sql`, or a pool on `config.sinkUrl`). */
  sinkSql?: Sql;
  /** Called after each batch landed in the sink (tests, metrics). */
  onBatch?: (info: { splitId: string; rows: number; lastId: number }) => void;
  /**
   * Fenced sink only: called when a batch write was refused, in whole or in
   * part, because a newer tenancy of the split already wrote those rows. The
   * lane stops right after (it is a zombie: its split moved on).
   */
  onRefused?: (info: RefusedWrite) => void;
}

/** A sink write the fence refused (see {@linkcode PgRangeDeps.onRefused}). */
export interface RefusedWrite {
  /** The split of the refused lane. */
  splitId: string;
  /** The refused lane's epoch (older than the one stored with the rows). */
  epoch: number;
  /** Rows in the batch. */
  rows: number;
  /** Rows the fence refused to overwrite. */
  refused: number;
  /** First and last id of the batch. */
  firstId: number;
  lastId: number;
}

/** A range-scan source and the pools it opened. */
export interface PgRangeSource {
  /** The source to serve. */
  source: SplitSource<RangeDescriptor>;
  /** Closes the pools this source opened (not the ones passed in). */
  close(): Promise<void>;
}

/**
 * Cuts the ids of `d` left after `at` (ids in `(at, d.hi]`) into at most
 * `parts` ranges of at least `minIds` ids each (fewer when too little is
 * left, `undefined` when not even two): the range the lane keeps, `(d.lo,
 * first cut]`, and the residual ranges after it. Every cut lies above `at`.
 * Weights are the ids of each range × `rowsPerId`. Pure.
 *
 * @example
 * ```ts
 * import { cutRange } from "./source.ts";
 * const d = { v: 1 as const, table: "t", idColumn: "id", lo: 0, hi: 1000 };
 * const cut = cutRange(d, 100, 3, 200, 1);
 * // keep (0, 400]; residuals (400, 700], (700, 1000]
 * console.log(cut?.keep.hi, cut?.residuals.map((r) => [r.descriptor.lo, r.descriptor.hi]));
 * ```
 */
export function cutRange(
  d: RangeDescriptor,
  at: number,
  parts: number,
  minIds: number,
  rowsPerId: number,
): { keep: RangeDescriptor; weight: number; residuals: { descriptor: RangeDescriptor; weight: number }[] } | undefined {
  const from = Math.max(d.lo, Math.min(at, d.hi));
  const left = d.hi - from;
  const n = Math.min(Math.floor(parts), Math.floor(left / Math.max(1, minIds)));
  if (!(n >= 2)) return undefined;
  const step = Math.floor(left / n);
  const ends = Array.from({ length: n }, (_, k) => (k === n - 1 ? d.hi : from + step * (k + 1)));
  const weight = (lo: number, hi: number) => Math.max(1, Math.round((hi - lo) * rowsPerId));
  return {
    keep: { ...d, hi: ends[0] },
    weight: weight(d.lo, ends[0]),
    residuals: ends.slice(1).map((hi, k) => ({ descriptor: { ...d, lo: ends[k], hi }, weight: weight(ends[k], hi) })),
  };
}

/**
 * Builds the range-scan source. The plan is final: the job completes once
 * every range is copied. Each batch is one keyset read
 * (`where id > $last and id <= $hi order by id limit n`), one upsert into the
 * sink and one fenced commit of the last id (with the ids left as an
 * estimate); a takeover resumes after the last committed id and may replay
 * one batch, which the upsert absorbs.
 *
 * `split` cuts a running range's ids left ({@linkcode cutRange}) above the
 * last id the lane copied or is writing, so the batch in flight stays with
 * it; `run` reads `lane.descriptor.hi` again for every batch and drops rows
 * of a batch read across a cut, so it copies nothing outside the range it
 * keeps.
 */
export function pgRangeSource(input: PgRangeConfigInput, deps: PgRangeDeps = {}): PgRangeSource {
  const config = parsePgRangeConfig(input);
  const own: Sql[] = [];
  const open = (url: string) => {
    const s = postgres(url, { max: config.poolSize, onnotice: () => {}, connect_timeout: 10 });
    own.push(s);
    return s;
  };
  const sql = deps.sql ?? open(config.url);
  const sink = deps.sinkSql ?? (config.sinkUrl && config.sinkUrl !== config.url ? open(config.sinkUrl) : sql);

  const id = quoteIdent(config.idColumn);
  const cols = [config.idColumn, ...config.columns];
  const colList = cols.map(quoteIdent).join(", ");
  const readText = `select ${colList} from ${quoteIdent(config.table)}
     where ${id} > $1 and ${id} <= $2 order by ${id} limit $3`;
  const sinkTable = quoteIdent(config.sinkTable);
  const fenced = config.splitColumn !== undefined && config.epochColumn !== undefined;
  // Fenced: the token travels in each row, typed by the sink like the data.
  const written = fenced ? [...cols, config.splitColumn!, config.epochColumn!] : cols;
  const writtenList = written.map(quoteIdent).join(", ");
  const updates = [...config.columns, ...(fenced ? [config.splitColumn!, config.epochColumn!] : [])]
    .map((c) => `${quoteIdent(c)} = excluded.${quoteIdent(c)}`);
  if (config.copiesColumn) {
    const cc = quoteIdent(config.copiesColumn);
    updates.push(`${cc} = ${sinkTable}.${cc} + 1`);
  }
  // The fence: a row stored by a newer tenancy of the same split is not
  // overwritten (an equal epoch is the same tenancy retrying: allowed). A row
  // of another split (overlapping plans) is not comparable and is written.
  const fence = fenced
    ? `\n     where ${sinkTable}.${quoteIdent(config.splitColumn!)} is distinct from excluded.${
      quoteIdent(config.splitColumn!)
    } or ${sinkTable}.${quoteIdent(config.epochColumn!)} <= excluded.${quoteIdent(config.epochColumn!)}`
    : "";
  // jsonb_populate_recordset types every value by the sink's own row type.
  const writeText = `insert into ${sinkTable} (${writtenList}${config.copiesColumn ? `, ${quoteIdent(config.copiesColumn)}` : ""})
     select ${writtenList}${config.copiesColumn ? ", 1" : ""} from jsonb_populate_recordset(null::${sinkTable}, $1::jsonb)
     on conflict (${id}) do update set ${updates.join(", ")}${fence}`;

  const minCutIds = config.minCutIds ?? 10 * config.batchSize;
  /** Running lanes (by lane id): the highest id each has copied or is writing. */
  const reached = new Map<string, () => number>();

  async function withRetry<T>(lane: Lane<RangeDescriptor>, fn: () => Promise<T>): Promise<T> {
    for (let attempt = 0;; attempt++) {
      try {
        return await fn();
      } catch (e) {
        if (!isTransient(e) || attempt >= config.retries || lane.signal.aborted) throw e;
        await sleep(Math.min(5000, 200 * 2 ** attempt), [lane.signal]);
      }
    }
  }

  const source: SplitSource<RangeDescriptor> = {
    fingerprint: () =>
      `pg_range:v1:${config.table}:${config.idColumn}:${cols.join(",")}:${config.sinkTable}:${config.targetSplits}` +
      (fenced ? `:fenced(${config.splitColumn},${config.epochColumn})` : "") + (config.transaction ? ":transaction" : ""),
    descriptorSchema: RangeDescriptorSchema,
    async plan(_ctx: PlanContext): Promise<PlanResult> {
      const info = await planTable(sql, config);
      const splits: PlannedSplit[] = [];
      for (const r of info.ranges) {
        splits.push({
          id: await rangeSplitId(config.table, config.idColumn, r.lo, r.hi),
          descriptor: { v: 1, table: config.table, idColumn: config.idColumn, lo: r.lo, hi: r.hi },
          weight: Math.max(1, r.rows),
        });
      }
      return { finality: "final", splits };
    },
    split(lane, { parts }) {
      const d = lane.descriptor;
      if (d.table !== config.table || d.idColumn !== config.idColumn) return undefined;
      const wm = lane.progress?.watermark;
      const at = Math.max(reached.get(lane.id)?.() ?? d.lo, typeof wm === "number" ? wm : d.lo);
      // Rows per id from the split as the lane got it (planned rows over its ids).
      const spec = RangeDescriptorSchema.safeParse(lane.spec.descriptor);
      const rowsPerId = spec.success ? lane.spec.weight / (spec.data.hi - spec.data.lo) : 1;
      return cutRange(d, at, parts, minCutIds, rowsPerId);
    },
    async run(lane) {
      const d = lane.descriptor;
      if (d.table !== config.table || d.idColumn !== config.idColumn) {
        await lane.fail(`descriptor is for ${d.table}.${d.idColumn}, this worker scans ${config.table}.${config.idColumn}`);
        return;
      }
      // lane.descriptor.hi is read again for every batch: a cut lowers it.
      const hi = () => lane.descriptor.hi;
      const wm = lane.progress?.watermark;
      let last = typeof wm === "number" ? Math.max(d.lo, Math.min(wm, hi())) : d.lo;
      /** Last id of the batch being written, if one is: it stays with the lane whatever is cut. */
      let writing: number | undefined;
      reached.set(lane.id, () => writing ?? last);
      try {
        while (last < hi()) {
          // Stop at a batch boundary: everything read so far is written and committed.
          if (lane.signal.aborted || lane.revokeSignal.aborted) return;
          const read = await withRetry(lane, () => sql.unsafe(readText, [last, hi(), config.batchSize]));
          if (lane.signal.aborted) return; // lost while reading: the new owner copies it
          // A cut while reading: rows above the kept range are its residuals' (never written here).
          const top = hi();
          const rows = read.filter((r) => toId(r[config.idColumn], "id") <= top);
          if (rows.length === 0) break;
          const batch = fenced
            ? rows.map((r) => ({ ...r, [config.splitColumn!]: lane.fencingToken.splitId, [config.epochColumn!]: lane.fencingToken.epoch }))
            : [...rows];
          const lastId = toId(rows[rows.length - 1][config.idColumn], "id");
          if (lastId <= last || lastId > top) {
            throw new Error(`keyset scan of ${lane.splitId} went from ${last} to ${lastId}`);
          }
          /** The rows the fence refused (a newer tenancy wrote them), reported and the lane stopped. */
          const refusedBy = (count: number): boolean => {
            if (!fenced || count >= rows.length) return false;
            deps.onRefused?.({
              splitId: lane.splitId,
              epoch: lane.fencingToken.epoch,
              rows: rows.length,
              refused: rows.length - count,
              firstId: toId(rows[0][config.idColumn], "id"),
              lastId,
            });
            return true;
          };
          const now = lane.descriptor;
          const estimate = { left: Math.max(0, now.hi - lastId), total: now.hi - now.lo, unit: "ids" as const };
          writing = lastId;
          try {
            if (config.transaction) {
              // The rows and the progress in one transaction of the store: a lost split rolls both back.
              let refused = false;
              await lane.commit({ watermark: lastId, estimate }, {
                records: rows.length,
                transaction: async (tx: Sql) => {
                  // Prepared: a statement with parameters is otherwise described first, a round trip more.
                  refused = refusedBy((await tx.unsafe(writeText, [batch as never], { prepare: true })).count);
                  if (refused) throw new RefusedBatch();
                },
              }).catch((e) => {
                if (!(e instanceof RefusedBatch)) throw e;
              });
              if (refused) return; // a newer tenancy owns the split (nothing of this batch was kept)
            } else {
              const result = await withRetry(lane, () => sink.unsafe(writeText, [batch as never]));
              // Rows skipped by the fence are not counted as inserted or updated.
              if (refusedBy(result.count)) return; // a newer tenancy owns the split: stop; the commit would be fenced as well
              writing = undefined;
              await lane.commit({ watermark: lastId, estimate }, { records: rows.length });
            }
          } catch (e) {
            if (e instanceof FencedError) return; // lost: the new owner resumes from its epoch (and this batch's rows rolled back with a transaction)
            throw e;
          } finally {
            writing = undefined;
          }
          last = lastId;
          deps.onBatch?.({ splitId: lane.splitId, rows: rows.length, lastId: last });
          if (rows.length < config.batchSize) break; // the (kept) range is exhausted
          if (config.batchPauseMs > 0) await sleep(config.batchPauseMs, [lane.signal, lane.revokeSignal]);
        }
        if (lane.signal.aborted) return;
        try {
          const now = lane.descriptor;
          await lane.complete({ watermark: now.hi, estimate: { left: 0, total: now.hi - now.lo, unit: "ids" } });
        } catch (e) {
          if (e instanceof FencedError) return;
          throw e;
        }
      } finally {
        reached.delete(lane.id);
      }
    },
  };
  return {
    source,
    async close() {
      await Promise.all(own.map((s) => s.end({ timeout: 5 })));
    },
  };
}
