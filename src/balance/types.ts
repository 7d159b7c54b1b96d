/**
 * The view `planMoves` balances and the moves it returns.
 *
 * @module
 */

/**
 * A live member as the leader sees it (dead members are left out of the view).
 *
 * @example
 * ```ts
 * import type { BalanceMember } from "@splitlease/splitlease/testing";
 * const m: BalanceMember = { instance: "a", maxInFlight: 8 };
 * ```
 */
export interface BalanceMember {
  /** Instance id. */
  instance: string;
  /** Lanes: the most runnable splits this member holds at once (advertised on its member record). */
  maxInFlight: number;
}

/**
 * One split record as the leader sees it.
 *
 * @example
 * ```ts
 * import type { BalanceSplit } from "@splitlease/splitlease/testing";
 * const s: BalanceSplit = { id: "s1", weight: 1, owner: "a", status: "runnable" };
 * ```
 */
export interface BalanceSplit {
  /** Split id (unique within the view). */
  id: string;
  /** Weight (bytes, rows; 1 by default); must be finite and > 0. */
  weight: number;
  /** Instance id of the owner, or `null` when free. An owner that is not a live member counts as free (takeover). */
  owner: string | null;
  /** Record status; only `runnable` splits are balanced or count toward load. */
  status: "runnable" | "completed" | "quarantined";
  /** The owner is already revoking (draining) it. */
  draining?: boolean;
  /** A `handoff.<split>` record exists for it. */
  inHandoff?: boolean;
  /**
   * The destination (`to`) of that handoff record, when known. Lets the
   * planner mark the destination busy; an owned split with `inHandoff` and no
   * known destination suspends planning until that handoff settles.
   */
  handoffTo?: string | null;
  /** Released for this member (the thief of a handoff); only it may claim the split while it is live. */
  reservedFor?: string | null;
}

/**
 * The snapshot `planMoves` decides on.
 *
 * @example
 * ```ts
 * import { planMoves, type BalanceView } from "@splitlease/splitlease/testing";
 * const view: BalanceView = {
 *   members: [{ instance: "a", maxInFlight: 8 }, { instance: "b", maxInFlight: 8 }],
 *   splits: [1, 2, 3, 4].map((i) => ({ id: `s${i}`, weight: 1, owner: "a", status: "runnable" as const })),
 * };
 * console.log(planMoves(view, { seed: "job" }).length); // 1
 * ```
 */
export interface BalanceView {
  /** Live members only. Instance ids must be distinct. */
  members: BalanceMember[];
  /** Split records (any status). Split ids must be distinct. */
  splits: BalanceSplit[];
}

/**
 * Balancing configuration.
 *
 * @example
 * ```ts
 * import { planMoves, type BalanceConfig } from "@splitlease/splitlease/testing";
 * const config: BalanceConfig = { seed: "job-1" };
 * console.log(planMoves({ members: [], splits: [] }, config)); // []
 * ```
 */
export interface BalanceConfig {
  /** Job-derived tie-break seed (job name or fingerprint). Never the leader's identity. */
  seed: string;
}

/**
 * One steal to request: the leader writes `handoff.<splitId>` from `from` to `to`.
 *
 * @example
 * ```ts
 * import type { Move } from "@splitlease/splitlease/testing";
 * const m: Move = { splitId: "s1", from: "a", to: "b", weight: 1 };
 * ```
 */
export interface Move {
  /** The split to hand off. */
  splitId: string;
  /** Its current owner (the victim). */
  from: string;
  /** The member that will claim it (the thief). */
  to: string;
  /** The split's weight. */
  weight: number;
}

/**
 * Load and lane usage of one member.
 *
 * @example
 * ```ts
 * import { memberLoads, type MemberLoad } from "@splitlease/splitlease/testing";
 * const loads: Map<string, MemberLoad> = memberLoads({ members: [{ instance: "a", maxInFlight: 2 }], splits: [] });
 * console.log(loads.get("a")); // { load: 0, count: 0 }
 * ```
 */
export interface MemberLoad {
  /** Sum of the weights of the runnable splits it owns (draining ones included: still held). */
  load: number;
  /** Number of runnable splits it owns (lanes in use). */
  count: number;
}
