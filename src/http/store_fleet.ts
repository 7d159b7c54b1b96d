/**
 * How `GET /fleet` reads one store (`StoreFleet`): a cached full read of a
 * small job, a live index of a large one, and the job's small records
 * either way. Apart from the routes (fleet_routes.ts), which parse requests,
 * fold the shards' views and answer: this file holds what is read and kept
 * between requests.
 *
 * @module
 */
import { buildFleetView } from "../fleet/fleet_view.ts";
import type { FleetLiveness } from "../fleet/fleet_member.ts";
import type { FleetQuery } from "../fleet/fleet_query.ts";
import type { FleetSnapshot, FleetView } from "../fleet/types.ts";
import { isEmptySnapshot, readFleetSnapshot } from "../fleet/read_fleet.ts";
import { FleetIndex } from "../fleet/fleet_index.ts";
import { buildFleetSummary, readSummarySnapshot, type SummarySnapshot } from "../fleet/fleet_summary.ts";
import type { Store } from "../store/store.ts";


/**
 * A read that serves every request within `ms` (pages, filters, several
 * open pages); a failed one is not kept.
 */
function cachedRead<T>(ms: number, read: () => Promise<T>): { get(): Promise<T>; drop(): void } {
  let cached: { at: number; value: Promise<T> } | undefined;
  return {
    get() {
      const now = Date.now();
      if (!cached || now - cached.at > ms) {
        const p = read();
        cached = { at: now, value: p };
        p.catch(() => {
          if (cached?.value === p) cached = undefined;
        });
      }
      return cached.value;
    },
    drop: () => (cached = undefined),
  };
}

/** What `GET /fleet` adds of a large job's live index: ready, or building (how many records it read so far). */
export type IndexNote = { state: "ready"; splits: number } | { state: "building"; applied: number; splits: number };

/**
 * How `GET /fleet` reads one store (a shard's, or an unsharded job's):
 * a full read of a small job's records each `cacheMs`, a live index of a
 * large one's (made at its first request and closed after `indexIdleMs`
 * without one), and its small records for the index's view.
 */
export class StoreFleet {
  readonly #store: Store;
  readonly #indexAbove: number;
  readonly #indexIdleMs: number;
  readonly #small: ReturnType<typeof cachedRead<SummarySnapshot>>;
  readonly #full: ReturnType<typeof cachedRead<FleetSnapshot>>;
  #index: FleetIndex | undefined;
  #idle: ReturnType<typeof setTimeout> | undefined;

  constructor(store: Store, cacheMs: number, indexAbove: number, indexIdleMs: number) {
    this.#store = store;
    this.#indexAbove = indexAbove;
    this.#indexIdleMs = indexIdleMs;
    // A large job's small records (plan, leader, members: for the index's view, or a summary) and, for a small job, every record.
    this.#small = cachedRead(cacheMs, () => readSummarySnapshot(store));
    this.#full = cachedRead(cacheMs, () => readFleetSnapshot(store));
  }

  /** Drops the cached reads (an action just wrote). */
  invalidate(): void {
    this.#small.drop();
    this.#full.drop();
  }

  #dropIndex(): void {
    clearTimeout(this.#idle);
    this.#idle = undefined;
    void this.#index?.close();
    this.#index = undefined;
  }

  #liveIndex(): FleetIndex {
    if (!this.#index || this.#index.stale || this.#index.state === "stopped") {
      this.#dropIndex();
      const made = FleetIndex.start(this.#store, {
        onStop: () => this.#index === made && (clearTimeout(this.#idle), (this.#index = undefined)),
      });
      this.#index = made;
    }
    clearTimeout(this.#idle);
    this.#idle = setTimeout(() => this.#dropIndex(), this.#indexIdleMs);
    return this.#index;
  }

  /**
   * The view of this store's records for `q` (`splits`: how many the job
   * has as the serving member knows it: nothing is read to tell a small
   * job), or `gone` when they were deleted.
   */
  async view(q: FleetQuery, liveness: FleetLiveness | undefined, splits: number): Promise<{ view: FleetView; index?: IndexNote } | "gone"> {
    if (splits > this.#indexAbove || this.#index) {
      const records = await this.#small.get();
      if (isEmptySummary(records)) return "gone";
      if (splits > this.#indexAbove) {
        const ix = this.#liveIndex();
        const view = ix.state === "ready" ? await ix.view(records, q, liveness).catch((e) => {
          if (ix.state === "stopped") return undefined; // its watch ended meanwhile: the next request makes a new one
          throw e;
        }) : undefined;
        if (view) return { view, index: { state: "ready", splits } };
        // While the index reads its first snapshot: the counts, rate and ETA of the leader's beat, no split listed.
        return { view: buildFleetSummary(records, q, liveness), index: { state: "building", applied: ix.applied, splits } };
      }
      this.#dropIndex(); // small again (a rerun planned fewer)
    }
    const snap = await this.#full.get();
    // We are a member of the job (we wrote its job record when we joined): nothing left means deleted.
    if (isEmptySnapshot(snap)) return "gone";
    return { view: buildFleetView(snap, q, liveness) };
  }
}
/** Whether a job's small records are all gone (read by a member of the job: its records were deleted). */
function isEmptySummary(s: SummarySnapshot): boolean {
  return !s.job && !s.plan && !s.leader && s.members.length === 0;
}
