/**
 * The state a coordinator's parts share: the store, clock, config, identity,
 * stats and event channel. One instance per coordinator.
 *
 * @module
 */
import type { Owner } from "../records.ts";
import type { Store } from "../store/store.ts";
import type { Channel } from "../util/channel.ts";
import type { CoordinatorConfig } from "./config.ts";
import type { ReplacedRecords } from "./replaced_records.ts";
import type { SplitRecords } from "./split_records.ts";
import type { Timings } from "./timings.ts";
import type { CoordinatorStats } from "./coordinator_stats.ts";
import type { Clock, CoordinationEvent, Logger } from "./types.ts";

/** Shared state of one coordinator's parts. */
export interface Core {
  /** The instrumented store. */
  store: Store;
  /** The gateway for split records (every split write goes through it). */
  splits: SplitRecords;
  /** Time source. */
  clock: Clock;
  /** Randomness in [0, 1). */
  random: () => number;
  /** Validated configuration. */
  config: CoordinatorConfig;
  /** Every interval derived from the config, by name (`timings(config)`). */
  timings: Timings;
  /** Structured logger. */
  log: Logger;
  /** This instance and session. */
  me: Owner;
  /** Counters and histograms. */
  stats: CoordinatorStats;
  /** Outgoing events. */
  events: Channel<CoordinationEvent>;
  /** Asks for a reconcile soon. */
  schedule(): void;
  /** Unreadable control records a CAS of ours replaced (`/status.invalidRecords`, `replaced: true`). */
  replaced: ReplacedRecords;
}
