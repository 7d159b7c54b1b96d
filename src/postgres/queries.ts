/**
 * The SQL the PostgreSQL store sends, built once per schema, and the key
 * filter as SQL. Every read that a watch resumes from returns, in the same
 * statement (one snapshot), the job's counter (`head`: every revision up to
 * it is committed and visible) and the server's start time (`boot`: a
 * restarted or different server cannot prove that nothing was lost).
 *
 * @module
 */
import type { SqlParam, SqlRow } from "./sql_client.ts";

/** How a key filter reads: every key, a dotted prefix, or one key. */
export type FilterKind = "all" | "prefix" | "exact";

/** A key filter as SQL: its kind, a condition on `key` and its parameters (from `$first`). */
export interface FilterSql {
  kind: FilterKind;
  /** `and …` to append to a where clause (empty for every key). */
  where(first: number): string;
  params: SqlParam[];
}

/** The key filter (see `KeyFilter`) as SQL over a `key text collate "C"` column. */
export function filterSql(filter: string): FilterSql {
  if (filter === "") return { kind: "all", where: () => "", params: [] };
  if (filter.endsWith(".")) {
    // The keys starting with "p." are those in ["p.", "p/"): "/" follows "." in byte order.
    const hi = filter.slice(0, -1) + "/";
    return { kind: "prefix", where: (n) => ` and key >= $${n} and key < $${n + 1}`, params: [filter, hi] };
  }
  return { kind: "exact", where: (n) => ` and key = $${n}`, params: [filter] };
}

const BOOT = "extract(epoch from pg_postmaster_start_time())::text";

/** The statements of one schema. */
export class Queries {
  readonly schema: string;
  readonly put: string;
  readonly del: string;
  readonly get: string;
  readonly prune: string;
  readonly job: string;
  readonly findJob: string;
  readonly version: string;
  /** The revisions of the keys of a JSON array (`$2`): the key poll of exact-key watches. */
  readonly keys: string;
  /** How many live keys start with a prefix (`$2` <= key < `$3`): the job's members, for the key poll's period. */
  readonly countPrefix: string;

  constructor(schema: string) {
    const s = schema;
    this.schema = s;
    this.put = `select ${s}.put($1, $2, $3, $4, $5, false)::text as r`;
    this.del = `select ${s}.del($1, $2, $3, $4)::text as r`;
    this.get = `select value, revision::text as revision from ${s}.kv where job = $1 and key = $2`;
    this.prune = `delete from ${s}.log where job = $1 and revision <= $2 and at < now() - make_interval(secs => $3::float8 / 1000)`;
    this.job = `with created as (insert into ${s}.jobs (name) values ($1) on conflict (name) do nothing returning id)
      select id from created union all select id from ${s}.jobs where name = $1 limit 1`;
    this.findJob = `select id from ${s}.jobs where name = $1`;
    this.version = `select version from ${s}.meta`;
    this.keys = `select key, revision::text as revision from ${s}.kv
      where job = $1 and key in (select jsonb_array_elements_text($2::text::jsonb))`;
    this.countPrefix = `select count(*)::int as n from ${s}.kv where job = $1 and key >= $2 and key < $3 and value is not null`;
  }

  /**
   * One page of a table (`kv`: live values and delete markers; `log`: recent
   * changes) after revision `$2`, in revision order, at most `$3` rows, with
   * `head`, `boot` and (for the log) `floor`, its oldest revision. Always
   * one row at least (the job's), with null columns when the page is empty.
   */
  page(table: "kv" | "log", f: FilterSql): string {
    const s = this.schema;
    const floor = table === "log" ? `(select min(revision) from ${s}.log where job = $1)::text` : "null";
    return `select j.rev::text as head, ${BOOT} as boot, ${floor} as floor,
        c.revision::text as revision, c.key, c.value
      from ${s}.jobs j left join lateral (
        select revision, key, value from ${s}.${table}
         where job = $1 and revision > $2${f.where(4)} order by revision limit $3
      ) c on true where j.id = $1 order by c.revision`;
  }

  /** The live value or delete marker of one key (`$2`) with `head` and `boot`. */
  point(): string {
    const s = this.schema;
    return `select j.rev::text as head, ${BOOT} as boot, k.revision::text as revision, k.value
      from ${s}.jobs j left join ${s}.kv k on k.job = j.id and k.key = $2 where j.id = $1`;
  }

  /** The revision of the last change under the filter after `$2` (null when none). */
  position(f: FilterSql): string {
    return `select max(revision)::text as at from ${this.schema}.kv where job = $1 and revision > $2${f.where(3)}`;
  }
}

/** A revision column (bigint as text) as a number. */
export function rev(v: unknown): number {
  const n = typeof v === "number" ? v : Number(v);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`not a revision: ${String(v)}`);
  return n;
}

/** One row of a page: the change (absent on an empty page) and the page's head, boot and floor. */
export interface PageRow {
  head: number;
  boot: string;
  floor: number | null;
  change?: { revision: number; key: string; value: string | null };
}

/** Decodes the rows of {@linkcode Queries.page}. */
export function pageRows(rows: SqlRow[]): PageRow[] {
  return rows.map((r) => ({
    head: rev(r.head),
    boot: String(r.boot),
    floor: r.floor === null || r.floor === undefined ? null : rev(r.floor),
    ...(r.revision === null || r.revision === undefined
      ? {}
      : { change: { revision: rev(r.revision), key: String(r.key), value: r.value === null ? null : String(r.value) } }),
  }));
}

/**
 * `text` as a dollar-quoted SQL literal whose tag does not occur in it (for
 * the one script sent without parameters: the final write and `commit` of a
 * transaction, in one round trip).
 */
export function literal(text: string): string {
  // The closing tag must first occur at the end (a value ending in "$sl" would end "$sl$" early).
  let tag = "$sl$";
  for (let i = 0; (text + tag).indexOf(tag) !== text.length; i++) tag = `$sl${i}$`;
  return tag + text + tag;
}
