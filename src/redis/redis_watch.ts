/**
 * A watch on the Redis store: the kit's `PolledWatch` loop over this
 * backend's reads, each one script: a page of the live keys (the `rev`
 * sorted set, in revision order) or of the change log (the `log` stream,
 * `XRANGE` after the watch's revision), filtered by prefix on the server,
 * and a point read for an exact key. Woken by a message on its filter's
 * channel (published by every write under it) and by a poll in case one
 * was lost. It never depends on keyspace notifications, which a
 * disconnect loses for good: the log is the record, and a watch that was
 * cut off reads on after its revision. Every read returns the server's run
 * id: a new one (a restart, a failover to another server) means writes it
 * read may be gone, so the watch emits `reset` and a fresh snapshot.
 *
 * @module
 */
import { type FeedPage, type FeedPoint, PAGE_ROWS, PolledWatch, WatchDiscontinuity } from "../store/polled_watch.ts";
import type { RedisReply } from "./redis_client.ts";
import { PAGE, POINT, POSITION } from "./scripts.ts";

/** Entries of the job a page's script looks at, at most (a prefix's changes are found among them). */
export const SCAN_ROWS = 4 * PAGE_ROWS;

/** What a watch needs from its store. */
export interface RedisWatchHost {
  /** The job's keys, in the scripts' order (kv, rev, head, log). */
  readonly keys: readonly string[];
  /** The job's name, for messages. */
  readonly job: string;
  /** The fallback poll and the op timeout. */
  readonly timings: { opTimeoutMs: number; pollIntervalMs: number };
  /** Runs a read script (bounded by the op timeout, retried after a lost answer; throws `StoreUnavailableError`). */
  read(op: string, script: string, keys: readonly string[], args: readonly string[]): Promise<RedisReply>;
  /** Subscribes the watch to the wake-up channel of `filter` (resolves when it took effect, or could not). */
  listen(w: RedisWatch): Promise<void>;
  /** The watch stopped. */
  stopped(w: RedisWatch): void;
  /** A revision seen (a lower bound for the next write's). */
  saw(revision: number): void;
}

/** A reply's integer (a revision, the head), from a string or a number. */
export function revOf(r: RedisReply): number {
  const n = typeof r === "number" ? r : Number(r);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`the store's script answered ${JSON.stringify(r)} for a revision`);
  return n;
}

/** A watch of one filter (see the `Watch` contract in store.ts). */
export class RedisWatch extends PolledWatch {
  readonly #host: RedisWatchHost;
  readonly #prefix: string;

  constructor(host: RedisWatchHost, filter: string) {
    const exact = filter !== "" && !filter.endsWith(".");
    super(filter, exact, host.timings);
    this.#host = host;
    this.#prefix = filter;
    this.start(host.listen(this));
  }

  protected override onStop(): void {
    super.onStop();
    this.#host.stopped(this);
  }

  protected saw(revision: number): void {
    this.#host.saw(revision);
  }

  protected restarted(): string {
    return "the Redis server restarted or changed (its run id differs)";
  }

  #gone(): never {
    throw new WatchDiscontinuity(`the job ${this.#host.job} is gone from Redis`);
  }

  protected async point(): Promise<FeedPoint> {
    const h = this.#host;
    const r = (await h.read("watch", POINT, h.keys.slice(0, 3), [this.filter, "1"])) as RedisReply[];
    if (!Array.isArray(r) || r[0] === null) this.#gone();
    const head = revOf(r[0]);
    const boot = String(r[1]);
    if (r[2] === null) return { revision: 0, value: null, head, boot };
    return { revision: revOf(r[2]), value: r[3] === null ? null : String(r[3]), head, boot };
  }

  protected async page(from: "live" | "log", after: number): Promise<FeedPage> {
    const h = this.#host;
    const r = (await h.read("watch", PAGE, h.keys, [String(after), String(PAGE_ROWS), this.#prefix, String(SCAN_ROWS), from, "1"])) as RedisReply[];
    return pageOf(r, () => this.#gone());
  }

  protected async positionAfter(after: number): Promise<number | undefined> {
    const h = this.#host;
    const r = await h.read("watch", POSITION, [h.keys[1]], [String(after), this.#prefix, String(SCAN_ROWS)]);
    return r === null ? undefined : revOf(r);
  }
}

/** A page script's reply as a feed page (`gone()` when the job does not exist). */
export function pageOf(r: RedisReply[], gone: () => never): FeedPage {
  if (!Array.isArray(r) || r[0] === null) gone();
  const changes: FeedPage["changes"] = [];
  for (let i = 4; i + 2 < r.length; i += 3) {
    changes.push({ key: String(r[i]), revision: revOf(r[i + 1]), value: r[i + 2] === null || r[i + 2] === undefined ? null : String(r[i + 2]) });
  }
  return {
    changes,
    head: revOf(r[0]),
    boot: String(r[1]),
    floor: r[2] === null ? null : revOf(r[2]),
    ...(r[3] === null ? {} : { through: revOf(r[3]) }),
  };
}
