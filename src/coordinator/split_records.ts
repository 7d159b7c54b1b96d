/**
 * The one gateway for `split.<id>` records (the part KCL's lease refresher
 * plays): their key and encoding, the compare-and-swap loop that re-reads
 * after a conflict and goes again only while the record is still ours, and
 * one `landed` signal for every write of ours that landed. The leader's
 * view subscribes to it rather than waiting for its split watch to echo
 * the write.
 *
 * @module
 */
import { SplitleaseError, StoreUnavailableError } from "../errors.ts";
import { decodeRecord, encodeRecord, safeDecodeRecord, type SplitRecord, SplitRecordSchema } from "../records.ts";
import { keys } from "../store/keys.ts";
import type { StoreEntry, TransactionWork, WriteResult } from "../store/store.ts";
import type { Cause, CausedStore } from "../tracing/cause.ts";
import type { Versioned } from "./versioned.ts";
import { type FloorWait, readAtLeast } from "./fresh_read.ts";

/**
 * Which write landed: a member's own (`tenancy`: a holder's commit,
 * release or poison report; `claim`; `resume` after a self-fence; a forced
 * `release`; `handBack` of a claim it cannot keep) or a leader's (`seed`,
 * `takeover`, `fence` of an owner that did not answer a revocation).
 */
export type SplitWriteKind = "tenancy" | "claim" | "resume" | "release" | "handBack" | "seed" | "residual" | "takeover" | "fence";

/** A split write of ours that landed. */
export interface LandedSplit {
  /** The split id. */
  id: string;
  /** The record written. */
  record: SplitRecord;
  /** The revision it landed at. */
  revision: number;
  /** Which write it was. */
  kind: SplitWriteKind;
}

/** Outcome of {@linkcode SplitRecords.cas}. */
export type CasOutcome =
  | { ok: true; record: SplitRecord; revision: number }
  /** The record is no longer ours (`keep` refused it) or is gone (`current` undefined). */
  | { ok: false; current: Versioned<SplitRecord> | undefined }
  /** Every attempt conflicted with a record that was still ours. */
  | { ok: false; exhausted: true; current: Versioned<SplitRecord> };

/** How {@linkcode SplitRecords.cas} goes about one write. */
export interface CasOptions {
  /** Which write this is (carried by the `landed` signal). */
  kind: SplitWriteKind;
  /** Whether a re-read record may still be written over (it is still ours). */
  keep(record: SplitRecord): boolean;
  /** Attempts before giving up (default 8). */
  attempts?: number;
  /** Called before each attempt; throws to stop (the write is no longer wanted). */
  check?(): void;
  /**
   * Called in the tick the write lands, before the `landed` signal and
   * before the caller resumes: state that must change with the write (a
   * tenancy ended by its terminal write) changes here, so nothing of ours
   * can slip in between.
   */
  onLanded?(record: SplitRecord, revision: number): void;
  /**
   * Statements to commit in the same transaction as the write (see
   * `Store.updateInTransaction`): each attempt runs them anew in a
   * transaction of its own, and only the attempt whose write lands keeps
   * them. A re-read after a conflict that finds the progress being written
   * already there is our own earlier attempt that landed (its answer lost):
   * it counts as landed, and the statements do not run again.
   */
  transaction?: TransactionWork;
  /** What the write's store operations are traced under (default: this gateway's). */
  cause?: Cause;
}

/**
 * Reads and writes split records.
 *
 * @example
 * ```ts ignore
 * const splits = new SplitRecords(store);
 * const stop = splits.onLanded((w) => view.applyOwn(w.id, w.record, w.revision));
 * const r = await splits.cas("s1", held, (rec) => ({ ...rec, progress }), { kind: "tenancy", keep: (rec) => heldBy(rec, me, epoch) });
 * stop();
 * ```
 */
export class SplitRecords {
  readonly #store: CausedStore;
  readonly #listeners: Set<(w: LandedSplit) => void>;
  readonly #cause: Cause | undefined;
  readonly #wait: FloorWait | undefined;

  /**
   * The gateway over `store`; its operations are traced under `cause`
   * unless a call names another. With `wait`, a re-read after a lost CAS
   * is read again while it answers from before the revision that lost
   * (see {@linkcode SplitRecords.cas}).
   */
  constructor(store: CausedStore, cause?: Cause, listeners: Set<(w: LandedSplit) => void> = new Set(), wait?: FloorWait) {
    this.#store = store;
    this.#cause = cause;
    this.#listeners = listeners;
    this.#wait = wait;
  }

  /** The same gateway (same store, same `landed` subscribers) with its operations traced under `cause`. */
  by(cause: Cause): SplitRecords {
    return new SplitRecords(this.#store, cause, this.#listeners, this.#wait);
  }

  /** Subscribes to every split write of ours that lands; returns the unsubscribe. */
  onLanded(listener: (w: LandedSplit) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The raw entry of a split (for views that keep unreadable records visible). */
  entry(id: string, cause?: Cause): Promise<StoreEntry | undefined> {
    return this.#store.get(keys.split(id), cause ?? this.#cause);
  }

  /**
   * The split's entry read now and, when it is readable, its record and
   * revision; `undefined` when it has no record. What the leader writes
   * over (a takeover, a fence) is read this way: its view holds what its
   * decisions read, not the record.
   */
  async look(id: string, cause?: Cause): Promise<{ entry: StoreEntry; current?: Versioned<SplitRecord> } | undefined> {
    const entry = await this.#store.get(keys.split(id), cause ?? this.#cause);
    if (!entry) return undefined;
    const r = safeDecodeRecord(entry.key, entry.value, SplitRecordSchema);
    return r.ok ? { entry, current: { record: r.value, revision: entry.revision } } : { entry };
  }

  /** The split's record and revision; throws `InvalidRecordError` when unreadable. */
  async read(id: string, cause?: Cause): Promise<Versioned<SplitRecord> | undefined> {
    const e = await this.#store.get(keys.split(id), cause ?? this.#cause);
    return e ? { record: decodeRecord(e.key, e.value, SplitRecordSchema), revision: e.revision } : undefined;
  }

  /** Creates a split record if absent (a seed). */
  async create(id: string, record: SplitRecord, kind: SplitWriteKind, cause?: Cause): Promise<WriteResult> {
    const r = await this.#store.create(keys.split(id), encodeRecord(record), cause ?? this.#cause);
    if (r.ok) this.#landed({ id, record, revision: r.revision, kind });
    return r;
  }

  /** One compare-and-swap of a split record at `revision`. */
  async write(id: string, record: SplitRecord, revision: number, kind: SplitWriteKind, cause?: Cause): Promise<WriteResult> {
    const r = await this.#store.update(keys.split(id), encodeRecord(record), revision, cause ?? this.#cause);
    if (r.ok) this.#landed({ id, record, revision: r.revision, kind });
    return r;
  }

  /**
   * The CAS-and-reread loop: writes `make(record, revision)` over `from`; after a
   * conflict re-reads the record and goes again while `keep` accepts it
   * (our own late write landed, or a change that leaves it ours). Store
   * outages and unreadable records throw. A lost CAS at revision r means
   * the record is past r: a re-read at r or before (absent, even: split
   * records are never deleted) is a stale answer (a store serving reads
   * from a replica), read again within the op timeout and, if it stays
   * stale, an outage — never a record to judge `keep` on. Judged, an old
   * record from before our claim fenced a healthy tenancy, whose split then
   * named a member that no longer ran it (issue 40, item 1).
   */
  async cas(
    id: string,
    from: Versioned<SplitRecord>,
    make: (record: SplitRecord, revision: number) => SplitRecord,
    opts: CasOptions,
  ): Promise<CasOutcome> {
    let { record, revision } = from;
    const attempts = opts.attempts ?? 8;
    const cause = opts.cause ?? this.#cause;
    const write = this.#writer(id, opts.transaction, cause);
    for (let attempt = 0; attempt < attempts; attempt++) {
      opts.check?.();
      const next = make(record, revision);
      const r = await write(next, revision);
      if (r.ok) {
        opts.onLanded?.(next, r.revision);
        this.#landed({ id, record: next, revision: r.revision, kind: opts.kind });
        return { ok: true, record: next, revision: r.revision };
      }
      const cur = await this.readPast(id, revision + 1, cause);
      if (!cur || !opts.keep(cur.record)) return { ok: false, current: cur };
      if (opts.transaction && JSON.stringify(cur.record.progress) === JSON.stringify(next.progress)) {
        // Ours, landed by an attempt whose answer was lost: running the statements again would write twice.
        opts.onLanded?.(cur.record, cur.revision);
        this.#landed({ id, record: cur.record, revision: cur.revision, kind: opts.kind });
        return { ok: true, record: cur.record, revision: cur.revision };
      }
      ({ record, revision } = cur);
    }
    return { ok: false, exhausted: true, current: { record, revision } };
  }

  /**
   * The record at revision `floor` or later — one already known for it (an
   * offer's or a grant's, or past a CAS that lost) — read again while the
   * store answers from before it, within the op timeout (see
   * {@linkcode SplitRecords.cas}); throws `StoreUnavailableError` when it
   * keeps doing so, and `InvalidRecordError` when the record is unreadable.
   */
  async readPast(id: string, floor: number, cause?: Cause): Promise<Versioned<SplitRecord> | undefined> {
    if (!this.#wait) return this.read(id, cause ?? this.#cause);
    const key = keys.split(id);
    const { entry, fresh } = await readAtLeast(() => this.#store.get(key, cause ?? this.#cause), floor, this.#wait);
    if (!fresh) {
      throw new StoreUnavailableError("get", this.#wait.budgetMs, { detail: `reads of "${key}" kept answering from before revision ${floor}` });
    }
    return entry ? { record: decodeRecord(entry.key, entry.value, SplitRecordSchema), revision: entry.revision } : undefined;
  }

  /** How one attempt writes: a compare-and-swap, in the caller's transaction when it gave one. */
  #writer(
    id: string,
    transaction: TransactionWork | undefined,
    cause: Cause | undefined,
  ): (next: SplitRecord, revision: number) => Promise<WriteResult> {
    const store = this.#store;
    if (!transaction) return (next, revision) => store.update(keys.split(id), encodeRecord(next), revision, cause);
    if (typeof store.updateInTransaction !== "function") {
      throw new SplitleaseError(
        "INVALID_CONFIG",
        `Split "${id}": a commit with a transaction needs a store that commits in a database transaction ` +
          "(PostgresStore); this store cannot (commit the progress without `transaction`, and fence the sink instead)",
      );
    }
    return (next, revision) => store.updateInTransaction!(keys.split(id), encodeRecord(next), revision, transaction, cause);
  }

  #landed(w: LandedSplit): void {
    for (const l of this.#listeners) l(w);
  }
}
