/**
 * The environment a coordinator's parts share, fixed at construction: the
 * store and its split-record gateway, clock, randomness, config and the
 * timings derived from it, logger, identity, stats, replaced records, event
 * channel, and a way to ask for a pass. No part reaches another through it;
 * what passes between the member wing (`member/`) and the leader wing
 * (`leader/`) passes as arguments of the reconcile pass. One instance per
 * coordinator (and one per leader term and planner run, tracing their
 * store operations: {@linkcode causedBy}).
 *
 * @module
 */
import type { Owner } from "../records.ts";
import { type Cause, type CausedStore, causedStore } from "../tracing/cause.ts";
import type { CoordinatorTrace } from "../tracing/coordinator_trace.ts";
import type { Channel } from "../util/channel.ts";
import type { CoordinatorConfig } from "./config.ts";
import type { LandedBy } from "./landed_by.ts";
import type { ReplacedRecords } from "./replaced_records.ts";
import type { SplitRecords } from "./split_records.ts";
import type { ProgRecords } from "./prog_records.ts";
import type { Timings } from "./timings.ts";
import type { CoordinatorStats } from "./coordinator_stats.ts";
import type { Clock, CoordinationEvent } from "./types.ts";
import type { Logger } from "../util/logger.ts";

/** Shared state of one coordinator's parts. */
export interface Core {
  /** The instrumented store (its operations traced under the cause they name, by default the membership). */
  readonly store: CausedStore;
  /** The gateway for split records (every split write goes through it). */
  readonly splits: SplitRecords;
  /** The gateway for progress records (every progress commit and fence goes through it). */
  readonly progs: ProgRecords;
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
  /** Tracing (docs/OPERATIONS.md, "Tracing"): hooks that return at once when it is off. */
  readonly trace: CoordinatorTrace;
  /** Which shard of how many this coordinator is (`{ index: 0, count: 1 }`: an unsharded job). */
  readonly shard: { readonly index: number; readonly count: number };
  /**
   * The lanes this member has in this shard: `maxInFlight` less what the
   * job's other shards hold (an unsharded job: `maxInFlight`).
   */
  lanes(): number;
}

/**
 * `core` for a part whose store operations are caused by `cause` (a
 * leadership term, a planner run): the same environment, with the store
 * and the split gateway tracing under it. Made once per part.
 */
export function causedBy(core: Core, cause: Cause): Core {
  return { ...core, store: causedStore(core.store, cause), splits: core.splits.by(cause), progs: core.progs.by(cause) };
}

/**
 * Logs a leader decision and records it as the event `event` of the term's
 * span (a steal, a takeover, the job's outcome): one call, so the log line
 * and the trace cannot drift.
 */
export function decided(core: Core, level: Parameters<Logger>[0], message: string, event: string, fields: Record<string, unknown>): void {
  core.log(level, message, fields);
  core.trace.decision(event, fields);
}
