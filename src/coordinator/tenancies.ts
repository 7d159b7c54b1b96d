/**
 * The splits this worker holds, and every write a holder makes to them:
 * fenced commits, graceful releases, poison reports, and revocations (DESIGN
 * §6, §8). Each write is a CAS that retries only while the record still
 * carries our epoch and owner.
 *
 * @module
 */
import { FencedError, SplitleaseError } from "../errors.ts";
import { decodeRecord, encodeRecord, type SplitProgress, type SplitRecord, SplitRecordSchema } from "../records.ts";
import { keys } from "../store/keys.ts";
import type { Core } from "./core.ts";
import { bump } from "./stats.ts";
import { commitRecord, failRecord, heldBy, releaseRecord } from "./transitions.ts";
import type { LostReason, SplitSpec } from "./types.ts";

/** One tenancy of a held split. */
export interface Tenancy {
  /** Epoch of this tenancy (the fencing token). */
  epoch: number;
  /** Revision of the last record we wrote or saw. */
  revision: number;
  /** That record. */
  record: SplitRecord;
  /** The split's spec. */
  spec: SplitSpec;
  /** Whether a revocation was requested. */
  draining: boolean;
  /** Thief to release to (a steal), or `null`. */
  reservedFor: string | null;
  /** Drain deadline or no-progress timer. */
  drainTimer?: unknown;
  /** The handoff behind the revocation was withdrawn: only the no-progress rule applies. */
  cancelled?: boolean;
  /** Writes of ours in flight: their watch echo may arrive before their reply. */
  writing: number;
}

/** Held splits of one worker. */
export class Tenancies {
  readonly #core: Core;
  /** Held splits by id. */
  readonly held: Map<string, Tenancy> = new Map();
  #emptyWaiters: (() => void)[] = [];

  /** Creates the set for a coordinator. */
  constructor(core: Core) {
    this.#core = core;
  }

  /** Total weight held. */
  weight(): number {
    let w = 0;
    for (const t of this.held.values()) w += t.record.weight;
    return w;
  }

  /** Starts a tenancy after a won claim. */
  add(id: string, t: Tenancy): void {
    this.held.set(id, t);
  }

  /** Ends a tenancy with a `lost` event. */
  lose(id: string, reason: LostReason): void {
    const t = this.held.get(id);
    if (!t) return;
    this.#end(id, t);
    bump(this.#core.stats.losses, reason);
    this.#core.events.push({ type: "lost", splitId: id, reason });
    this.#core.log("warn", "Lost split", { split: id, epoch: t.epoch, reason });
  }

  #end(id: string, t: Tenancy): void {
    if (t.drainTimer !== undefined) this.#core.clock.clearTimeout(t.drainTimer);
    this.held.delete(id);
    if (this.held.size === 0) for (const w of this.#emptyWaiters.splice(0)) w();
    this.#core.schedule();
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
    }
    this.held.clear();
    for (const w of this.#emptyWaiters.splice(0)) w();
  }

  /** Held splits whose record moved on without us are lost. */
  checkAgainstView(): void {
    const { view, me } = this.#core;
    for (const [id, t] of this.held) {
      if (t.writing > 0) continue; // judged again once our write returns
      const e = view.splits.get(id);
      if (e && e.revision <= t.revision) continue;
      if (e && heldBy(e.record, me, t.epoch)) {
        t.revision = e.revision;
        t.record = e.record;
        continue;
      }
      const reason: LostReason = !e || e.record.status !== "runnable"
        ? "fenced"
        : e.record.owner === null
        ? "revoked"
        : "expired";
      this.lose(id, reason);
    }
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
  ): Promise<{ record: SplitRecord; tenancy: Tenancy }> {
    const t = this.held.get(id);
    if (!t || t.epoch !== epoch) {
      throw new FencedError(id, epoch, t?.epoch ?? -1, `split is not held by this instance at epoch ${epoch}`);
    }
    t.writing++;
    try {
      return { record: await this.#casLoop(id, epoch, t, terminal, make), tenancy: t };
    } finally {
      t.writing--;
      this.#core.schedule();
    }
  }

  async #casLoop(
    id: string,
    epoch: number,
    t: Tenancy,
    terminal: boolean,
    make: (r: SplitRecord) => SplitRecord,
  ): Promise<SplitRecord> {
    const { store, view, me } = this.#core;
    let record = t.record;
    let revision = t.revision;
    for (let attempt = 0; attempt < 8; attempt++) {
      if (this.held.get(id) !== t) {
        throw new FencedError(id, epoch, -1, `the tenancy at epoch ${epoch} ended while writing`);
      }
      const next = make(record);
      const r = await store.update(keys.split(id), encodeRecord(next), revision);
      if (r.ok) {
        view.applyOwnSplit(id, next, r.revision);
        if (this.held.get(id) === t) {
          t.record = next;
          t.revision = r.revision;
          if (terminal) this.#end(id, t);
        }
        return next;
      }
      const cur = await store.get(keys.split(id));
      const rec = cur ? decodeRecord(cur.key, cur.value, SplitRecordSchema) : undefined;
      if (!cur || !rec || !heldBy(rec, me, epoch)) {
        if (cur) view.putRaw(cur.key, cur.value, cur.revision);
        if (this.held.get(id) === t) this.lose(id, "fenced");
        throw new FencedError(id, epoch, rec?.epoch ?? -1);
      }
      record = rec;
      revision = cur.revision;
    }
    throw new SplitleaseError("STORE_UNAVAILABLE", `Write to split "${id}" kept conflicting; giving up`);
  }

  /** Fenced progress commit; `final` completes the split and ends the tenancy. */
  async commit(id: string, epoch: number, progress: SplitProgress, final: boolean): Promise<void> {
    const { tenancy: t } = await this.#cas(id, epoch, final, (r) => commitRecord(id, r, progress, final));
    if (final) this.#core.log("info", "Completed split", { split: id, epoch });
    else if (this.held.get(id) === t && t.draining && t.cancelled) {
      this.#armNoProgress(id, t); // progress during a withdrawn drain keeps it alive
    }
  }

  /**
   * Graceful release (to the thief of a steal, if any). A release that
   * fails for an outage still ends the tenancy: the store keeps naming this
   * worker, which resumes the split at a new epoch (a fresh `gained`) once
   * the store answers again.
   */
  async release(ids: readonly string[]): Promise<void> {
    await Promise.all(ids.map(async (id) => {
      const t = this.held.get(id);
      if (!t) return;
      try {
        await this.#cas(id, t.epoch, true, (r) => releaseRecord(r, t.reservedFor));
        this.#core.stats.releases++;
        if (t.draining && !t.cancelled && t.reservedFor) bump(this.#core.stats.revocations, "drained");
        this.#core.log("info", "Released split", { split: id, epoch: t.epoch, to: t.reservedFor });
      } catch (e) {
        if (!(e instanceof FencedError)) throw e;
      } finally {
        if (this.held.get(id) === t) this.#end(id, t);
      }
    }));
  }

  /** Poison report: attempts + 1; returns the written record. */
  async fail(id: string, epoch: number, reason: string): Promise<SplitRecord> {
    const { record } = await this.#cas(id, epoch, true, (r) => failRecord(r, reason, this.#core.config.maxAttempts));
    return record;
  }

  /** Releases a split forcibly: `lost` (revoked), the uncommitted tail replays elsewhere. */
  async forceRelease(id: string): Promise<void> {
    const t = this.held.get(id);
    if (!t) return;
    const { store, view } = this.#core;
    this.lose(id, "revoked");
    bump(this.#core.stats.revocations, "forced");
    const next = releaseRecord(t.record, t.reservedFor);
    try {
      // Not held any more (lost above): an echo of this write changes nothing.
      const r = await store.update(keys.split(id), encodeRecord(next), t.revision);
      if (r.ok) view.applyOwnSplit(id, next, r.revision);
    } catch (e) {
      this.#core.log("warn", "Forced release failed; the split frees when the lease lapses", {
        split: id,
        error: String(e),
      });
    }
  }

  /** Requests a cooperative revocation (`revokeRequested`), forced after the drain deadline. */
  requestRevoke(id: string, reservedFor: string | null): void {
    const t = this.held.get(id);
    if (!t || (t.draining && !t.cancelled)) return;
    t.reservedFor = reservedFor;
    t.cancelled = false;
    if (t.drainTimer !== undefined) this.#core.clock.clearTimeout(t.drainTimer);
    if (!t.draining) {
      t.draining = true;
      bump(this.#core.stats.revocations, "requested");
      this.#core.events.push({ type: "revokeRequested", splitId: id });
      this.#core.log("info", "Revocation requested", { split: id, to: reservedFor });
    }
    t.drainTimer = this.#core.clock.setTimeout(() => {
      if (this.held.get(id) === t) void this.forceRelease(id);
    }, this.#core.config.drainDeadlineMs);
  }

  /**
   * The handoff behind a revocation was withdrawn: no thief any more, and the
   * hard deadline becomes a no-progress rule (forced only if the drain
   * commits nothing for `drainDeadlineMs`).
   */
  cancelRevoke(id: string): void {
    const t = this.held.get(id);
    if (!t || !t.draining || t.cancelled || t.reservedFor === null) return;
    t.cancelled = true;
    t.reservedFor = null;
    bump(this.#core.stats.revocations, "cancelled");
    this.#core.log("info", "Revocation withdrawn", { split: id });
    this.#armNoProgress(id, t);
  }

  #armNoProgress(id: string, t: Tenancy): void {
    if (t.drainTimer !== undefined) this.#core.clock.clearTimeout(t.drainTimer);
    t.drainTimer = this.#core.clock.setTimeout(() => {
      if (this.held.get(id) === t) void this.forceRelease(id);
    }, this.#core.config.drainDeadlineMs);
  }
}
