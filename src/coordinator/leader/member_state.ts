/**
 * What the leader has told (or will tell) one member — its offers, grants,
 * revokes and drops — and the writer of that member's `assign.<instance>`
 * record: one write in flight per member, changes made meanwhile coalesce
 * into the next write, CAS at the revision it last wrote or read.
 *
 * @module
 */
import { AssignRecordSchema, encodeRecord, type Owner, safeDecodeRecord } from "../../records.ts";
import { SplitleaseError } from "../../errors.ts";
import { keys } from "../../store/keys.ts";
import type { Core } from "../core.ts";
import { hashStrings } from "../../balance/hash.ts";
import type { CutAsk, Drop, Grant, Revoke } from "./directives.ts";
import { type LeaderView, ownerKey } from "./leader_view.ts";
import { type AssignListing, buildAssignRecord } from "./assign_build.ts";
import type { MemberPromises } from "./promises.ts";

/** The leader's state for one live member session. */
export class MemberState {
  readonly instance: string;
  readonly session: string;
  /** `ownerKey(instance, session)`, built once: passes look members up by it on every event. */
  readonly key: string;
  /** A hash of `key`, for the membership signature. */
  readonly keyHash: number;
  /** Its `member.<instance>` key. */
  readonly memberKey: string;
  maxInFlight: number;
  draining: boolean;
  planner: boolean;
  /**
   * What it is promised — offers, spares, revocations, lanes on their way —
   * read-only: the {@linkcode AssignmentTracker} that created this state
   * is its one owner.
   */
  readonly promised: MemberPromises;
  readonly #grants = new Map<string, Grant>();
  readonly #drops = new Map<string, Drop>();
  readonly #asks = new Map<string, CutAsk>();
  /** Revision of its assignment record, when known. */
  rev: number | undefined;
  #seq = 0;
  #dirty = false;
  #writing: Promise<unknown> | undefined;
  /** Offers held at the last write (refills wait until half are used). */
  offersAtWrite = 0;
  /** Consecutive beats on which the member reported holding fewer splits than the store names it for. */
  suspect = 0;
  /** Since when its next write waits for this leader's own releases to it (see `ReleaseHold` in release_hold.ts). */
  holdSince: number | undefined;

  /** Built by {@linkcode AssignmentTracker.member}, which keeps `promised`. */
  constructor(instance: string, session: string, maxInFlight: number, draining: boolean, planner: boolean, promised: MemberPromises) {
    this.promised = promised;
    this.instance = instance;
    this.session = session;
    this.key = ownerKey(instance, session);
    this.keyHash = hashStrings([this.key]) % 2 ** 32; // sums of many stay exact
    this.memberKey = keys.member(instance);
    this.maxInFlight = maxInFlight;
    this.draining = draining;
    this.planner = planner;
  }

  /** The owner this state is for. */
  get owner(): Owner {
    return { instance: this.instance, session: this.session };
  }

  /** Whether its record has changes not yet written. */
  get dirty(): boolean {
    return this.#dirty;
  }

  /** Marks the record as changed. */
  touch(): void {
    this.#dirty = true;
  }

  /**
   * Grants: split id → epoch opened for the member (and why), until the
   * member wrote to the split at that epoch or acknowledged a record that
   * listed it (`at`: the revision of the first write that carried it).
   */
  get grants(): ReadonlyMap<string, Grant> {
    return this.#grants;
  }

  /** Lists a split opened for the member in its next record. */
  grant(id: string, g: Grant): void {
    this.#grants.set(id, g);
    this.#dirty = true;
  }

  /** Stops listing a grant (acknowledged, or the split moved on): nothing to write for it. */
  forgetGrant(id: string): void {
    this.#grants.delete(id);
  }

  /** Offers: split id → revision offered (see {@linkcode MemberPromises.offers}). */
  get offers(): ReadonlyMap<string, number> {
    return this.promised.offers;
  }

  /**
   * The offers that are spares (beyond its free lanes): listed with
   * `spare: true`, claimed only when the leader has not answered a free
   * lane for `spareClaimAfterMs` (docs/DESIGN.md, "How a split reaches a worker").
   */
  get spares(): ReadonlySet<string> {
    return this.promised.spares;
  }

  /** Total weight of its offers. */
  get offeredWeight(): number {
    return this.promised.offeredWeight;
  }

  /** Offers for its free lanes (the offers that are not spares). */
  get plain(): number {
    return this.promised.plain;
  }

  /** Revokes by split id. */
  get revokes(): ReadonlyMap<string, Revoke> {
    return this.promised.revokes;
  }

  /**
   * Lanes it must keep free: revocations naming it as successor, and seeds
   * and takeovers being written for it.
   */
  get incoming(): number {
    return this.promised.incoming;
  }

  /** Whether a revocation of `id` names this member as successor. */
  expects(id: string): boolean {
    return this.promised.expects(id);
  }

  /** Asks to cut a held split's remaining work, by split id. */
  get asks(): ReadonlyMap<string, CutAsk> {
    return this.#asks;
  }

  /** Asks the member to cut the remaining work of `id` (listed in its next record). */
  ask(id: string, a: CutAsk): void {
    this.#asks.set(id, a);
    this.#dirty = true;
  }

  /** The ask of `id` was answered, declined or overtaken; returns it, if there was one. */
  unask(id: string): CutAsk | undefined {
    const a = this.#asks.get(id);
    if (!a) return undefined;
    this.#asks.delete(id);
    this.#dirty = true;
    return a;
  }

  /** Drops to write once. */
  get drops(): ReadonlyMap<string, Drop> {
    return this.#drops;
  }

  /** Tells the member to stop a tenancy it may still run (listed once). */
  drop(id: string, d: Drop): void {
    this.#drops.set(id, d);
    this.#dirty = true;
  }

  /**
   * Writes the record if it changed and no write is in flight. `onDeposed`
   * runs when a newer term wrote it (this leader was deposed).
   */
  flush(core: Core, view: LeaderView, term: number, onDeposed: () => void): Promise<boolean> {
    if (!this.#dirty || this.#writing) return Promise.resolve(false);
    this.#dirty = false;
    const p = this.#write(core, view, term, onDeposed);
    this.#writing = p;
    return p;
  }

  /** Resolves once no write is in flight and nothing is left to write (or a write failed). */
  async settle(core: Core, view: LeaderView, term: number, onDeposed: () => void): Promise<void> {
    for (let i = 0; i < 4 && (this.#dirty || this.#writing); i++) {
      if (this.#writing) await this.#writing;
      else if (!(await this.flush(core, view, term, onDeposed)) || this.rev === undefined) return;
    }
  }

  async #write(core: Core, view: LeaderView, term: number, onDeposed: () => void): Promise<boolean> {
    const { store, log } = core;
    const key = keys.assign(this.instance);
    const drops = [...this.drops];
    let replacing: string | undefined;
    try {
      if (this.rev === undefined) {
        const cur = await store.get(key);
        const read = cur ? safeDecodeRecord(key, cur.value, AssignRecordSchema) : undefined;
        if (read?.ok && read.value.term > term) {
          onDeposed();
          return false;
        }
        // Unreadable: ours to overwrite (CAS at its revision), reported once the write lands.
        if (read && !read.ok) replacing = read.error.message;
        this.rev = cur?.revision ?? 0;
      }
      const listed: Grant[] = [];
      const { record: rec, unlisted } = buildAssignRecord({ ...this.#listing(), seq: ++this.#seq }, view, term, drops, listed);
      const value = encodeRecord(rec);
      const r = this.rev === 0 ? await store.create(key, value) : await store.update(key, value, this.rev);
      if (r.ok) {
        this.rev = r.revision;
        if (replacing !== undefined) core.replaced.note(key, replacing);
        for (const g of listed) g.at ??= r.revision;
        this.offersAtWrite = this.offers.size;
        for (const [id, d] of drops) if (this.#drops.get(id) === d) this.#drops.delete(id);
        if (unlisted) this.#dirty = true; // what did not fit goes out in the next write
        return true;
      }
      this.rev = undefined; // read it again next time (a deposed leader, or our own maybe-landed write)
      this.#dirty = true;
    } catch (e) {
      this.#dirty = true;
      this.rev = undefined;
      if (!(e instanceof SplitleaseError && e.code === "STORE_UNAVAILABLE")) {
        // Not an outage (a bug, a refused value): retried with the next change, not in a loop.
        log("error", "Assignment write failed", { member: this.instance, error: String(e) });
        return false;
      }
      log("warn", "Assignment write failed; retrying", { member: this.instance, error: String(e) });
    } finally {
      this.#writing = undefined;
    }
    return true;
  }

  #listing(): Omit<AssignListing, "seq"> {
    const p = this.promised;
    return { session: this.session, revokes: p.revokes, grants: this.#grants, offers: p.offers, spares: p.spares, asks: this.#asks };
  }

  /**
   * The member applied its assignment record at revision `seen`: every grant
   * that record listed is known to it (started, dormant or being recovered),
   * so later records leave them out. Without this a member holding long
   * splits that it rarely commits would be sent all of them on every write.
   * No write is needed for this alone: the next change carries the shorter list.
   */
  acknowledge(seen: number): void {
    for (const [id, g] of this.#grants) if (g.at !== undefined && g.at <= seen) this.#grants.delete(id);
  }
}
