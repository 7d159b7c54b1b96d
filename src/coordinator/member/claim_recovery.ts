/**
 * Claims and grants a member could not finish (docs/DESIGN.md, "A claim whose
 * reply is lost"): an outage leaves the split possibly ours with no lane
 * running it, so its record is re-read with backoff; and a won claim that
 * cannot be kept (we stopped taking work, its spec is missing or
 * unreadable) is handed back or quarantined.
 *
 * @module
 */
import { InvalidRecordError } from "../../errors.ts";
import type { SplitRecord } from "../../records.ts";
import type { Core } from "../core.ts";
import type { SpecReader } from "./spec_reader.ts";
import type { Tenancies } from "./tenancies.ts";
import type { Tenancy } from "./tenancy.ts";
import { handBackRecord, heldBy, mustFence, releaseRecord, type Settled } from "../../records/transitions.ts";

/**
 * Re-reads interrupted claims and hands back won claims a member cannot keep.
 *
 * @example
 * ```ts
 * import type { ClaimRecovery } from "./claim_recovery.ts";
 * const stopAll = (r: ClaimRecovery) => r.stop(); // no more re-reads once the member stops
 * ```
 */
export class ClaimRecovery {
  readonly #core: Core;
  readonly #tenancies: Tenancies;
  readonly #specs: SpecReader;
  readonly #mayClaim: () => boolean;
  readonly #retryOffer: (id: string) => void;
  readonly #lanesFull: (id: string) => boolean;
  /** Splits being re-read. */
  readonly #pending = new Set<string>();
  /** Splits found ours by a re-read, being started (their spec read, their fence). */
  readonly #starting = new Set<string>();
  readonly #timers = new Set<unknown>();
  #stopped = false;

  /**
   * `retryOffer(id)`: a claim that did not land may be tried again from the
   * member's offers; `lanesFull(id)`: whether every lane is taken by other
   * splits (one found ours then is handed back, never run past `maxInFlight`).
   */
  constructor(
    core: Core,
    tenancies: Tenancies,
    specs: SpecReader,
    mayClaim: () => boolean,
    retryOffer: (id: string) => void,
    lanesFull: (id: string) => boolean,
  ) {
    this.#core = core;
    this.#tenancies = tenancies;
    this.#specs = specs;
    this.#mayClaim = mayClaim;
    this.#retryOffer = retryOffer;
    this.#lanesFull = lanesFull;
  }

  /** Whether `id` is being re-read or started (not to be claimed meanwhile). */
  has(id: string): boolean {
    return this.#pending.has(id) || this.#starting.has(id);
  }

  /** Splits being re-read or started: each may be ours, so each takes a lane meanwhile. */
  get pending(): number {
    let n = this.#pending.size;
    for (const id of this.#starting) if (!this.#pending.has(id)) n++;
    return n;
  }

  /** Stops re-reading. */
  stop(): void {
    this.#stopped = true;
    for (const t of this.#timers) this.#core.clock.clearTimeout(t);
    this.#timers.clear();
  }

  /**
   * A claim or grant we could not finish (an outage: the write may have
   * landed, or the descriptor could not be read). Until the record says
   * otherwise the split may be ours at `epoch` with no lane running it, so
   * re-read it with backoff: ours → start it; still free → offer it to
   * ourselves again; moved on → nothing to do. `floor` is a revision the
   * record is known to have reached (the offer's or grant's, or the one our
   * hand-back wrote at): an answer from before it is a stale read, read
   * again — taken as the record, "absent" from before the split was created
   * dropped a free split the leader kept offered to us (issue 40).
   */
  recover(id: string, epoch: number, cause: unknown, attempt = 0, floor = 0): void {
    const { clock, log, splits, me } = this.#core;
    if (attempt === 0) log("warn", "Claim interrupted by an outage; checking the split record", { split: id, error: String(cause) });
    const delay = Math.min(this.#core.timings.claimRecheckMaxMs, 50 * 2 ** Math.min(attempt, 8));
    this.#pending.add(id);
    const timer = clock.setTimeout(async () => {
      this.#timers.delete(timer);
      if (this.#stopped) {
        this.#pending.delete(id);
        return;
      }
      try {
        const e = await splits.readPast(id, floor);
        const rec = e?.record;
        this.#pending.delete(id);
        if (!e) return this.#retryOffer(id); // a claim that would have created it did not land: the offer stands
        if (!rec || this.#tenancies.held.has(id)) return;
        if (heldBy(rec, me, epoch) && (this.#tenancies.ended.get(id) ?? -1) < epoch) {
          // Ours: it takes a lane until it starts (its spec read, its fence), as a claim does.
          this.#starting.add(id);
          try {
            const spec = await this.#specs.read(id, rec);
            if (typeof spec !== "object") {
              await this.handBack(id, rec, e.revision, spec);
              return;
            }
            if (this.#tenancies.held.has(id) || !this.#mayClaim() || this.#lanesFull(id)) {
              if (!this.#tenancies.held.has(id)) await this.handBack(id, rec, e.revision);
              return;
            }
            await this.start(id, { epoch, revision: e.revision, record: rec, spec, draining: false, to: null }, "claim");
          } finally {
            this.#starting.delete(id);
          }
        } else if (rec.status === "runnable" && rec.owner === null) {
          // Not landed: the leader's offer, if still ours, can be tried again.
          this.#retryOffer(id);
        }
      } catch (err) {
        this.recover(id, epoch, err, attempt + 1, floor);
      }
    }, delay);
    this.#timers.add(timer);
  }

  /**
   * Starts a tenancy we hold (see `Tenancies.open`: the progress record is
   * fenced first when an older tenancy might still commit). A progress
   * record that cannot be read leaves the position unknown: the split is
   * handed back (no attempt; the leader backs it off) with the reason in
   * its failure history, and nothing runs it until the record is repaired
   * or deleted. Whether it started.
   */
  async start(id: string, t: Omit<Tenancy, "prog">, kind: string): Promise<boolean> {
    try {
      return await this.#tenancies.open(id, t, kind);
    } catch (e) {
      if (!(e instanceof InvalidRecordError)) throw e;
      this.#core.log("error", "Unreadable progress record: the split is handed back until it is repaired", { split: id, error: e.message });
      await this.handBack(id, t.record, t.revision, `${e.message}: repair it, or delete it to resume from the split record's last position`);
      return false;
    }
  }

  /**
   * Undoes a won claim we cannot keep: released (no attempt) when we stopped
   * meanwhile or the spec is missing, quarantined when the spec is unreadable
   * (deterministic poison).
   */
  async handBack(id: string, claimed: SplitRecord, revision: number, problem?: string): Promise<void> {
    const { splits, log, events, me, clock } = this.#core;
    // Ended here, though it never started: a later delivery of the same grant (a lagging watch) must not start it
    // after this write handed it on — past `closed`, a successor starts without fencing its progress record.
    // Until the write is known not to have handed it on: then the split may still be ours, and is checked again.
    const ended = this.#tenancies.ended;
    const before = ended.get(id);
    if ((before ?? -1) < claimed.epoch) ended.set(id, claimed.epoch);
    const undo = () => {
      if (ended.get(id) !== claimed.epoch) return;
      if (before === undefined) ended.delete(id);
      else ended.set(id, before);
    };
    const poison = problem?.startsWith("unreadable: ");
    // Never started: when no older tenancy could write its progress record either, the next one needs no fence.
    const settled: Settled | undefined = mustFence(claimed, claimed.epoch) ? undefined : { progress: claimed.progress, records: claimed.records };
    const next: SplitRecord = poison
      ? { ...claimed, owner: null, status: "quarantined", lastFailure: problem!.slice(12) }
      : problem
      ? handBackRecord(claimed, `${problem.replace(/^missing: s/, "S")} (handed back, no attempt charged)`, me.instance, clock.wallNow(), settled)
      : releaseRecord(claimed, null, clock.wallNow(), settled);
    if (problem) log("error", poison ? "Unreadable spec: quarantining the split" : "Spec missing: handing the split back", { split: id, error: problem });
    try {
      const r = await splits.write(id, next, revision, "handBack");
      // Logged once, by the event's consumer (the worker's `Split quarantined` line).
      if (r.ok && poison) events.push({ type: "quarantined", splitId: id, attempts: next.attempts });
      if (!r.ok) {
        // Moved on — or written again at our epoch since the record we hold: then it is still ours.
        undo();
        this.recover(id, claimed.epoch, new Error(`the hand-back of split "${id}" lost its compare-and-swap`), 1, revision);
      }
    } catch (err) {
      // Its outcome is unknown, and it may land yet: this epoch is never started again (a late
      // hand-back would close the progress record under it). Released again by CAS once a beat
      // lands, at a revision only our own write or the one we hold can be at; moved on, nothing.
      log("warn", "Could not hand back a claimed split; releasing it again once the store answers", { split: id, error: String(err) });
      const spec = { id, descriptor: claimed.descriptor ?? null, weight: claimed.weight };
      this.#tenancies.onOrphan(id, { epoch: claimed.epoch, revision, record: claimed, spec, release: true });
    }
  }
}
