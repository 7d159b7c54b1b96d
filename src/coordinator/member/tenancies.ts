/**
 * The splits this worker holds, and every write a holder makes to them:
 * fenced commits, graceful releases, poison reports, and revocations
 * (docs/DESIGN.md, "Holding, committing, releasing"). Each write is a CAS
 * that retries only while the record still carries our epoch and owner.
 *
 * @module
 */
import { FencedError, SplitleaseError, StoreUnavailableError } from "../../errors.ts";
import type { Owner, SplitProgress, SplitRecord } from "../../records.ts";
import type { ProgHold } from "../prog_records.ts";
import type { TransactionWork } from "../../store/store.ts";
import { makeCut, specOf } from "../cuts.ts";
import { carryCut, cutLanded } from "./cut_writes.ts";
import type { Core } from "../core.ts";
import { bump } from "../stats.ts";
import { commitRecord, failRecord, heldBy, mustFence, releaseRecord, type Settled } from "../../records/transitions.ts";
import type { Dormant, Tenancy } from "./tenancy.ts";
import type { CutAnswer, LostReason } from "../types.ts";

/** Held splits of one worker. */
export class Tenancies {
  readonly #core: Core;
  /** Held splits by id. */
  readonly held: Map<string, Tenancy> = new Map();
  /** Highest epoch of each split whose tenancy ended here (a grant at or below it is stale). */
  readonly ended: Map<string, number> = new Map();
  #emptyWaiters: (() => void)[] = [];
  #weight = 0;
  /** When a release last started (a leader holding a successor's grants waits while they keep coming). */
  releasedAt = -Infinity;
  /** Held tenancies with a named successor: {@linkcode Tenancies.owedTo} is O(1) while there are none (every pass asks). */
  #named = 0;

  /** Told about a tenancy that ended while the store may still name us (a release lost to an outage). */
  readonly onOrphan: (id: string, d: Dormant) => void;

  /** Whether new work may start now (running, not draining, not fenced, membership fresh). */
  readonly #mayStart: () => boolean;

  /**
   * Creates the set for a coordinator; `onOrphan` keeps what ended while the
   * store may still name us (the follower's dormant set); `mayStart` says
   * whether a tenancy may start now (checked again after a start's fence:
   * the process may have been paused meanwhile).
   */
  constructor(core: Core, onOrphan: (id: string, d: Dormant) => void, mayStart: () => boolean = () => true) {
    this.#core = core;
    this.onOrphan = onOrphan;
    this.#mayStart = mayStart;
  }

  /** Total weight held. */
  weight(): number {
    return this.#weight;
  }

  /**
   * Starts a tenancy of split `id` at `t.epoch` (a won claim, a grant, a
   * resume): first, when an older tenancy might still commit (the record
   * says its progress record is not closed to them: see `mustFence`),
   * fences the split's progress record, so the tenancy starts from the last
   * committed position and no older commit lands after it; then emits
   * `gained`. Returns `false` when the split moved on meanwhile (a newer
   * epoch holds its progress record: nothing to start). An outage throws
   * (the caller recovers as for a claim); so does an unreadable progress
   * record (`InvalidRecordError`: its position is unknown, and nothing
   * starts it until it is repaired).
   */
  async open(id: string, t: Omit<Tenancy, "prog">, kind: string): Promise<boolean> {
    const { me, progs } = this.#core;
    const prog: ProgHold = {
      epoch: t.epoch,
      owner: me,
      // Started without a fence: the record that closed the progress record to older tenancies says where it stands.
      rev: t.record.prog ?? 0,
      progress: t.record.progress,
      records: t.record.records ?? 0,
      cuts: t.record.cuts ?? 0,
      closed: t.record.closed ?? 0,
    };
    // Two starts of one split can overlap while a fence is out (a grant, and our own resume at the next epoch): the newer wins.
    if ((this.#opening.get(id) ?? -1) >= t.epoch) return false;
    this.#opening.set(id, t.epoch);
    const fenced = mustFence(t.record, t.epoch);
    try {
      if (fenced) {
        const f = await progs.fence(id, prog, t.trace?.write("fence", false));
        if (!f.ok) {
          this.#core.log("debug", "A split to start moved on (a newer tenancy fenced its progress)", { split: id, epoch: t.epoch, newer: f.epoch });
          return false;
        }
      }
    } finally {
      if (this.#opening.get(id) === t.epoch) this.#opening.delete(id);
    }
    if ((this.#opening.get(id) ?? -1) > t.epoch) return false;
    if ((this.ended.get(id) ?? -1) >= t.epoch || (this.held.get(id)?.epoch ?? -1) >= t.epoch) return false;
    if (fenced && !this.#mayStart()) {
      // Paused, fenced or leaving while the fence was out: what it learned is old. Resumed (epoch + 1) or released once a beat lands.
      this.onOrphan(id, { epoch: t.epoch, revision: t.revision, record: t.record, spec: t.spec, ran: prog.progress !== null });
      return false;
    }
    if (this.held.has(id)) this.lose(id, "fenced"); // a newer epoch of ours: the older tenancy is over
    this.add(id, { ...t, prog }, kind);
    return true;
  }

  /** Splits whose start (`open`) is out, by the epoch being opened. */
  readonly #opening = new Map<string, number>();

  /** The last committed estimate of each held split that has one: `[split, left, total]` (see `MemberRecord.est`). */
  estimates(): [string, number, number][] {
    const out: [string, number, number][] = [];
    for (const [id, t] of this.held) {
      const e = t.prog.progress?.estimate;
      // An estimate from before a cut of ours measured the whole range: the source's next commit estimates what it kept.
      if (e && !t.stuck && (t.record.cuts ?? 0) <= (t.prog.cuts ?? 0)) out.push([id, e.left, e.total]);
    }
    return out;
  }

  /** Starts a tenancy whose progress record needs no fence or was fenced (see {@linkcode Tenancies.open}) and emits `gained`. */
  add(id: string, t: Tenancy, kind: string): void {
    const { events, stats } = this.#core;
    this.held.set(id, t);
    this.#weight += t.record.weight;
    if (t.to) this.#named++;
    bump(stats.acquisitions, kind);
    const progress = t.prog.progress;
    const attempts = t.record.attempts;
    t.trace = this.#core.trace.tenancy(id, t.epoch, kind, attempts);
    // Not logged here: whoever consumes the event logs it once (the worker's `Gained split` line, event `gained`).
    events.push(
      progress
        ? { type: "gained", split: t.spec, epoch: t.epoch, progress, kind, attempts }
        : { type: "gained", split: t.spec, epoch: t.epoch, kind, attempts },
    );
  }

  /** Ends a tenancy with a `lost` event. */
  lose(id: string, reason: LostReason): Tenancy | undefined {
    const t = this.held.get(id);
    if (!t) return undefined;
    this.#end(id, t);
    t.trace?.finish("lost", reason);
    bump(this.#core.stats.losses, reason);
    // Logged once, by whoever consumes the event (the worker's `Lost split` line, event `lost`).
    this.#core.events.push({ type: "lost", splitId: id, reason });
    return t;
  }

  #end(id: string, t: Tenancy): void {
    if (t.drainTimer !== undefined) this.#core.clock.clearTimeout(t.drainTimer);
    this.held.delete(id);
    this.#weight -= t.record.weight;
    if (t.to) this.#named--;
    if ((this.ended.get(id) ?? -1) < t.epoch) this.ended.set(id, t.epoch);
    if (this.held.size === 0) {
      this.#weight = 0;
      for (const w of this.#emptyWaiters.splice(0)) w();
    }
    this.#core.schedule();
  }

  /** Held tenancies whose holder gave them up (see {@linkcode Tenancy.stuck}). */
  get stuck(): number {
    let n = 0;
    for (const t of this.held.values()) if (t.stuck) n++;
    return n;
  }

  /**
   * Ends a tenancy its holder gave up (a terminal write that failed other
   * than by a fence, none since) with `lost(fenced)`, and hands it to
   * `onOrphan`: resumed at a new epoch (or released) once its record reads
   * again as ours. Whether it was stuck at `epoch`.
   */
  unstick(id: string, epoch: number): boolean {
    const t = this.held.get(id);
    if (!t || !t.stuck || t.epoch !== epoch || (t.ending ?? 0) > 0) return false;
    this.#core.log("warn", "A held split nothing runs (its last write failed) is resumed or released", { split: id, epoch });
    this.lose(id, "fenced");
    this.onOrphan(id, this.#orphan(t));
    return true;
  }

  /** What a tenancy that ended leaves to resume (its record, and whether it ran). */
  #orphan(t: Tenancy): Dormant {
    return { epoch: t.epoch, revision: t.revision, record: t.record, spec: t.spec, ran: t.prog.progress !== null };
  }

  /** Resolves once nothing is held. */
  whenEmpty(): Promise<void> {
    if (this.held.size === 0) return Promise.resolve();
    return new Promise((res) => this.#emptyWaiters.push(res));
  }

  /** Drops every tenancy without writing (teardown). */
  clear(): void {
    for (const t of this.held.values()) {
      if (t.drainTimer !== undefined) this.#core.clock.clearTimeout(t.drainTimer);
      t.trace?.finish("stopped");
    }
    this.held.clear();
    this.#weight = 0;
    this.#named = 0;
    for (const w of this.#emptyWaiters.splice(0)) w();
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
    const t = this.held.get(id);
    if (!t || t.epoch !== epoch) {
      throw new FencedError(id, epoch, t?.epoch ?? -1, `split is not held by this instance at epoch ${epoch}`);
    }
    if (terminal) t.ending = (t.ending ?? 0) + 1;
    t.stuck = false;
    try {
      return await this.#casLoop(id, epoch, t, terminal, make, write, transaction);
    } catch (e) {
      // Given up by its holder, unless it tries again (an outage is retried by callers).
      if (terminal && !(e instanceof FencedError) && this.held.get(id) === t) t.stuck = true;
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
        if (this.held.get(id) !== t) throw new FencedError(id, epoch, -1, `the tenancy at epoch ${epoch} ended while writing`);
      },
      onLanded: (record, revision) => {
        cutLanded(this.#core, id, t, record);
        if (this.held.get(id) !== t) return;
        this.#weight += record.weight - t.record.weight; // a cut changes it
        if (terminal) t.trace?.wrote(t.record, record); // how it ended, from what the write changed
        t.record = record;
        t.spec = specOf(t.spec, record);
        t.revision = revision;
        t.wrote = true;
        if (terminal) this.#end(id, t);
      },
    });
    if (r.ok) return { record: r.record, tenancy: t };
    if ("exhausted" in r) {
      throw new StoreUnavailableError("update", this.#core.config.opTimeoutMs, { detail: `write to split "${id}" kept conflicting; giving up` });
    }
    if (this.held.get(id) === t) this.lose(id, "fenced");
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
    const t = this.held.get(id);
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
      const t = this.held.get(id);
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
    const t = this.held.get(id);
    if (!t || t.epoch !== epoch) {
      throw new FencedError(id, epoch, t?.epoch ?? -1, `split is not held by this instance at epoch ${epoch}`);
    }
    if (t.cut && !t.cut.landed) await this.#cas(id, epoch, false, (r) => r, "cut");
    if (this.held.get(id) !== t) throw new FencedError(id, epoch, -1, `the tenancy at epoch ${epoch} ended while writing`);
    const check = () => {
      if (this.held.get(id) !== t) throw new FencedError(id, epoch, -1, `the tenancy at epoch ${epoch} ended while writing`);
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
      if (this.held.get(id) === t) this.lose(id, "fenced");
      throw new FencedError(id, epoch, r.epoch);
    }
    if (this.held.get(id) === t && t.draining && t.cancelled) {
      this.#armNoProgress(id, t); // progress during a withdrawn drain keeps it alive
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
      let t = this.held.get(id);
      if (t?.unanswered) {
        await this.#answered(t);
        if (this.held.get(id) !== t) return; // lost (fenced, dropped) meanwhile
        t = this.held.get(id)!;
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
          if (this.held.get(id) === t) this.onOrphan(id, this.#orphan(t));
          throw e;
        }
      } finally {
        if (this.held.get(id) === t) {
          this.#end(id, t);
          t.trace?.finish("orphaned", "its release did not land: resumed or released once the store answers");
        }
      }
    }));
  }

  /**
   * How many held splits are being revoked to each named successor (their
   * releases not started, or in flight), or `undefined` when none is: a
   * leader that is also the releasing member holds a successor's next
   * assignment write until they have landed, so one rewrite carries every
   * grant of a drain instead of the first few (each member has one write
   * in flight at a time).
   */
  owedTo(): Map<string, number> | undefined {
    if (this.#named <= 0) return undefined;
    let owed: Map<string, number> | undefined;
    for (const t of this.held.values()) {
      if (!t.to) continue;
      owed ??= new Map();
      owed.set(t.to.instance, (owed.get(t.to.instance) ?? 0) + 1);
    }
    return owed;
  }

  /** Poison report (with the error's stack, when there is one): attempts + 1, quarantined at once when `permanent`; returns the written record. */
  async fail(id: string, epoch: number, reason: string, stack?: string, permanent = false): Promise<SplitRecord> {
    const { config, me, clock } = this.#core;
    const settled = () => {
      const t = this.held.get(id);
      return t ? this.settled(t) : undefined;
    };
    const make = (r: SplitRecord) => failRecord(r, reason, config.maxAttempts, me.instance, clock.wallNow(), stack, settled(), permanent);
    const { record } = await this.#cas(id, epoch, true, make, "fail");
    return record;
  }

  /**
   * Forced releases still being written, by split: their tenancy has ended,
   * so an assignment record applied meanwhile reaches their successor here
   * (see {@linkcode Tenancies.renameReleasing}).
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
    const t = this.held.get(id);
    if (!t) return;
    this.lose(id, "revoked");
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
      this.onOrphan(id, { ...this.#orphan(t), revision, record });
    } finally {
      if (this.releasing.get(id) === t) this.releasing.delete(id);
    }
  }

  /**
   * Until the leader answered our drain's revocation of `t` (it listed the
   * revoke, naming a successor or none), `spareClaimAfterMs` at most. A
   * follower's lanes stop before its drain reaches the leader; released
   * then, they went to nobody, and the member the leader dealt them to
   * claimed each with a write of its own before starting it, where a
   * release to a named successor is started on the leader's grant (a
   * 50-split hand-back: 40 ms against 31 ms when the holder leads). Without
   * a leader the wait ends at the deadline and the release goes to nobody,
   * as before.
   */
  #answered(t: Tenancy): Promise<void> {
    const { clock, timings } = this.#core;
    return new Promise<void>((resolve) => {
      const timer = clock.setTimeout(() => {
        t.unanswered = undefined;
        resolve();
      }, timings.spareClaimAfterMs);
      t.unanswered = () => {
        clock.clearTimeout(timer);
        resolve();
      };
    });
  }

  /** Names the successor a release of `id` goes to, unless one is named already. */
  nameSuccessor(id: string, to: Owner): void {
    const t = this.held.get(id);
    if (t && !t.to) this.#succeed(t, to);
  }

  /** Our own drain goes on, but the leader no longer names a successor for `id`. */
  unnameSuccessor(id: string): void {
    const t = this.held.get(id);
    if (t) this.#succeed(t, null);
  }

  #succeed(t: Tenancy, to: Owner | null): void {
    if (!t.to !== !to) this.#named += to ? 1 : -1;
    t.to = to;
  }

  /**
   * Requests a cooperative revocation (`revokeRequested`), forced after the
   * drain deadline. `byLeader`: a revoke directive of the leader; otherwise
   * our own drain, whose release waits a short while for the leader's
   * answer unless `answered` (we lead, and named the successor ourselves).
   */
  requestRevoke(id: string, to: Owner | null, byLeader: boolean, answered: boolean = byLeader): void {
    const t = this.held.get(id);
    if (!t) return;
    if (t.draining && !t.cancelled) {
      // Already draining: a successor named now (the leader's answer to our
      // drain) still counts, and a revoke the leader lists again without one
      // (the successor it named left) or with another one replaces it — a
      // release to the old one would reach a member that is gone, and the
      // leader would take the split over from it, charging an attempt.
      if (to || byLeader) this.#succeed(t, to);
      if (byLeader && t.unanswered) {
        const wake = t.unanswered;
        t.unanswered = undefined;
        wake();
      }
      return;
    }
    this.#succeed(t, to);
    if (!answered && !to) t.unanswered = () => {};
    t.byLeader = byLeader;
    t.cancelled = false;
    if (t.drainTimer !== undefined) this.#core.clock.clearTimeout(t.drainTimer);
    if (!t.draining) {
      t.draining = true;
      bump(this.#core.stats.revocations, "requested");
      this.#core.events.push({ type: "revokeRequested", splitId: id });
      this.#core.log("debug", "Revocation requested", { split: id, to: to?.instance ?? null });
      t.trace?.event("revocation", to ? { "splitlease.to": to.instance } : undefined);
    }
    t.drainTimer = this.#core.clock.setTimeout(() => {
      if (this.held.get(id) === t) void this.forceRelease(id);
    }, this.#core.config.drainDeadlineMs);
  }

  /**
   * The leader withdrew its revocation: no successor any more, and the hard
   * deadline becomes a no-progress rule (forced only if the drain commits
   * nothing for `drainDeadlineMs`).
   */
  cancelRevoke(id: string): void {
    const t = this.held.get(id);
    if (!t || !t.draining || t.cancelled || !t.byLeader) return;
    t.cancelled = true;
    this.#succeed(t, null);
    bump(this.#core.stats.revocations, "cancelled");
    this.#core.log("debug", "Revocation withdrawn", { split: id });
    this.#armNoProgress(id, t);
  }

  #armNoProgress(id: string, t: Tenancy): void {
    if (t.drainTimer !== undefined) this.#core.clock.clearTimeout(t.drainTimer);
    t.drainTimer = this.#core.clock.setTimeout(() => {
      if (this.held.get(id) === t) void this.forceRelease(id);
    }, this.#core.config.drainDeadlineMs);
  }
}
