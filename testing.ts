/**
 * For tests of sources and of splitlease itself: a manual clock to drive
 * time by hand, the system clock, and the pure protocol functions
 * (balancing moves, observer-judged liveness, histograms) with their types.
 * Nothing here is needed to run a pipeline.
 *
 * @example
 * ```ts
 * import { ManualClock } from "@splitlease/splitlease/testing";
 * const clock = new ManualClock();
 * let fired = false;
 * clock.setTimeout(() => (fired = true), 100);
 * await clock.advance(100);
 * console.log(fired); // true
 * ```
 *
 * @module
 */
export { type Clock, ManualClock, systemClock } from "./src/coordinator/clock.ts";
export { isAlive, LivenessTracker, type Sighting } from "./src/coordinator/liveness.ts";
export { LATENCY_BUCKETS, newHistogram, observe } from "./src/coordinator/stats.ts";
export {
  type BalanceConfig,
  type BalanceMember,
  type BalanceSplit,
  type BalanceView,
  type MemberLoad,
  type Move,
} from "./src/balance/types.ts";
export {
  fairShare,
  hasClaimable,
  memberLoads,
  planMoves,
} from "./src/balance/plan_moves.ts";
export { hashStrings, rendezvousRank } from "./src/balance/hash.ts";
