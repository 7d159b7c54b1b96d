/**
 * Claims and grants a member could not finish (docs/DESIGN.md, "A claim whose
 * reply is lost"): an outage leaves the split possibly ours with no lane
 * running it, so its record is re-read with backoff; and a won claim that
 * cannot be kept (we stopped taking work, its spec is missing or
 * unreadable) is handed back or quarantined.
 *
 * @module
 */
import type { SplitRecord } from "../../records.ts";
import type { Core } from "../core.ts";
import type { SpecReader } from "./spec_reader.ts";
import type { Tenancies } from "./tenancies.ts";
import { handBackRecord, heldBy, releaseRecord } from "../../records/transitions.ts";

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

  /** Whether `id` is being re-read (not to be claimed meanwhile). */
  has(id: string): boolean {
    return this.#pending.has(id);
  }

  /** Splits being re-read: each may be ours, so each takes a lane meanwhile. */
  get pending(): number {
    return this.#pending.size;
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
        if (!e || !rec || this.#tenancies.held.has(id)) return;
        if (heldBy(rec, me, epoch) && (this.#tenancies.ended.get(id) ?? -1) < epoch) {
          const spec = await this.#specs.read(id, rec);
          if (typeof spec !== "object") {
            await this.handBack(id, rec, e.revision, spec);
            return;
          }
          if (this.#tenancies.held.has(id) || !this.#mayClaim() || this.#lanesFull(id)) {
            if (!this.#tenancies.held.has(id)) await this.handBack(id, rec, e.revision);
            return;
          }
          this.#tenancies.add(id, { epoch, revision: e.revision, record: rec, spec, draining: false, to: null }, "claim");
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
   * Undoes a won claim we cannot keep: released (no attempt) when we stopped
   * meanwhile or the spec is missing, quarantined when the spec is unreadable
   * (deterministic poison).
   */
  async handBack(id: string, claimed: SplitRecord, revision: number, problem?: string): Promise<void> {
    const { splits, log, events, me, clock } = this.#core;
    const poison = problem?.startsWith("unreadable: ");
    const next: SplitRecord = poison
      ? { ...claimed, owner: null, status: "quarantined", lastFailure: problem!.slice(12) }
      : problem
      ? handBackRecord(claimed, `${problem.replace(/^missing: s/, "S")} (handed back, no attempt charged)`, me.instance, clock.wallNow())
      : releaseRecord(claimed, null, clock.wallNow());
    if (problem) log("error", poison ? "Unreadable spec: quarantining the split" : "Spec missing: handing the split back", { split: id, error: problem });
    try {
      const r = await splits.write(id, next, revision, "handBack");
      // Logged once, by the event's consumer (the worker's `Split quarantined` line).
      if (r.ok && poison) events.push({ type: "quarantined", splitId: id, attempts: next.attempts });
    } catch (err) {
      log("warn", "Could not hand back a claimed split; checking it again later", { split: id, error: String(err) });
      this.recover(id, claimed.epoch, err, 1, revision);
    }
  }
}
