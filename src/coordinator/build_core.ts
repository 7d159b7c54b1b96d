/**
 * What a coordinator derives from its join options before any part of it
 * runs: its configuration (a random instance id when none is given, the job
 * name as its fingerprint) and the environment its parts share (`Core`:
 * clock, timings, identity, the instrumented store and its record
 * gateways, the event channel). Builds; writes nothing.
 *
 * @module
 */
import { Channel } from "../util/channel.ts";
import { randomId } from "../util/random_id.ts";
import type { Logger } from "../util/logger.ts";
import { CoordinatorTrace } from "../tracing/coordinator_trace.ts";
import { systemClock } from "./clock.ts";
import { type CoordinatorConfig, parseCoordinatorConfig } from "./config.ts";
import type { Core } from "./core.ts";
import type { JoinOptions } from "./join_options.ts";
import { LandedBy } from "./landed_by.ts";
import { ProgRecords } from "./prog_records.ts";
import { ReplacedRecords } from "./replaced_records.ts";
import { checkSeat } from "./shard.ts";
import { SplitRecords } from "./split_records.ts";
import { InstrumentedStore, newStats } from "./stats.ts";
import { timings } from "./timings.ts";
import type { CoordinationEvent } from "./types.ts";

const silent: Logger = () => {};

/**
 * The configuration `options` give (checked: `INVALID_CONFIG`), the
 * instance id drawn from `random` when they name none.
 *
 * @example
 * ```ts ignore
 * const config = joinConfig({ store, job: "demo" }, Math.random); // config.instance: "w-…", config.fingerprint: "demo"
 * ```
 */
export function joinConfig(options: JoinOptions, random: () => number): CoordinatorConfig {
  const { store: _s, planner: _p, clock: _c, random: _r, logger: _l, runtime: _rt, leadWhileStalled: _ls, shard: _seat, ...rest } = options;
  return parseCoordinatorConfig({
    ...rest,
    instance: options.instance ?? "w-" + randomId(random, 10),
    fingerprint: options.fingerprint ?? options.job,
  });
}

/**
 * The environment of one coordinator's parts, and the instrumented store
 * under it (the coordinator refuses its writes after a fatal error). The
 * shard seat is checked first (`INVALID_CONFIG`); the session nonce is
 * drawn from `random` after the instance id. `owner` is the coordinator its
 * spans belong to; `schedule` asks it for a pass.
 *
 * @example
 * ```ts ignore
 * const { core, store } = buildCore(options, config, random, this, () => loop.schedule());
 * ```
 */
export function buildCore(
  options: JoinOptions,
  config: CoordinatorConfig,
  random: () => number,
  owner: object,
  schedule: () => void,
): { core: Core; store: InstrumentedStore } {
  const seat = options.shard;
  const shard = checkSeat(seat, config.job);
  const clock = options.clock ?? systemClock;
  const t = timings(config);
  const stats = newStats();
  const me = { instance: config.instance, session: randomId(random, 16) };
  // Spans of the membership, the leadership, the tenancies and their store operations (no-ops without an OpenTelemetry SDK).
  const trace = new CoordinatorTrace(owner, config.job, me, options.runtime ?? "web", clock);
  const store = new InstrumentedStore(options.store, stats, clock, trace);
  const core: Core = {
    store,
    splits: new SplitRecords(store, undefined, undefined, { clock, budgetMs: config.opTimeoutMs }),
    progs: new ProgRecords(store, config.opTimeoutMs, undefined, clock),
    clock,
    random,
    config,
    timings: t,
    log: options.logger ?? silent,
    me,
    stats,
    events: new Channel<CoordinationEvent>(),
    schedule,
    replaced: new ReplacedRecords(stats, options.logger ?? silent),
    landed: new LandedBy(),
    trace,
    shard,
    lanes: seat ? () => Math.max(0, config.maxInFlight - seat.lanesElsewhere()) : () => config.maxInFlight,
  };
  return { core, store };
}
