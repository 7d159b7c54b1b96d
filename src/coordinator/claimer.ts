/**
 * The claim path (DESIGN §6): chooses free splits within fair share and
 * lanes, staggers by rendezvous rank against herds, re-reads a dead owner's
 * member record before a takeover, and claims with one CAS per split.
 *
 * @module
 */
import { SplitleaseError } from "../errors.ts";
import { decodeRecord, encodeRecord, SpecRecordSchema, type SplitRecord } from "../records.ts";
import { hashStrings } from "../balance/hash.ts";
import { keys } from "../store/keys.ts";
import { type ClaimCandidate, chooseClaims } from "./claims.ts";
import type { Core } from "./core.ts";
import { bump } from "./stats.ts";
import type { Tenancies } from "./tenancies.ts";
import { claimRecord, releaseRecord } from "./transitions.ts";
import type { CoordinationEvent, SplitSpec } from "./types.ts";

/** Most claims one worker has in flight at once. */
const CLAIM_WAVE = 32;

/** Live peers: instance → session and lanes. */
export type Peers = ReadonlyMap<string, { session: string; maxInFlight: number }>;

/** Claims splits for one worker. */
export class Claimer {
  readonly #core: Core;
  readonly #tenancies: Tenancies;
  readonly #claiming = new Map<string, number>();
  readonly #deferred = new Map<string, number>();
  readonly #specs = new Map<string, SplitSpec>();
  readonly #scores = new Map<string, number>();
  readonly #mayHold: () => boolean;

  /** `mayHold` says whether a won claim may be kept (running, not fenced). */
  constructor(core: Core, tenancies: Tenancies, mayHold: () => boolean) {
    this.#core = core;
    this.#tenancies = tenancies;
    this.#mayHold = mayHold;
  }

  /** Earliest deferred claim still in the future, or `Infinity`. */
  nextDeferred(now: number): number {
    let at = Infinity;
    for (const t of this.#deferred.values()) if (t > now) at = Math.min(at, t);
    return at;
  }

  /** One claim pass. `takeable(instance)` says whether a dead member's splits may be taken now. */
  async pass(
    now: number,
    peers: Peers,
    ownerAlive: (instance: string, session: string) => boolean,
    takeable: (instance: string) => boolean,
  ): Promise<void> {
    const { view, me, config } = this.#core;
    const held = this.#tenancies.held;
    let heldWeight = this.#tenancies.weight();
    for (const w of this.#claiming.values()) heldWeight += w;
    const candidates = chooseClaims({
      me,
      seed: config.job,
      splits: view.splits,
      unowned: view.unowned,
      ownedBy: view.ownedBy,
      loadBy: view.loadBy,
      runnableWeight: view.runnableWeight,
      peers,
      ownerAlive,
      takeable,
      heldCount: held.size + this.#claiming.size,
      heldWeight,
      isMine: (id) => held.has(id) || this.#claiming.has(id),
      score: (id) => this.#score(id),
      skip: () => false,
      // Claims go out in waves of at most CLAIM_WAVE: a worker with many free
      // lanes must not queue a thousand writes ahead of its next heartbeat.
      maxInFlight: Math.min(config.maxInFlight, held.size + CLAIM_WAVE),
      claimStaggerMs: config.claimStaggerMs,
    });
    const due: ClaimCandidate[] = [];
    const chosen = new Set(candidates.map((c) => c.id));
    for (const id of this.#deferred.keys()) if (!chosen.has(id)) this.#deferred.delete(id);
    for (const c of candidates) {
      if (c.delayMs === 0) {
        due.push(c);
        continue;
      }
      const at = this.#deferred.get(c.id);
      if (at === undefined) this.#deferred.set(c.id, now + c.delayMs);
      else if (at <= now) due.push(c);
    }
    if (due.length === 0) return;
    // The records these decisions were made on: the view may move while we
    // re-read owners, and a claim must CAS over what it decided on.
    const decidedOn = new Map(due.map((c) => [c.id, view.splits.get(c.id)?.revision]));
    const takeovers = due.filter((c) => c.kind === "takeover");
    const moved = takeovers.length ? await this.#ownersThatMoved(takeovers) : new Set<string>();
    await Promise.all(due.filter((c) => !moved.has(c.id)).map((c) => this.#claim(c, decidedOn.get(c.id))));
  }

  /**
   * Before a takeover, re-read each dead owner's member record: if it moved
   * since we last saw it, the owner is alive and we were behind (a paused
   * process, a backlog of watch events).
   */
  async #ownersThatMoved(cands: ClaimCandidate[]): Promise<Set<string>> {
    const { view, store, liveness, clock } = this.#core;
    const byOwner = new Map<string, string[]>();
    for (const c of cands) {
      const inst = view.splits.get(c.id)?.record.owner?.instance;
      if (inst) byOwner.set(inst, [...(byOwner.get(inst) ?? []), c.id]);
    }
    const moved = new Set<string>();
    await Promise.all([...byOwner].map(async ([inst, ids]) => {
      const key = keys.member(inst);
      const cur = await store.get(key);
      if (cur && cur.revision !== liveness.get(key)?.revision) {
        liveness.observe(key, cur.revision, clock.now());
        view.putRaw(cur.key, cur.value, cur.revision);
        for (const id of ids) moved.add(id);
      }
    }));
    return moved;
  }

  async #claim(c: ClaimCandidate, decidedOn: number | undefined): Promise<void> {
    const { view, store, me, config, stats, events, log } = this.#core;
    const e = view.splits.get(c.id);
    // Moved since the decision (completed, quarantined, claimed by a peer):
    // the next pass decides again on the new record.
    if (!e || e.revision !== decidedOn) return;
    if (this.#claiming.has(c.id) || this.#tenancies.held.has(c.id)) return;
    this.#claiming.set(c.id, c.weight);
    this.#deferred.delete(c.id);
    try {
      const nonGraceful = c.kind === "takeover" || c.kind === "reclaim";
      const next = claimRecord(e.record, me, nonGraceful, config.maxAttempts);
      // The spec read and the claim CAS are independent: run them together
      // (one round trip on the claim path instead of two).
      const [specRead, claimed] = await Promise.allSettled([
        this.#readSpec(c.id),
        store.update(keys.split(c.id), encodeRecord(next), e.revision),
      ]);
      if (claimed.status === "rejected") throw claimed.reason;
      const r = claimed.value;
      if (!r.ok) {
        const cur = await store.get(keys.split(c.id));
        if (cur) view.putRaw(cur.key, cur.value, cur.revision);
        return;
      }
      view.applyOwnSplit(c.id, next, r.revision);
      if (next.status === "quarantined") {
        this.#quarantined(c.id, next.attempts);
        return;
      }
      if (specRead.status === "rejected" || typeof specRead.value === "string" || !this.#mayHold()) {
        // No usable spec, or stopped or fenced meanwhile: give the split back
        // (an unreadable spec is deterministic poison: quarantine it).
        const reason = specRead.status === "fulfilled" && typeof specRead.value === "string"
          ? specRead.value
          : undefined;
        await this.#handBack(c.id, next, r.revision, reason);
        if (specRead.status === "rejected") throw specRead.reason;
        return;
      }
      const spec = specRead.value;
      this.#tenancies.add(c.id, {
        epoch: next.epoch,
        revision: r.revision,
        record: next,
        spec,
        draining: false,
        reservedFor: null,
        writing: 0,
      });
      bump(stats.acquisitions, c.kind);
      const ev: CoordinationEvent = { type: "gained", split: spec, epoch: next.epoch };
      if (next.progress) ev.progress = next.progress;
      events.push(ev);
      log("info", "Gained split", { split: c.id, epoch: next.epoch, kind: c.kind, attempts: next.attempts });
    } catch (err) {
      log("warn", "Claim failed", { split: c.id, error: String(err) });
    } finally {
      this.#claiming.delete(c.id);
    }
  }

  /** Forgets what is cached about a split (it completed). */
  forgetSpec(id: string): void {
    this.#specs.delete(id);
    this.#scores.delete(id);
  }

  /** Our rendezvous score for a split (memoized: the same every pass). */
  #score(id: string): number {
    let s = this.#scores.get(id);
    if (s === undefined) {
      s = hashStrings([this.#core.config.job, id, this.#core.me.instance]);
      this.#scores.set(id, s);
    }
    return s;
  }

  /** The split's immutable spec (cached), or why it is unreadable. Outages throw. */
  async #readSpec(id: string): Promise<SplitSpec | string> {
    const cached = this.#specs.get(id);
    if (cached) return cached;
    const key = keys.spec(id);
    const entry = await this.#core.store.get(key);
    try {
      if (!entry) throw new SplitleaseError("INVALID_RECORD", `Spec record "${key}" is missing`);
      const rec = decodeRecord(key, entry.value, SpecRecordSchema);
      const spec: SplitSpec = { id, descriptor: rec.descriptor, weight: rec.weight };
      this.#specs.set(id, spec);
      return spec;
    } catch (err) {
      return (err as Error).message;
    }
  }

  /**
   * Undoes a won claim we cannot keep: released (epoch kept, no attempt), or
   * quarantined when the spec is unreadable (`reason`).
   */
  async #handBack(id: string, claimed: SplitRecord, revision: number, reason?: string): Promise<void> {
    const { store, view, log } = this.#core;
    const next: SplitRecord = reason === undefined
      ? releaseRecord(claimed, null)
      : { ...claimed, epoch: claimed.epoch + 1, owner: null, status: "quarantined", lastFailure: reason };
    if (reason !== undefined) log("error", "Unreadable spec: quarantining the split", { key: keys.spec(id), error: reason });
    try {
      const r = await store.update(keys.split(id), encodeRecord(next), revision);
      if (!r.ok) return;
      view.applyOwnSplit(id, next, r.revision);
      if (reason !== undefined) this.#quarantined(id, next.attempts);
    } catch (err) {
      log("warn", "Could not hand back a claimed split; it is resumed later", { split: id, error: String(err) });
    }
  }

  #quarantined(splitId: string, attempts: number): void {
    this.#core.events.push({ type: "quarantined", splitId, attempts });
    this.#core.log("warn", "Split quarantined", { split: splitId, attempts });
  }
}
