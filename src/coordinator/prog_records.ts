/**
 * The one gateway for `prog.<id>` records (docs/DESIGN.md, "Progress apart
 * from ownership"): a tenancy's progress commits and the fence a tenancy
 * writes before it starts when an older one might still commit. No leader
 * watches these keys, so a progress commit costs the leader nothing.
 *
 * The fence is the progress record's own compare-and-swap: every write
 * names the epoch of the tenancy that makes it; a tenancy writes only over
 * a record at its own epoch (its own earlier write) or, to fence, at an
 * older one; a record at a newer epoch means the split moved on.
 *
 * @module
 */
import { InvalidRecordError, StoreUnavailableError } from "../errors.ts";
import { decodeRecord, encodeRecord, type Owner, type ProgRecord, ProgRecordSchema, type SplitProgress } from "../records.ts";
import { progRecord } from "../records/transitions.ts";
import { keys } from "../store/keys.ts";
import type { StoreEntry, TransactionWork, WriteResult } from "../store/store.ts";
import type { Cause, CausedStore } from "../tracing/cause.ts";
import { SplitleaseError } from "../errors.ts";
import { readAtLeast } from "./fresh_read.ts";
import type { Clock } from "./types.ts";

/**
 * What one tenancy knows of its split's progress record: its epoch and
 * owner, the revision it last wrote or read (`0`: absent; `undefined`: not
 * read yet — a tenancy that started without a fence reads it at its first
 * commit) and the progress and records of its last landed write.
 */
export interface ProgHold {
  /** The tenancy's epoch. */
  epoch: number;
  /** The tenancy's owner. */
  owner: Owner;
  /** Revision of the record as last written or read (0: absent), `undefined` before the first read. */
  rev: number | undefined;
  /** The progress committed so far (or carried over at the start). */
  progress: SplitProgress | null;
  /** Records committed so far (summed over every tenancy). */
  records: number;
  /** The split's cut count the record was written at (its estimate is stale once the split was cut again). */
  cuts?: number;
  /**
   * Whether the record at `rev` is this tenancy's own write (its fence or a
   * commit). Until it is, a record of an older epoch found there is what
   * the last tenancy left (it started past `closed`: no older one writes
   * any more), and the first commit writes over it.
   */
  own?: boolean;
  /**
   * The split record's `closed` as the tenancy started. A progress record
   * of an epoch below it holds nothing the split record's progress (here,
   * `progress`) does not: the terminal write that closed it copied its
   * progress over, or a rerun started the split over. A fence carries this
   * tenancy's progress over such a record, not the record's.
   */
  closed?: number;
}

/** Outcome of {@linkcode ProgRecords.fence} and {@linkcode ProgRecords.commit}. */
export type ProgOutcome =
  | { ok: true; revision: number }
  /** A newer tenancy (`epoch`) holds the record, or another owner at ours: the split moved on. */
  | { ok: false; epoch: number };

/** How {@linkcode ProgRecords.commit} goes about one commit. */
export interface ProgCommitOptions {
  /** Records this commit reports. */
  records?: number;
  /** The split's cut count (an estimate from before a later cut no longer applies). */
  cuts?: number;
  /** Statements to commit in the same transaction (see `Store.updateInTransaction`). */
  transaction?: TransactionWork;
  /** Called before each attempt; throws to stop (the commit is no longer wanted). */
  check?(): void;
  /** What the commit's store operations are traced under. */
  cause?: Cause;
}

/** Attempts of a fence or commit that keep conflicting before it gives up. */
const ATTEMPTS = 8;

const sameOwner = (a: Owner | null, b: Owner) => a !== null && a.instance === b.instance && a.session === b.session;

/**
 * Reads, fences and commits progress records.
 *
 * @example
 * ```ts ignore
 * const progs = new ProgRecords(store);
 * const hold = { epoch: 3, owner: me, rev: undefined, progress: null, records: 0 };
 * const f = await progs.fence("s1", hold); // before the tenancy starts, when an older one may still commit
 * if (f.ok) await progs.commit("s1", hold, { watermark: 10 });
 * ```
 */
export class ProgRecords {
  readonly #store: CausedStore;
  readonly #cause: Cause | undefined;
  readonly #opTimeoutMs: number;
  readonly #clock: Clock | undefined;

  /**
   * The gateway over `store`; its operations are traced under `cause`
   * unless a call names another. With `clock`, a re-read after a lost CAS
   * is read again (for up to `opTimeoutMs`) while it answers from before
   * the revision that lost: a store serving reads from a replica.
   */
  constructor(store: CausedStore, opTimeoutMs: number, cause?: Cause, clock?: Clock) {
    this.#store = store;
    this.#opTimeoutMs = opTimeoutMs;
    this.#cause = cause;
    this.#clock = clock;
  }

  /** The same gateway with its operations traced under `cause`. */
  by(cause: Cause): ProgRecords {
    return new ProgRecords(this.#store, this.#opTimeoutMs, cause, this.#clock);
  }

  /** The record and its revision, `undefined` when absent; throws `InvalidRecordError` when unreadable. */
  async read(id: string, cause?: Cause): Promise<{ record: ProgRecord; revision: number } | undefined> {
    const e = await this.#store.get(keys.prog(id), cause ?? this.#cause);
    return e ? { record: decodeRecord(e.key, e.value, ProgRecordSchema), revision: e.revision } : undefined;
  }

  /**
   * Fences the record for the tenancy of `hold` before it starts: writes
   * its epoch over the record (carrying the progress there, or `hold`'s
   * when there is none) unless a newer epoch holds it. From the moment it
   * lands no older tenancy's commit can land (each would have to write
   * over it, and finds a newer epoch); a commit that landed before it is
   * carried over, so the tenancy starts from the last committed position.
   * `hold` is updated to what was written. An unreadable record is never
   * written over by a tenancy that does not know what it held
   * (`InvalidRecordError`): its progress might be lost.
   */
  async fence(id: string, hold: ProgHold, cause?: Cause, check?: () => void): Promise<ProgOutcome> {
    const key = keys.prog(id);
    const c = cause ?? this.#cause;
    let floor = 0;
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      check?.();
      const e = await this.#entry(key, c, floor);
      if (e && !e.record) throw e.error!;
      const cur = e && { record: e.record!, revision: e.revision };
      if (cur && (cur.record.epoch > hold.epoch || (cur.record.epoch === hold.epoch && !sameOwner(cur.record.owner, hold.owner)))) {
        return { ok: false, epoch: cur.record.epoch };
      }
      if (cur && cur.record.epoch === hold.epoch) return this.#held(hold, cur.record, cur.revision); // our own fence landed
      const from = cur && cur.record.epoch >= (hold.closed ?? 0) ? { progress: cur.record.progress, records: cur.record.records } : hold;
      const next = progRecord(id, hold.owner, hold.epoch, from, null, 0, cur?.record.cuts);
      const r = cur ? await this.#store.update(key, encodeRecord(next), cur.revision, c) : await this.#store.create(key, encodeRecord(next), c);
      if (r.ok) return this.#held(hold, next, r.revision);
      floor = (cur?.revision ?? 0) + 1; // lost: the record is past it (a read from before is a replica's)
    }
    throw new StoreUnavailableError("update", this.#opTimeoutMs, { detail: `the fence of progress record "${key}" kept conflicting; giving up` });
  }

  /**
   * One progress commit of the tenancy of `hold`: `progress` merged over
   * its last committed one (a watermark below it is `INVALID_ARGUMENT`),
   * written by compare-and-swap at the revision it last wrote or read.
   * After a conflict it re-reads: a record of its own epoch is its own
   * earlier write (a reply lost) and it goes again over it; a newer epoch,
   * or an older one that wrote after this tenancy started, means the
   * split moved on (`{ ok: false }`). With `transaction`, the write
   * commits in one transaction with its statements. Outages throw.
   */
  async commit(id: string, hold: ProgHold, progress: SplitProgress, opts: ProgCommitOptions = {}): Promise<ProgOutcome> {
    const key = keys.prog(id);
    const c = opts.cause ?? this.#cause;
    if (hold.rev === undefined) {
      // Started without a fence (no older tenancy can write it): it holds what the last one left, or nothing.
      const cur = await this.#entry(key, c);
      if (cur?.record && (cur.record.epoch > hold.epoch || (cur.record.epoch === hold.epoch && !sameOwner(cur.record.owner, hold.owner)))) {
        return { ok: false, epoch: cur.record.epoch };
      }
      hold.rev = cur?.revision ?? 0;
    }
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      opts.check?.();
      if (hold.rev === 0 && opts.transaction) {
        // A transaction commits over a revision: the record must exist first (once per split).
        const f = await this.fence(id, hold, c, opts.check);
        if (!f.ok) return f;
      }
      const next = progRecord(id, hold.owner, hold.epoch, hold, progress, opts.records ?? 0, opts.cuts);
      const value = encodeRecord(next);
      const r = await this.#write(key, value, hold.rev!, opts.transaction, c);
      if (r.ok) return this.#held(hold, next, r.revision);
      // Lost: the record is past `hold.rev`. A replica's answer from before (seed 598: the record of
      // the tenancy before ours) read as the truth had the tenancy give up its split as fenced while
      // its split record still named it, and nobody ran the split again.
      const cur = await this.#entry(key, c, hold.rev! + 1);
      if (!cur) {
        hold.rev = 0; // deleted under us: we hold it, and know what it held
        continue;
      }
      const rec = cur.record;
      if (!rec) {
        // Unreadable: its holder knows what it held (its last commit, or the position it started from past `closed`), and writes over it.
        hold.rev = cur.revision;
        continue;
      }
      if (rec.epoch < hold.epoch && !hold.own) {
        hold.rev = cur.revision; // what the last tenancy left (a stale revision hint): ours to write over
        continue;
      }
      if (rec.epoch !== hold.epoch || !sameOwner(rec.owner, hold.owner)) return { ok: false, epoch: rec.epoch };
      if (opts.transaction && JSON.stringify(rec.progress) === JSON.stringify(next.progress)) {
        // Ours, landed by an attempt whose answer was lost: running the statements again would write twice.
        return this.#held(hold, rec, cur.revision);
      }
      this.#held(hold, rec, cur.revision); // an earlier write of ours landed after all: commit over it
    }
    throw new StoreUnavailableError("update", this.#opTimeoutMs, { detail: `write to progress record "${key}" kept conflicting; giving up` });
  }

  #held(hold: ProgHold, rec: ProgRecord, revision: number): ProgOutcome {
    hold.rev = revision;
    hold.own = true;
    hold.progress = rec.progress;
    hold.records = rec.records ?? 0;
    hold.cuts = rec.cuts ?? 0;
    return { ok: true, revision };
  }

  /**
   * The raw entry with its record decoded (`record` undefined when
   * unreadable, with the `error`), at revision `floor` or later: read again
   * while the store answers from before it (absent counts as current past
   * revision 1: the record may have been deleted since). Throws
   * `StoreUnavailableError` when the store keeps answering from before it.
   */
  async #entry(
    key: string,
    cause: Cause | undefined,
    floor = 0,
  ): Promise<{ revision: number; record?: ProgRecord; error?: InvalidRecordError } | undefined> {
    const read = () => this.#store.get(key, cause);
    let e: StoreEntry | undefined;
    if (this.#clock && floor > 0) {
      const r = await readAtLeast(read, floor, { clock: this.#clock, budgetMs: this.#opTimeoutMs }, floor > 1 ? "fresh" : "stale");
      if (!r.fresh) throw new StoreUnavailableError("get", this.#opTimeoutMs, { detail: `reads of "${key}" kept answering from before revision ${floor}` });
      e = r.entry;
    } else e = await read();
    if (!e) return undefined;
    try {
      return { revision: e.revision, record: decodeRecord(e.key, e.value, ProgRecordSchema) };
    } catch (err) {
      if (!(err instanceof InvalidRecordError)) throw err;
      return { revision: e.revision, error: err };
    }
  }

  #write(key: string, value: string, rev: number, transaction: TransactionWork | undefined, cause: Cause | undefined): Promise<WriteResult> {
    const store = this.#store;
    if (!transaction) return rev === 0 ? store.create(key, value, cause) : store.update(key, value, rev, cause);
    if (typeof store.updateInTransaction !== "function") {
      throw new SplitleaseError(
        "INVALID_CONFIG",
        `Progress record "${key}": a commit with a transaction needs a store that commits in a database transaction ` +
          "(PostgresStore); this store cannot (commit the progress without `transaction`, and fence the sink instead)",
      );
    }
    return store.updateInTransaction(key, value, rev, transaction, cause);
  }
}
