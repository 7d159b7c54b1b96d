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
  /** Offers: split id → revision offered. */
  readonly offers: Map<string, number> = new Map();
  /**
   * The offers that are spares (beyond its free lanes): listed with
   * `spare: true`, claimed only when the leader has not answered a free
   * lane for `spareClaimAfterMs` (docs/DESIGN.md, "How a split reaches a worker").
   */
  readonly spares: Set<string> = new Set();
  offeredWeight = 0;
  readonly #grants = new Map<string, Grant>();
  readonly #revokes = new Map<string, Revoke>();
  readonly #drops = new Map<string, Drop>();
  readonly #asks = new Map<string, CutAsk>();
  /** Splits whose revocation names this member as successor. */
  readonly #expected = new Set<string>();
  /** Lanes reserved for seeds being written for it. */
  #reserved = 0;
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

  constructor(instance: string, session: string, maxInFlight: number, draining: boolean, planner: boolean) {
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

  /** Revokes by split id. */
  get revokes(): ReadonlyMap<string, Revoke> {
    return this.#revokes;
  }

  /** Asks the member to release `id` (listed in its next record). */
  revoke(id: string, r: Revoke): void {
    this.#revokes.set(id, r);
    this.#dirty = true;
  }

  /** Names `to` as successor of the revocation of `id` (listed in its next record). */
  nameSuccessor(id: string, to: Owner): void {
    const r = this.#revokes.get(id);
    if (!r) throw new Error(`Member "${this.instance}" has no revocation of split "${id}" to name a successor for`);
    this.#revokes.set(id, { ...r, to });
    this.#dirty = true;
  }

  /** The successor of the revocation of `id` is gone: it goes on with none. */
  unnameSuccessor(id: string): void {
    const r = this.#revokes.get(id);
    if (!r?.to) return;
    const { to: _gone, ...rest } = r;
    this.#revokes.set(id, rest);
    this.#dirty = true;
  }

  /** Withdraws or settles the revocation of `id`; returns it, if there was one. */
  unrevoke(id: string): Revoke | undefined {
    const r = this.#revokes.get(id);
    if (!r) return undefined;
    this.#revokes.delete(id);
    this.#dirty = true;
    return r;
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
   * Lanes it must keep free: revocations naming it as successor, and seeds
   * being written for it. Derived from what is pending, so a settle or
   * withdrawal counted twice cannot make it drift.
   */
  get incoming(): number {
    return this.#expected.size + this.#reserved;
  }

  /** A revocation of `id` names this member as successor. */
  expect(id: string): void {
    this.#expected.add(id);
  }

  /** Whether a revocation of `id` names this member as successor. */
  expects(id: string): boolean {
    return this.#expected.has(id);
  }

  /** The revocation of `id` naming it settled or changed successor. */
  unexpect(id: string): void {
    this.#expected.delete(id);
  }

  /** A seed is being written for it (see `SeedRuns.reserve`). */
  reserveLane(): void {
    this.#reserved++;
  }

  /** That seed was written (or failed). */
  unreserveLane(): void {
    if (this.#reserved === 0) throw new Error(`No lane of member "${this.instance}" is reserved`);
    this.#reserved--;
  }

  /** Offers for its free lanes (the offers that are not spares). */
  get plain(): number {
    return this.offers.size - this.spares.size;
  }

  /** Adds an offer (a spare, or one for a free lane). */
  offer(id: string, rev: number, weight: number, spare = false): void {
    this.offers.set(id, rev);
    if (spare) this.spares.add(id);
    else this.spares.delete(id);
    this.offeredWeight += weight;
    this.#dirty = true;
  }

  /** Forgets an offer (claimed, moved, or gone); returns whether it was there. */
  unoffer(id: string, weight: number): boolean {
    this.spares.delete(id);
    if (!this.offers.delete(id)) return false;
    this.offeredWeight = Math.max(0, this.offeredWeight - weight);
    if (this.offers.size === 0) this.offeredWeight = 0;
    return true;
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
    return { session: this.session, revokes: this.#revokes, grants: this.#grants, offers: this.offers, spares: this.spares, asks: this.#asks };
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
