/**
 * Every write a holder makes to the splits it holds: fenced commits, cuts,
 * graceful and forced releases, poison reports (docs/DESIGN.md, "Holding,
 * committing, releasing"). Each write is a CAS that retries only while the
 * record still carries our epoch and owner; a terminal one ends its tenancy
 * in the tick it lands. Which splits are held is `Tenancies`'; when a
 * revocation forces its release, `RevokeRequests`'.
 *
 * @module
 */
import { FencedError, SplitleaseError, StoreUnavailableError } from "../../errors.ts";
import type { Owner, SplitProgress, SplitRecord } from "../../records.ts";
import type { TransactionWork } from "../../store/store.ts";
import { makeCut, specOf } from "../cuts.ts";
import { carryCut, cutLanded } from "./cut_writes.ts";
import type { Core } from "../core.ts";
import { bump } from "../stats.ts";
import { commitRecord, failRecord, heldBy, releaseRecord, type Settled } from "../../records/transitions.ts";
import { type Dormant, dormantOf, type Tenancy } from "./tenancy.ts";
import type { RevokeRequests } from "./revoke_requests.ts";
import type { CutAnswer, LostReason } from "../types.ts";

/**
 * What the writes need of the held set (`Tenancies` hands it these): its
 * tenancies, and the set's own bookkeeping when a write ends one, loses one
 * or changes its weight.
 */
export interface WriteHost {
  /** Held splits by id (the set's own map). */
  readonly held: ReadonlyMap<string, Tenancy>;
  /** Ends a tenancy with a `lost` event. */
  lose(id: string, reason: LostReason): Tenancy | undefined;
  /** Ends a tenancy without an event (its terminal write landed, or its release was given up). */
  end(id: string, t: Tenancy): void;
  /** Changes the weight held by `delta` (a cut landed). */
  addWeight(delta: number): void;
  /** Told about a tenancy that ended while the store may still name us. */
  readonly onOrphan: (id: string, d: Dormant) => void;
}

/**
 * The writes of one worker's held splits.
 *
 * @example
 * ```ts ignore
 * const writes = new TenancyWrites(core, host, revokes);
 * await writes.commit("s1", 3, { watermark: 10 }, false);
 * ```
 */
export class TenancyWrites {
  readonly #core: Core;
  readonly #set: WriteHost;
  readonly #held: ReadonlyMap<string, Tenancy>;
  readonly #revokes: RevokeRequests;
  /** When a release last started (a leader holding a successor's grants waits while they keep coming). */
  releasedAt = -Infinity;

  /** Creates the writes of the held set `set`; a withdrawn drain's progress re-arms its timer in `revokes`. */
  constructor(core: Core, set: WriteHost, revokes: RevokeRequests) {
    this.#core = core;
    this.#set = set;
    this.#held = set.held;
    this.#revokes = revokes;
  }

  /**
   * CAS loop on a held split: `make` builds the next record from the current
   * one. Retries while the record still carries our epoch and owner; throws
   * `FencedError` (and emits `lost`) once it does not. A `terminal` write
   * (final commit, release, fail) ends the tenancy in the same tick it
   * lands, so no other write of ours can slip in after it; only the tenancy
   * that made the write is ended, never a newer one of the same split.
   */
  async #cas(
    id: string,
    epoch: number,
    terminal: boolean,
    make: (r: SplitRecord) => SplitRecord,
    write: string,
    transaction?: TransactionWork,
  ): Promise<{ record: SplitRecord; tenancy: Tenancy }> {
    const t = this.#held.get(id);
    if (!t || t.epoch !== epoch) {
      throw new FencedError(id, epoch, t?.epoch ?? -1, `split is not held by this instance at epoch ${epoch}`);
    }
    if (terminal) t.ending = (t.ending ?? 0) + 1;
    t.stuck = false;
    try {
      return await this.#casLoop(id, epoch, t, terminal, make, write, transaction);
    } catch (e) {
      // Given up by its holder, unless it tries again (an outage is retried by callers).
      if (terminal && !(e instanceof FencedError) && this.#held.get(id) === t) t.stuck = true;
      throw e;
    } finally {
      if (terminal) t.ending!--;
    }
  }

  async #casLoop(
    id: string,
    epoch: number,
    t: Tenancy,
    terminal: boolean,
    make: (r: SplitRecord) => SplitRecord,
    write: string,
    transaction?: TransactionWork,
  ): Promise<{ record: SplitRecord; tenancy: Tenancy }> {
    const { splits, me } = this.#core;
    const r = await splits.cas(id, t, carryCut(t, make), {
      kind: "tenancy",
      cause: t.trace?.write(write, terminal),
      transaction,
      keep: (rec) => heldBy(rec, me, epoch),
      check: () => {
        if (this.#held.get(id) !== t) throw new FencedError(id, epoch, -1, `the tenancy at epoch ${epoch} ended while writing`);
      },
      onLanded: (record, revision) => {
        cutLanded(this.#core, id, t, record);
        if (this.#held.get(id) !== t) return;
        this.#set.addWeight(record.weight - t.record.weight); // a cut changes it
        if (terminal) t.trace?.wrote(t.record, record); // how it ended, from what the write changed
        t.record = record;
        t.spec = specOf(t.spec, record);
        t.revision = revision;
        t.wrote = true;
        if (terminal) this.#set.end(id, t);
      },
    });
    if (r.ok) return { record: r.record, tenancy: t };
    if ("exhausted" in r) {
      throw new StoreUnavailableError("update", this.#core.config.opTimeoutMs, { detail: `write to split "${id}" kept conflicting; giving up` });
    }
    if (this.#held.get(id) === t) this.#set.lose(id, "fenced");
    throw new FencedError(id, epoch, r.current?.record.epoch ?? -1);
  }

  /**
   * Cuts a held split's remaining work as its source decided: one CAS at
   * our epoch that shrinks its descriptor and lists the residuals, then
   * their records. A cut lost to an outage rides on the tenancy's next
   * write (a commit, the completion, a release); a fenced one is lost with
   * the tenancy (its next owner runs the whole remaining range).
   */
  async cut(id: string, epoch: number, answer: CutAnswer): Promise<string[]> {
    const t = this.#held.get(id);
    if (!t || t.epoch !== epoch) {
      throw new FencedError(id, epoch, t?.epoch ?? -1, `split is not held by this instance at epoch ${epoch}`);
    }
    if (t.draining) throw new SplitleaseError("INVALID_ARGUMENT", `Split "${id}" is being revoked; its work is not cut`);
    if (t.cut && !t.cut.landed) throw new SplitleaseError("INVALID_ARGUMENT", `A cut of split "${id}" is still being written`);
    const cut = makeCut(id, t.record.weight, answer);
    t.cut = { cut, landed: false };
    await this.#cas(id, epoch, false, (r) => r, "cut");
    return cut.residuals.map((r) => r.id);
  }

  /**
   * Fenced progress commit; `final` completes the split and ends the
   * tenancy. With `transaction`, the write commits in one transaction with
   * its statements (a fenced write rolls them back).
   */
  async commit(id: string, epoch: number, progress: SplitProgress, final: boolean, records = 0, transaction?: TransactionWork): Promise<void> {
    if (!final) return this.#commitProgress(id, epoch, progress, records, transaction);
    // The completion goes to the split record (the leader sees it), over the tenancy's last committed progress.
    const make = (r: SplitRecord) => {
      const t = this.#held.get(id);
      const base: SplitRecord = { ...r, progress: t?.prog.progress ?? r.progress };
      if (t && t.prog.records > 0) base.records = t.prog.records;
      return commitRecord(id, base, progress, true, this.#core.clock.wallNow(), records);
    };
    await this.#cas(id, epoch, true, make, "complete", transaction);
    this.#core.log("debug", "Completed split", { split: id, epoch });
  }

  /**
   * A progress commit: one compare-and-swap of the split's progress record
   * (which no leader watches), fenced by its epoch there. A cut of ours
   * that has not landed rides first on a write of the split record.
   */
  async #commitProgress(id: string, epoch: number, progress: SplitProgress, records: number, transaction?: TransactionWork): Promise<void> {
    const t = this.#held.get(id);
    if (!t || t.epoch !== epoch) {
      throw new FencedError(id, epoch, t?.epoch ?? -1, `split is not held by this instance at epoch ${epoch}`);
    }
    if (t.cut && !t.cut.landed) await this.#cas(id, epoch, false, (r) => r, "cut");
    if (this.#held.get(id) !== t) throw new FencedError(id, epoch, -1, `the tenancy at epoch ${epoch} ended while writing`);
    const check = () => {
      if (this.#held.get(id) !== t) throw new FencedError(id, epoch, -1, `the tenancy at epoch ${epoch} ended while writing`);
    };
    t.progWriting = (t.progWriting ?? 0) + 1;
    let r;
    try {
      r = await this.#core.progs.commit(id, t.prog, progress, {
        records,
        cuts: t.record.cuts,
        transaction,
        check,
        cause: t.trace?.write("commit", false),
      });
    } catch (e) {
      if (e instanceof SplitleaseError && e.code === "STORE_UNAVAILABLE") t.progUnsure = true; // it may land yet
      throw e;
    } finally {
      t.progWriting--;
    }
    if (!r.ok) {
      if (this.#held.get(id) === t) this.#set.lose(id, "fenced");
      throw new FencedError(id, epoch, r.epoch);
    }
    if (this.#held.get(id) === t && t.draining && t.cancelled) {
      this.#revokes.armNoProgress(id, t); // progress during a withdrawn drain keeps it alive
    }
  }

  /**
   * What tenancy `t` vouches for at its end (see `Settled`): its last
   * committed position, when none of its progress writes is in flight or
   * unsure; `undefined` otherwise (the next tenancy fences).
   */
  settled(t: Tenancy): Settled | undefined {
    if ((t.progWriting ?? 0) > 0 || t.progUnsure) return undefined;
    return { progress: t.prog.progress, records: t.prog.records, ...(t.prog.rev !== undefined ? { rev: t.prog.rev } : {}) };
  }

  /**
   * Graceful release (to the successor named by the revocation, if any). A
   * release that fails for an outage still ends the tenancy: the store keeps
   * naming this worker, which resumes the split at a new epoch (a fresh
   * `gained`) once the store answers again.
   */
  async release(ids: readonly string[]): Promise<void> {
    if (ids.length > 0) this.releasedAt = this.#core.clock.now();
    await Promise.all(ids.map(async (id) => {
      let t = this.#held.get(id);
      if (t?.unanswered) {
        await this.#revokes.answered(t);
        if (this.#held.get(id) !== t) return; // lost (fenced, dropped) meanwhile
        t = this.#held.get(id)!;
      }
      if (!t) return;
      try {
        // Each attempt goes to the successor named then; the one that landed is what was drained to.
        let sent = t.to;
        await this.#cas(id, t.epoch, true, (r) => releaseRecord(r, (sent = t.to), this.#core.clock.wallNow(), this.settled(t)), "release");
        this.#core.stats.releases++;
        if (t.draining && !t.cancelled && sent) bump(this.#core.stats.revocations, "drained");
        this.#core.log("debug", "Released split", { split: id, epoch: t.epoch, to: sent?.instance ?? null });
      } catch (e) {
        if (!(e instanceof FencedError)) {
          if (this.#held.get(id) === t) this.#set.onOrphan(id, dormantOf(t));
          throw e;
        }
      } finally {
        if (this.#held.get(id) === t) {
          this.#set.end(id, t);
          t.trace?.finish("orphaned", "its release did not land: resumed or released once the store answers");
        }
      }
    }));
  }

  /** Poison report (with the error's stack, when there is one): attempts + 1, quarantined at once when `permanent`; returns the written record. */
  async fail(id: string, epoch: number, reason: string, stack?: string, permanent = false): Promise<SplitRecord> {
    const { config, me, clock } = this.#core;
    const settled = () => {
      const t = this.#held.get(id);
      return t ? this.settled(t) : undefined;
    };
    const make = (r: SplitRecord) => failRecord(r, reason, config.maxAttempts, me.instance, clock.wallNow(), stack, settled(), permanent);
    const { record } = await this.#cas(id, epoch, true, make, "fail");
    return record;
  }

  /**
   * Forced releases still being written, by split: their tenancy has ended,
   * so an assignment record applied meanwhile reaches their successor here
   * (see {@linkcode TenancyWrites.renameReleasing}).
   */
  readonly releasing: Map<string, Tenancy> = new Map();

  /**
   * An assignment record applied while the forced release of `id` is being
   * written (retried after a conflict, slow): its next attempt goes to the
   * successor this record names for it, or to nobody when it no longer
   * lists the revoke (the successor left, the leader withdrew it).
   */
  renameReleasing(id: string, epoch: number, to: Owner | null): void {
    const t = this.releasing.get(id);
    if (t && t.epoch === epoch) t.to = to;
  }

  /** Releases a split forcibly: `lost` (revoked), the uncommitted tail replays elsewhere. */
  async forceRelease(id: string): Promise<void> {
    const t = this.#held.get(id);
    if (!t) return;
    this.#set.lose(id, "revoked");
    bump(this.#core.stats.revocations, "forced");
    let { record, revision } = t;
    this.releasing.set(id, t);
    try {
      // A write of ours may still be in flight (a commit racing the release): go again at its revision.
      const release = carryCut(t, (r) => releaseRecord(r, t.to, this.#core.clock.wallNow(), this.settled(t)));
      await this.#core.splits.cas(id, t, (r, rev) => {
        record = r;
        revision = rev;
        return release(r);
      }, {
        kind: "release",
        keep: (r) => heldBy(r, this.#core.me, t.epoch),
        onLanded: (landed) => cutLanded(this.#core, id, t, landed),
        cause: t.trace?.write("release", true),
      });
    } catch (e) {
      this.#core.log("warn", "Forced release failed; retried once the store answers", { split: id, error: String(e) });
      this.#set.onOrphan(id, { ...dormantOf(t), revision, record });
    } finally {
      if (this.releasing.get(id) === t) this.releasing.delete(id);
    }
  }
}
