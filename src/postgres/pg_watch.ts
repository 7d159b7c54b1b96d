/**
 * A watch on the PostgreSQL store: the loop of the kit's `PolledWatch`
 * (snapshot, `ready`, the changes after its revision; the live values when
 * the change log no longer reaches back; `reset` when the server restarted
 * or changed) over this backend's reads: the live rows (`kv`) and the
 * change log (`log`) of the job in revision order, and one row for an exact
 * key. Woken by `NOTIFY` (or, for an exact key, by its store's key poll),
 * and by a poll in case a notification was missed. Every read also returns
 * the server's start time: a different one (a restart, a failover) means
 * commits read before may be gone.
 *
 * @module
 */
import { type FeedPage, type FeedPoint, PAGE_ROWS, PolledWatch, WatchDiscontinuity } from "../store/polled_watch.ts";
import type { ResolvedPgOptions } from "./options.ts";
import { type FilterSql, filterSql, pageRows, type Queries, rev } from "./queries.ts";
import type { SqlParam, SqlRow } from "./sql_client.ts";

export { PAGE_ROWS };

/** What a watch needs from its store. */
export interface WatchHost {
  readonly q: Queries;
  readonly jobId: number;
  readonly opts: ResolvedPgOptions;
  /** A read bounded by the operation timeout (throws `StoreUnavailableError`). */
  read(op: string, text: string, params: SqlParam[]): Promise<SqlRow[]>;
  /**
   * Registers the watch, and listens on `channel` for it or polls its key
   * (resolves when the `LISTEN` took effect, or could not).
   */
  listen(channel: string, w: PgWatch, filter: string): Promise<void>;
  /** The watch stopped. */
  stopped(channel: string, w: PgWatch): void;
  /** A revision seen (a lower bound for the next write's). */
  saw(revision: number): void;
}

/** A watch of one filter (see the `Watch` contract in store.ts). */
export class PgWatch extends PolledWatch {
  readonly #host: WatchHost;
  readonly #filter: FilterSql;
  readonly #channelName: string;

  constructor(host: WatchHost, filter: string, channel: string) {
    const f = filterSql(filter);
    super(filter, f.kind === "exact", host.opts);
    this.#host = host;
    this.#filter = f;
    this.#channelName = channel;
    // Registered at once, so a store closed right after `watch()` stops it.
    this.start(host.listen(channel, this, filter));
  }

  protected override onStop(): void {
    super.onStop();
    this.#host.stopped(this.#channelName, this);
  }

  protected saw(revision: number): void {
    this.#host.saw(revision);
  }

  protected restarted(): string {
    return "the PostgreSQL server restarted or changed (its start time differs)";
  }

  protected async positionAfter(after: number): Promise<number | undefined> {
    const h = this.#host;
    const rows = await h.read("watch", h.q.position(this.#filter), [h.jobId, after, ...this.#filter.params]);
    const at = rows[0]?.at;
    return at === null || at === undefined ? undefined : rev(at);
  }

  protected async page(from: "live" | "log", after: number): Promise<FeedPage> {
    const h = this.#host;
    const rows = pageRows(await h.read("watch", h.q.page(from === "live" ? "kv" : "log", this.#filter), [h.jobId, after, PAGE_ROWS, ...this.#filter.params]));
    if (rows.length === 0) throw new WatchDiscontinuity(`the job's row is gone from ${h.q.schema}.jobs`);
    return { changes: rows.flatMap((r) => (r.change ? [r.change] : [])), head: rows[0].head, boot: rows[0].boot, floor: rows[0].floor };
  }

  protected async point(): Promise<FeedPoint> {
    const h = this.#host;
    const rows = await h.read("watch", h.q.point(), [h.jobId, this.#filter.params[0]]);
    if (rows.length === 0) throw new WatchDiscontinuity(`the job's row is gone from ${h.q.schema}.jobs`);
    const boot = String(rows[0].boot);
    const head = rev(rows[0].head);
    const r = rows[0].revision;
    if (r === null || r === undefined) return { revision: 0, value: null, head, boot };
    return { revision: rev(r), value: rows[0].value === null ? null : String(rows[0].value), head, boot };
  }
}
