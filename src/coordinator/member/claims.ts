/**
 * How a member takes the work its assignment record gives it: grants are
 * started without a write (the leader's write opened them), offers are
 * claimed by CAS into free lanes, spares only once a lane has waited.
 *
 * @module
 */
import { SplitleaseError } from "../../errors.ts";
import type { AssignEntry } from "../../records.ts";
import type { Core } from "../core.ts";
import type { ClaimRecovery } from "./claim_recovery.ts";
import type { DormantTenancies } from "./dormant.ts";
import type { SpecReader } from "./spec_reader.ts";
import { PageReader } from "./page_reader.ts";
import type { Tenancies } from "./tenancies.ts";
import { heldBy, openRecord } from "../../records/transitions.ts";

/** Most claims one worker has in flight at once (a heartbeat must not queue behind a thousand writes). */
const CLAIM_WAVE = 32;

/**
 * The grants and offers of this member's assignment record, started and
 * claimed.
 *
 * @example
 * ```ts ignore
 * const claims = new Claims(core, tenancies, mayClaim, dormant, specs, recovery);
 * claims.setOffers(record.offers);
 * for (const g of record.grants) void claims.grant(g);
 * const next = claims.pump(); // when to look again
 * ```
 */
export class Claims {
  readonly #core: Core;
  readonly #tenancies: Tenancies;
  readonly #mayClaim: () => boolean;
  readonly #dormant: DormantTenancies;
  readonly #specs: SpecReader;
  readonly #recovery: ClaimRecovery;
  /** The plan's pages, for offers of splits not dealt yet. */
  readonly #pages: PageReader;
  #offers: AssignEntry[] = [];
  /** Offers claimed or tried, by id → revision (an offer is tried once per revision). */
  #tried = new Map<string, number>();
  #claiming = new Map<string, number>();
  /** Since when a free lane has had no offer but spares (see {@linkcode Claims.pump}). */
  #laneIdleSince: number | undefined;

  /**
   * Revision of the member-record write that ended our last self-fence (0
   * if none): grants at older split revisions are resumed by CAS.
   */
  restoredAt = 0;

  /** `mayClaim` says whether new work may be taken (running, not draining, not fenced). */
  constructor(
    core: Core,
    tenancies: Tenancies,
    mayClaim: () => boolean,
    dormant: DormantTenancies,
    specs: SpecReader,
    recovery: ClaimRecovery,
  ) {
    this.#core = core;
    this.#tenancies = tenancies;
    this.#mayClaim = mayClaim;
    this.#dormant = dormant;
    this.#specs = specs;
    this.#recovery = recovery;
    this.#pages = new PageReader(core);
  }

  /** Splits being claimed or started now (id → weight). */
  get claiming(): ReadonlyMap<string, number> {
    return this.#claiming;
  }

  /** Offers not yet claimed. */
  get offered(): number {
    return this.#offers.length;
  }

  /** The offers of a new assignment record (those tried at their revision are dropped). */
  setOffers(offers: readonly AssignEntry[]): void {
    // Offers of a split we still hold (its terminal write not yet returned) are kept for later.
    this.#offers = offers.filter((o) => this.#tried.get(o.id) !== o.rev);
    // Forget tries of splits no longer offered (a new offer of them comes at a new revision).
    if (this.#tried.size > 4 * (offers.length + 64)) {
      const live = new Set(offers.map((o) => o.id));
      for (const id of this.#tried.keys()) if (!live.has(id)) this.#tried.delete(id);
    }
  }

  /** A claim of `o` failed for an outage: it may be tried again at the same revision. */
  retry(o: AssignEntry | undefined, id: string): void {
    this.#tried.delete(id);
    if (o && !this.#offers.some((x) => x.id === id)) this.#offers.push(o);
  }

  /** A split opened for us: start it without a write. */
  async grant(g: AssignEntry): Promise<void> {
    const { me } = this.#core;
    const cur = this.#tenancies.held.get(g.id);
    // Re-granted (anti-entropy) while we hold it but nothing runs it: resume it at a new epoch.
    if (cur?.stuck && this.#tenancies.unstick(g.id, g.epoch)) return void this.#dormant.resume();
    if (cur && cur.epoch >= g.epoch) return;
    if ((this.#tenancies.ended.get(g.id) ?? -1) >= g.epoch || this.#claiming.has(g.id)) return;
    this.#claiming.set(g.id, g.rec?.weight ?? 1);
    try {
      // Not inline: read at or past the revision the grant names (an older answer is a stale read, not the split).
      const got = g.rec ? { record: g.rec, revision: g.rev } : await this.#core.splits.readPast(g.id, g.rev);
      if (!got) return;
      const { record: rec, revision: rev } = got;
      if (!heldBy(rec, me, g.epoch)) return;
      const spec = await this.#specs.read(g.id, rec);
      if (typeof spec === "string") {
        // Missing: handed back, no attempt; unreadable: poison, quarantined.
        await this.#recovery.handBack(g.id, rec, rev, spec);
        return;
      }
      const now = this.#tenancies.held.get(g.id);
      if (now && now.epoch >= g.epoch) return;
      if (now) this.#tenancies.lose(g.id, "fenced"); // a newer epoch of ours means the old tenancy is over
      if ((this.#tenancies.ended.get(g.id) ?? -1) >= g.epoch) return;
      if (!this.#mayClaim()) {
        // Fenced, draining or not yet proven live: resumed (or released) once a heartbeat lands, never started now.
        this.#dormant.remember(g.id, { epoch: g.epoch, revision: rev, record: rec, spec });
        return;
      }
      if (this.busyLanes(g.id) >= this.#core.lanes()) {
        // Every lane is taken: spares claimed while the leader that opened
        // this split was slow or died before telling us (its reservation of
        // our lane went with it). The split goes back to be dealt to a free
        // lane (no attempt) rather than wait here past maxInFlight.
        this.#core.log("info", "Grant beyond the free lanes handed back", { split: g.id, lanes: this.#core.lanes() });
        await this.#recovery.handBack(g.id, rec, rev);
        return;
      }
      if (rev < this.restoredAt) {
        // Granted before the heartbeat that ended our last self-fence: the
        // leader may have judged us dead since and be taking it over now.
        // Resume it by CAS (epoch + 1, no attempt) rather than start it
        // without a write: the CAS settles which of us holds it.
        this.#dormant.remember(g.id, { epoch: g.epoch, revision: rev, record: rec, spec });
        void this.#dormant.resume();
        return;
      }
      await this.#recovery.start(g.id, { epoch: g.epoch, revision: rev, record: rec, spec, draining: false, to: null }, g.why ?? "grant");
    } catch (e) {
      this.#recovery.recover(g.id, g.epoch, e, 0, g.rev);
    } finally {
      this.#claiming.delete(g.id);
      this.#core.schedule();
    }
  }

  /**
   * Lanes taken, by splits other than `id` when given: held (running or
   * not), being claimed or started, waiting to be resumed after a
   * self-fence, or claimed in a write whose reply was lost (it may be ours:
   * the record is being read again). Every way a split reaches a lane
   * checks it, so a member never holds more than `maxInFlight`.
   */
  busyLanes(id?: string): number {
    const held = this.#tenancies.held;
    // A split that just started is held and still being claimed until its start returns: one lane.
    let claiming = 0;
    for (const c of this.#claiming.keys()) if (!held.has(c)) claiming++;
    const n = held.size + claiming + this.#dormant.size + this.#recovery.pending;
    if (id === undefined) return n;
    return n - [held.has(id), this.#claiming.has(id) && !held.has(id), this.#dormant.has(id), this.#recovery.has(id)].filter(Boolean).length;
  }

  /**
   * Claims offers into free lanes, in waves of at most {@linkcode CLAIM_WAVE}:
   * offers for lanes at once, spares only once a lane has had nothing else
   * for `spareClaimAfterMs` (the leader deals each free lane the next split
   * in order, perhaps another member's spare: claiming our own at once would
   * start a later split while an earlier one waits). Returns when to look
   * again (`Infinity`: on the next event).
   */
  pump(): number {
    if (!this.#mayClaim()) return Infinity;
    const max = this.#core.lanes();
    const held = this.#tenancies.held;
    if (this.#offers.length === 0 || this.busyLanes() >= max) {
      this.#laneIdleSince = undefined;
      return Infinity;
    }
    const now = this.#core.clock.now();
    const keep: AssignEntry[] = [];
    let spares = 0;
    for (const spare of [false, true]) {
      if (spare) {
        if (spares === 0 || this.busyLanes() >= max) break;
        this.#laneIdleSince ??= now;
        if (now - this.#laneIdleSince < this.#core.timings.spareClaimAfterMs) break;
      }
      for (const o of spare ? keep.splice(0) : this.#offers) {
        if (this.#tried.get(o.id) === o.rev) continue;
        if (
          (o.spare === true) !== spare ||
          held.has(o.id) || this.#claiming.has(o.id) || this.#recovery.has(o.id) ||
          this.busyLanes() >= max || this.#claiming.size >= CLAIM_WAVE
        ) {
          if (o.spare === true && !spare) spares++;
          keep.push(o);
          continue;
        }
        void this.#claim(o);
      }
    }
    this.#offers = keep;
    if (this.busyLanes() >= max || spares === 0) {
      this.#laneIdleSince = undefined;
      return Infinity;
    }
    return this.#laneIdleSince === undefined ? Infinity : this.#laneIdleSince + this.#core.timings.spareClaimAfterMs;
  }

  async #claim(o: AssignEntry): Promise<void> {
    const { splits, me, config, stats, log } = this.#core;
    this.#claiming.set(o.id, o.rec?.weight ?? 1);
    this.#tried.set(o.id, o.rev);
    try {
      // A spare carries no record: read at or past the revision offered. Taken as it came, a stale answer
      // (an older record, or none) made the claim lose or give up, and the offer, marked tried at its
      // revision, was never claimed again while the leader kept it offered (issue 40). A planned split
      // not dealt yet has no record: its offer names its page of the plan, where the record is read.
      const got = o.rec
        ? { record: o.rec, revision: o.rev }
        : o.rev === 0 && o.page !== undefined
        ? await this.#pages.record(o.page, o.id).then((record) => record && { record, revision: 0 })
        : await splits.readPast(o.id, o.rev);
      if (!got) {
        // A page that could not be read or did not list the split (a replica from before it was written, past
        // the read's budget). Marked tried at revision 0, the offer was never claimed again while the leader kept
        // offering it — still at revision 0 until it is dealt — and the job never ended (sharded simulation,
        // seed 845). The offer is tried again after a backoff, as after an outage.
        if (o.rev === 0 && o.page !== undefined) this.#recovery.recover(o.id, Number.MAX_SAFE_INTEGER, "its page of the plan could not be read", 0, 0);
        return;
      }
      const { record: rec, revision: rev } = got;
      if (rec.status !== "runnable" || rec.owner !== null) return; // stale offer
      const next = openRecord(rec, me, false, config.maxAttempts, this.#core.clock.wallNow());
      stats.claimAttempts++;
      const [specRead, claimed] = await Promise.allSettled([
        this.#specs.read(o.id, rec),
        // A planned split not dealt yet (revision 0): the claim creates its record.
        rev === 0 ? splits.create(o.id, next, "claim") : splits.write(o.id, next, rev, "claim"),
      ]);
      if (claimed.status === "rejected") {
        // Landed or not, we cannot tell: find out from the record itself.
        this.#recovery.recover(o.id, next.epoch, claimed.reason, 0, rev);
        return;
      }
      if (!claimed.value.ok) return; // moved since the offer: the leader will tell us
      const revision = claimed.value.revision;
      const spec = specRead.status === "fulfilled" ? specRead.value : undefined;
      if (typeof spec !== "object" || !this.#mayClaim()) {
        if (specRead.status === "rejected") return this.#recovery.recover(o.id, next.epoch, specRead.reason, 0, revision);
        await this.#recovery.handBack(o.id, next, revision, typeof spec === "string" ? spec : undefined);
        return;
      }
      try {
        await this.#recovery.start(o.id, { epoch: next.epoch, revision, record: next, spec, draining: false, to: null }, o.why ?? "claim");
      } catch (e) {
        this.#recovery.recover(o.id, next.epoch, e); // ours, not started (its fence met an outage): started once it answers
      }
    } catch (e) {
      if (e instanceof SplitleaseError && e.code === "STORE_UNAVAILABLE") {
        // The record read before the claim failed (nothing was written): retry
        // the offer with backoff rather than never (the leader re-offers only
        // at a new revision).
        this.#recovery.recover(o.id, Number.MAX_SAFE_INTEGER, e, 0, o.rev);
      } else log("warn", "Claim failed", { split: o.id, error: String(e) });
    } finally {
      this.#claiming.delete(o.id);
      this.#core.schedule();
    }
  }
}
