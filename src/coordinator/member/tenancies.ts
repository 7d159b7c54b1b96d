/**
 * The splits this worker holds (docs/DESIGN.md, "Holding, committing,
 * releasing"): starting a tenancy (fencing the progress record first when
 * an older one might still commit), ending one, the weight held and the
 * successors named. The set is the one face the rest of the member uses;
 * it hands the writes a holder makes to `TenancyWrites` (tenancy_writes.ts)
 * and the revocations of its splits to `RevokeRequests`
 * (revoke_requests.ts), each given only the bookkeeping it needs.
 *
 * @module
 */
import type { Owner, SplitProgress, SplitRecord } from "../../records.ts";
import type { ProgHold } from "../prog_records.ts";
import type { TransactionWork } from "../../store/store.ts";
import type { Core } from "../core.ts";
import { bump } from "../stats.ts";
import { mustFence } from "../../records/transitions.ts";
import { type Dormant, dormantOf, type Tenancy } from "./tenancy.ts";
import { RevokeRequests } from "./revoke_requests.ts";
import { TenancyWrites } from "./tenancy_writes.ts";
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
  /** Held tenancies with a named successor: {@linkcode Tenancies.owedTo} is O(1) while there are none (every pass asks). */
  #named = 0;

  /** Told about a tenancy that ended while the store may still name us (a release lost to an outage). */
  readonly onOrphan: (id: string, d: Dormant) => void;

  /** Whether new work may start now (running, not draining, not fenced, membership fresh). */
  readonly #mayStart: () => boolean;

  /** The writes a holder makes (commits, cuts, releases, poison reports). */
  readonly #writes: TenancyWrites;
  /** The revocations of held splits (requested, answered, withdrawn, forced). */
  readonly #revokes: RevokeRequests;

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
    // The collaborators see the set through these, not its private fields: its
    // counts (weight, named successors) stay right whoever ends a tenancy.
    this.#revokes = new RevokeRequests(core, {
      held: this.held,
      succeed: (t, to) => this.#succeed(t, to),
      forceRelease: (id) => this.#writes.forceRelease(id),
    });
    this.#writes = new TenancyWrites(core, {
      held: this.held,
      lose: (id, reason) => this.lose(id, reason),
      end: (id, t) => this.#end(id, t),
      addWeight: (delta) => {
        this.#weight += delta;
      },
      onOrphan,
    }, this.#revokes);
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
    this.onOrphan(id, dormantOf(t));
    return true;
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

  /** When a release last started (a leader holding a successor's grants waits while they keep coming). */
  get releasedAt(): number {
    return this.#writes.releasedAt;
  }

  /** Cuts a held split's remaining work as its source decided (see {@linkcode TenancyWrites.cut}). */
  cut(id: string, epoch: number, answer: CutAnswer): Promise<string[]> {
    return this.#writes.cut(id, epoch, answer);
  }

  /** Fenced progress commit; `final` completes the split (see {@linkcode TenancyWrites.commit}). */
  commit(id: string, epoch: number, progress: SplitProgress, final: boolean, records = 0, transaction?: TransactionWork): Promise<void> {
    return this.#writes.commit(id, epoch, progress, final, records, transaction);
  }

  /** Graceful release (see {@linkcode TenancyWrites.release}). */
  release(ids: readonly string[]): Promise<void> {
    return this.#writes.release(ids);
  }

  /** Poison report; returns the written record (see {@linkcode TenancyWrites.fail}). */
  fail(id: string, epoch: number, reason: string, stack?: string, permanent = false): Promise<SplitRecord> {
    return this.#writes.fail(id, epoch, reason, stack, permanent);
  }

  /** Forced releases still being written, by split (see {@linkcode TenancyWrites.releasing}). */
  get releasing(): ReadonlyMap<string, Tenancy> {
    return this.#writes.releasing;
  }

  /** Renames the successor of a forced release being written (see {@linkcode TenancyWrites.renameReleasing}). */
  renameReleasing(id: string, epoch: number, to: Owner | null): void {
    this.#writes.renameReleasing(id, epoch, to);
  }

  /** Releases a split forcibly: `lost` (revoked), the uncommitted tail replays elsewhere. */
  forceRelease(id: string): Promise<void> {
    return this.#writes.forceRelease(id);
  }

  /** Requests a cooperative revocation (see {@linkcode RevokeRequests.requestRevoke}). */
  requestRevoke(id: string, to: Owner | null, byLeader: boolean, answered: boolean = byLeader): void {
    this.#revokes.requestRevoke(id, to, byLeader, answered);
  }

  /** The leader withdrew its revocation (see {@linkcode RevokeRequests.cancelRevoke}). */
  cancelRevoke(id: string): void {
    this.#revokes.cancelRevoke(id);
  }
}
