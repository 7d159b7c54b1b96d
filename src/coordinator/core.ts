/**
 * The environment a coordinator's parts share, fixed at construction: the
 * store and its split-record gateway, clock, randomness, config and the
 * timings derived from it, logger, identity, stats, replaced records, event
 * channel, and a way to ask for a pass. No part reaches another through it;
 * what passes between the member and leader sides passes as arguments of
 * the reconcile pass. One instance per coordinator.
 *
 * @module
 */
import type { Owner } from "../records.ts";
import type { Store } from "../store/store.ts";
import type { Channel } from "../util/channel.ts";
import type { CoordinatorConfig } from "./config.ts";
import type { LandedBy } from "./landed_by.ts";
import type { ReplacedRecords } from "./replaced_records.ts";
import type { SplitRecords } from "./split_records.ts";
import type { Timings } from "./timings.ts";
import type { CoordinatorStats } from "./coordinator_stats.ts";
import type { Clock, CoordinationEvent, Logger } from "./types.ts";

/** Shared state of one coordinator's parts. */
export interface Core {
  /** The instrumented store. */
  readonly store: Store;
  /** The gateway for split records (every split write goes through it). */
  readonly splits: SplitRecords;
  /** Time source. */
  readonly clock: Clock;
  /** Randomness in [0, 1). */
  readonly random: () => number;
  /** Validated configuration. */
  readonly config: CoordinatorConfig;
  /** Every interval derived from the config, by name (`timings(config)`). */
  readonly timings: Timings;
  /** Structured logger. */
  readonly log: Logger;
  /** This instance and session. */
  readonly me: Owner;
  /** Counters and histograms. */
  readonly stats: CoordinatorStats;
  /** Outgoing events. */
  readonly events: Channel<CoordinationEvent>;
  /** Asks for a reconcile soon. */
  schedule(): void;
  /** Unreadable control records a CAS of ours replaced (`/status.invalidRecords`, `replaced: true`). */
  readonly replaced: ReplacedRecords;
  /** Our landed heartbeats by revision: when a revision had certainly landed, on our clock. */
  readonly landed: LandedBy;
}
