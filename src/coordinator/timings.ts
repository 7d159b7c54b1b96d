/**
 * Every interval the coordinator derives from its configuration, by name,
 * computed once per coordinator (at join, where they are also logged). Code
 * that waits or judges reads these instead of doing arithmetic on `leaseMs`,
 * so each rule of docs/DESIGN.md ("Liveness: judged by the leader") has one
 * place where its number is made.
 *
 * @module
 */

/**
 * What the timings are derived from: the four durations of a coordinator
 * configuration (`CoordinatorConfig` has them; the type is spelled out so
 * that config.ts, which derives its defaults and rules here, imports this
 * file and not the reverse).
 *
 * @example
 * ```ts
 * import type { TimingInputs } from "./timings.ts";
 * const t: TimingInputs = { leaseMs: 15000, opTimeoutMs: 5000, selfFenceMarginMs: 1875, drainDeadlineMs: 10000 };
 * ```
 */
export interface TimingInputs {
  /** The lease (`leaseMs`). */
  leaseMs: number;
  /** The timeout of one store operation (`opTimeoutMs`). */
  opTimeoutMs: number;
  /** The self-fence margin (`selfFenceMarginMs`, defaulted). */
  selfFenceMarginMs: number;
  /** The drain deadline of a revoked split (`drainDeadlineMs`). */
  drainDeadlineMs: number;
}

/**
 * The derived intervals of one coordinator, in ms (docs/DESIGN.md).
 *
 * @example
 * ```ts
 * import { parseCoordinatorConfig } from "@splitlease/splitlease/admin";
 * import { timings } from "./timings.ts";
 * const t = timings(parseCoordinatorConfig({ job: "j", instance: "w1", fingerprint: "f" }));
 * console.log(t.heartbeatMs); // 5000
 * ```
 */
export interface Timings {
  /** A record (member or leader) unmoved this long on the judge's clock is dead: `leaseMs`. */
  deadAfterMs: number;
  /** Heartbeat interval, before jitter (up to 10% earlier): `leaseMs / 3`. */
  heartbeatMs: number;
  /** Wait before a failed heartbeat is tried again: `leaseMs / 10`. */
  heartbeatRetryMs: number;
  /**
   * Twin wait: how long a joiner watches a member record held by another
   * session before taking it over, and how fresh our last heartbeat must be
   * to claim or elect ourselves: `leaseMs / 3 + leaseMs / 10`.
   */
  twinWaitMs: number;
  /** Self-fence point, after the start of the last successful heartbeat: `leaseMs − selfFenceMarginMs`. */
  selfFenceAfterMs: number;
  /** Extra election wait of a member without a planner (while planning is left): `leaseMs / 2`. */
  plannerlessElectionDelayMs: number;
  /** `/status.connected` holds while the last heartbeat started less than this ago: `leaseMs / 2 + opTimeoutMs`. */
  connectedWithinMs: number;
  /** Retry of a failed reconcile pass: `max(50, leaseMs / 10)`. */
  reconcileRetryMs: number;
  /** Time between the leader's balancing runs while nothing settles: `max(20, leaseMs / 10)`. */
  balanceIntervalMs: number;
  /** Time between balancing runs right after a steal settled or membership changed: `max(5, leaseMs / 100)`. */
  balanceMinIntervalMs: number;
  /** A revoked owner that never answers is fenced this long after the revoke: `drainDeadlineMs + leaseMs`. */
  deafOwnerFenceMs: number;
  /** Longest wait for a watch's initial snapshot (unless the caller sets one): `max(2 × leaseMs, 30000)`. */
  watchSnapshotLimitMs: number;
  /** Longest wait between re-reads of a split whose claim was interrupted by an outage: `leaseMs / 3`. */
  claimRecheckMaxMs: number;
  /** Base of the retry after a store outage interrupted planning (±25% jitter): `min(leaseMs, 1000)`. */
  planOutageRetryMs: number;
  /** Longest backoff between failed planner runs (before jitter): `leaseMs`. */
  planBackoffMaxMs: number;
  /** Retry of publishing a failed plan: `leaseMs / 3`. */
  planFailRetryMs: number;
  /**
   * A member claims a spare offer only once a lane has had no other offer
   * this long (the leader, which deals free lanes, is slow or gone): `max(20, leaseMs / 100)`.
   */
  spareClaimAfterMs: number;
  /** An ask to cut a running split not answered by a cut this long is given up (declined, or lost): `leaseMs / 5`. */
  cutAskTimeoutMs: number;
  /** A split whose ask was given up is not asked again for this long: `leaseMs`. */
  cutCooldownMs: number;
  /**
   * How long a leaderless interval lasts (a lease for the old leader's
   * record to go silent, and an election): `1.5 × leaseMs`. The leader keeps
   * enough spare offers on each member to cover it.
   */
  leaderlessCoverMs: number;
}

/**
 * Every derived interval of `config`, by name.
 *
 * @example
 * ```ts
 * import { parseCoordinatorConfig } from "@splitlease/splitlease/admin";
 * import { timings } from "./timings.ts";
 * const t = timings(parseCoordinatorConfig({ job: "j", instance: "w1", fingerprint: "f", leaseMs: 3000 }));
 * console.log(t.twinWaitMs, t.selfFenceAfterMs); // 1300 2625
 * ```
 */
export function timings(config: TimingInputs): Timings {
  const { leaseMs, opTimeoutMs, selfFenceMarginMs, drainDeadlineMs } = config;
  return {
    deadAfterMs: leaseMs,
    heartbeatMs: leaseMs / 3,
    heartbeatRetryMs: leaseMs / 10,
    twinWaitMs: leaseMs / 3 + leaseMs / 10,
    selfFenceAfterMs: leaseMs - selfFenceMarginMs,
    plannerlessElectionDelayMs: leaseMs / 2,
    connectedWithinMs: leaseMs / 2 + opTimeoutMs,
    reconcileRetryMs: Math.max(50, leaseMs / 10),
    balanceIntervalMs: Math.max(20, leaseMs / 10),
    balanceMinIntervalMs: Math.max(5, leaseMs / 100),
    deafOwnerFenceMs: drainDeadlineMs + leaseMs,
    watchSnapshotLimitMs: Math.max(2 * leaseMs, 30_000),
    claimRecheckMaxMs: leaseMs / 3,
    planOutageRetryMs: Math.min(leaseMs, 1000),
    planBackoffMaxMs: leaseMs,
    planFailRetryMs: leaseMs / 3,
    spareClaimAfterMs: Math.max(20, leaseMs / 100),
    cutAskTimeoutMs: leaseMs / 5,
    cutCooldownMs: leaseMs,
    leaderlessCoverMs: 1.5 * leaseMs,
  };
}

/**
 * The default self-fence margin of a lease when none is configured
 * (`selfFenceMarginMs`): `leaseMs / 8`, rounded down.
 *
 * @example
 * ```ts
 * import { defaultSelfFenceMarginMs } from "./timings.ts";
 * console.log(defaultSelfFenceMarginMs(15000)); // 1875
 * ```
 */
export function defaultSelfFenceMarginMs(leaseMs: number): number {
  return Math.floor(leaseMs / 8);
}

/**
 * The largest self-fence margin a lease allows, exclusive: `leaseMs / 2`
 * (a larger margin would fence a worker before half its lease is over).
 *
 * @example
 * ```ts
 * import { selfFenceMarginLimitMs } from "./timings.ts";
 * console.log(selfFenceMarginLimitMs(15000)); // 7500
 * ```
 */
export function selfFenceMarginLimitMs(leaseMs: number): number {
  return leaseMs / 2;
}

/**
 * The shortest lease an operation timeout allows: `2 × opTimeoutMs`, so one
 * slow write never self-fences a worker.
 *
 * @example
 * ```ts
 * import { minLeaseMs } from "./timings.ts";
 * console.log(minLeaseMs(5000)); // 10000
 * ```
 */
export function minLeaseMs(opTimeoutMs: number): number {
  return 2 * opTimeoutMs;
}

/**
 * The longest operation timeout a lease allows (the converse of
 * {@linkcode minLeaseMs}): `leaseMs / 2`, rounded down.
 *
 * @example
 * ```ts
 * import { maxOpTimeoutMs } from "./timings.ts";
 * console.log(maxOpTimeoutMs(15000)); // 7500
 * ```
 */
export function maxOpTimeoutMs(leaseMs: number): number {
  return Math.floor(leaseMs / 2);
}

/**
 * The shortest work window (budget less the drain margin) of a serverless
 * invocation: `2 × leaseMs`. An invocation that was cut off leaves a leader
 * record each later invocation must watch unmoved for a lease, then a member
 * record the new leader must watch for another lease (docs/DESIGN.md,
 * "Runtime").
 *
 * @example
 * ```ts
 * import { sliceWorkWindowMs } from "./timings.ts";
 * console.log(sliceWorkWindowMs(6000)); // 12000
 * ```
 */
export function sliceWorkWindowMs(leaseMs: number): number {
  return 2 * leaseMs;
}
