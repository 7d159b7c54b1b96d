/**
 * Balancing (docs/DESIGN.md, "Takeover, revocation and leader loss"): the pure function the leader runs to decide steals.
 *
 * `planMoves(view, config)` looks at a snapshot of live members and split
 * records and returns the handoffs to request this cycle. It does no I/O, reads
 * no clock and uses no randomness: the same view (in any array order) and the
 * same seed always give the same moves, so a re-elected or doubled leader
 * plans the same thing, and tests can replay any case.
 *
 * Rules, each stated by a property test in `tests/unit/plan_moves_test.ts`:
 *
 * - **Claim first.** No moves while any split is claimable (see
 *   {@link hasClaimable}); free work is distributed by claims, not steals.
 * - **Pairwise steals.** Each move takes one split from a heavily loaded
 *   member (the victim) to a member strictly below the fair share with a free
 *   lane (the thief). Victims are taken most-loaded first and paired greedily
 *   with the least-loaded eligible thief.
 * - **No oscillation.** A move is admitted only if
 *   `load(from) > load(to) + weight`, which strictly lowers the sum of squared
 *   loads; that sum is a potential that can only fall, so repeated planning
 *   reaches a fixpoint and never ping-pongs a split. With integer weights
 *   (bytes, rows) the rule is applied exactly. With fractional weights, loads
 *   carry rounding error, so a move also needs
 *   `load(from) - load(to) - weight > 1e-9 × total runnable weight`: a gap
 *   that exists only by rounding never admits a move (it could undo itself).
 * - **Busy members keep their splits.** A member holding exactly as many
 *   runnable splits as it has lanes is never a victim: with nothing
 *   claimable, the lane a move empties would idle, and no lane starts work
 *   sooner (a member holding more than its lanes, or fewer, may be).
 * - **One per member per cycle.** A member is the victim or the thief of at
 *   most one move per cycle, and never both.
 * - **Nothing in flight is touched, nothing piles up.** A split that is
 *   draining or already in a handoff is never moved. Its owner (a split is
 *   leaving it) and its known destination (`handoffTo`, or `reservedFor` of a
 *   released split) are *busy*: neither victim nor thief until that transfer
 *   settles, so at most one transfer per member is outstanding across cycles.
 *   If an owned split is in a handoff whose destination is unknown, no moves
 *   are planned at all (any member could be the one already receiving).
 * - **Weight, not count.** Loads are sums of split weights; lanes
 *   (`maxInFlight`) are counts of runnable splits held.
 * - **Ties** (equal loads, equal weights) are broken by {@link hashStrings}
 *   seeded with `config.seed`, then by id: deterministic, job-specific, and
 *   never dependent on which instance happens to be leader.
 *
 * Cost: O(S + M log M) time and O(S + M) memory for S splits and M members
 * (one pass over splits, one sort of members, one scan of each victim's
 * splits); O(S log S) when weights are fractional (sums are then added in
 * sorted order so they do not depend on input order).
 *
 * @module
 */
import { hashStrings } from "./hash.ts";
import type { BalanceConfig, BalanceSplit, BalanceView, MemberLoad, Move } from "./types.ts";

// ---------------------------------------------------------------------------

interface MemberState {
  id: string;
  max: number;
  load: number;
  count: number;
  /** Seeded tie-break among members of equal load. */
  tie: number;
  busy: boolean;
  used: boolean;
  /** Weights of the runnable splits it owns (for order-independent sums). */
  weights: number[];
  /** Movable splits (runnable, not draining, not in a handoff), in input order. */
  movable: BalanceSplit[];
}

function cmpStr(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function validate(view: BalanceView): void {
  const seenMembers = new Set<string>();
  for (const m of view.members) {
    if (seenMembers.has(m.instance)) throw new RangeError(`balance view: duplicate member "${m.instance}"`);
    seenMembers.add(m.instance);
  }
  const seenSplits = new Set<string>();
  for (const s of view.splits) {
    if (seenSplits.has(s.id)) throw new RangeError(`balance view: duplicate split "${s.id}"`);
    seenSplits.add(s.id);
    if (!(s.weight > 0) || !Number.isFinite(s.weight)) {
      throw new RangeError(`balance view: split "${s.id}" has weight ${s.weight}; weights must be finite and > 0`);
    }
  }
}

/**
 * Sum of weights independent of their order: exact (any order) for integers
 * when the sum stays far below 2^53, otherwise added in ascending order.
 */
function canonicalSum(weights: number[], exact: boolean): number {
  let sum = 0;
  if (exact) {
    for (let i = 0; i < weights.length; i++) sum += weights[i];
    return sum;
  }
  const sorted = Float64Array.from(weights).sort();
  for (let i = 0; i < sorted.length; i++) sum += sorted[i];
  return sum;
}

/**
 * Builds per-member state in O(S + M) (plus O(S log S) numeric sorts when
 * weights are fractional or huge), with sums that do not depend on input
 * order. `seed === undefined` skips member tie hashes (helpers that only need
 * loads).
 */
function analyse(view: BalanceView, seed: string | undefined): {
  members: Map<string, MemberState>;
  total: number;
  tolerance: number;
  claimable: boolean;
  unknownHandoff: boolean;
} {
  validate(view);
  const members = new Map<string, MemberState>();
  for (const m of view.members) {
    members.set(m.instance, {
      id: m.instance,
      max: m.maxInFlight,
      load: 0,
      count: 0,
      tie: seed === undefined ? 0 : hashStrings([seed, "member", m.instance]),
      busy: false,
      used: false,
      weights: [],
      movable: [],
    });
  }

  // Lane counts, busy members, free splits.
  const all: number[] = [];
  const free: BalanceSplit[] = [];
  let integral = true;
  let unknownHandoff = false;
  for (const s of view.splits) {
    if (s.status !== "runnable") continue;
    all.push(s.weight);
    if (integral && !Number.isInteger(s.weight)) integral = false;
    const owner = s.owner === null ? undefined : members.get(s.owner);
    if (owner === undefined) {
      free.push(s);
      continue;
    }
    owner.count++;
    owner.weights.push(s.weight);
    if (s.draining === true || s.inHandoff === true) {
      owner.busy = true; // a split is leaving it
      if (s.inHandoff === true) {
        if (typeof s.handoffTo === "string") {
          const to = members.get(s.handoffTo);
          if (to !== undefined) to.busy = true; // a split is arriving
        } else {
          unknownHandoff = true;
        }
      }
    } else {
      owner.movable.push(s);
    }
  }

  // Integer weights with a total far below 2^53 add exactly in any order.
  let total = canonicalSum(all, integral);
  const exact = integral && total < 2 ** 52;
  if (!exact) total = canonicalSum(all, false);
  for (const m of members.values()) m.load = canonicalSum(m.weights, exact);

  // Claimability needs final lane counts.
  const freeLane = (m: MemberState) => m.count < m.max;
  let anyFreeLane = false;
  for (const m of members.values()) if (freeLane(m)) anyFreeLane = true;
  let claimable = false;
  for (const s of free) {
    const reserved = typeof s.reservedFor === "string" ? members.get(s.reservedFor) : undefined;
    if (reserved !== undefined) {
      reserved.busy = true; // released for it: arriving
      if (freeLane(reserved)) claimable = true;
    } else if (anyFreeLane) {
      claimable = true;
    }
  }

  // Exact sums: the admission rule applies as written. Otherwise loads carry
  // rounding error, and a gap within it must not admit a move (a swap made
  // only by rounding could undo itself next cycle).
  const tolerance = exact ? 0 : total * 1e-9;
  return { members, total, tolerance, claimable, unknownHandoff };
}

/**
 * Load (sum of weights) and lane count (number of splits) of every live
 * member, counting only `runnable` splits owned by live members. Draining and
 * in-handoff splits still count for their owner: it holds them until released.
 * Members that own nothing are present with `{ load: 0, count: 0 }`.
 * The map iterates in instance-id order; sums are computed in a canonical
 * order, so the result does not depend on the order of the view's arrays.
 *
 * @param view Live members and split records.
 * @returns A map from instance id to its load and count.
 *
 * @example
 * ```ts
 * import { memberLoads } from "@splitlease/splitlease/testing";
 * const loads = memberLoads({
 *   members: [{ instance: "a", maxInFlight: 8 }, { instance: "b", maxInFlight: 8 }],
 *   splits: [
 *     { id: "s1", weight: 3, owner: "a", status: "runnable" },
 *     { id: "s2", weight: 2, owner: "a", status: "completed" },
 *   ],
 * });
 * console.assert(loads.get("a")?.load === 3 && loads.get("b")?.count === 0);
 * ```
 */
export function memberLoads(view: BalanceView): Map<string, MemberLoad> {
  const { members } = analyse(view, undefined);
  const out = new Map<string, MemberLoad>();
  for (const id of [...members.keys()].sort(cmpStr)) {
    const m = members.get(id)!;
    out.set(id, { load: m.load, count: m.count });
  }
  return out;
}

/**
 * The fair share of one live member (docs/DESIGN.md, "How a split reaches a worker without races"): the runnable weight (splits
 * owned by live members plus free runnable splits, including those of dead
 * owners) divided by the number of live members. `0` when there are no
 * members. Completed and quarantined splits do not count.
 *
 * @param view Live members and split records.
 * @returns Runnable weight per live member.
 *
 * @example
 * ```ts
 * import { fairShare } from "@splitlease/splitlease/testing";
 * const share = fairShare({
 *   members: [{ instance: "a", maxInFlight: 8 }, { instance: "b", maxInFlight: 8 }],
 *   splits: [
 *     { id: "s1", weight: 3, owner: "a", status: "runnable" },
 *     { id: "s2", weight: 1, owner: null, status: "runnable" },
 *     { id: "s3", weight: 9, owner: "b", status: "completed" },
 *   ],
 * });
 * console.assert(share === 2);
 * ```
 */
export function fairShare(view: BalanceView): number {
  if (view.members.length === 0) return 0;
  return analyse(view, undefined).total / view.members.length;
}

/**
 * Whether some live member could claim some split right now: a runnable split
 * with no live owner that is either reserved for a live member with a free
 * lane, or unreserved (or reserved for a member that is gone) while any
 * member has a free lane (holds fewer runnable splits than its `maxInFlight`).
 * `planMoves` plans nothing while this is true.
 *
 * @param view Live members and split records.
 * @returns `true` when a claim is possible.
 *
 * @example
 * ```ts
 * import { hasClaimable } from "@splitlease/splitlease/testing";
 * const view = {
 *   members: [{ instance: "a", maxInFlight: 1 }],
 *   splits: [
 *     { id: "s1", weight: 1, owner: "a", status: "runnable" as const },
 *     { id: "s2", weight: 1, owner: null, status: "runnable" as const },
 *   ],
 * };
 * console.assert(hasClaimable(view) === false); // "a" has no free lane
 * ```
 */
export function hasClaimable(view: BalanceView): boolean {
  return analyse(view, undefined).claimable;
}

/**
 * The movable split that best reduces imbalance between loads `a > b`: among
 * admitted weights `w` (`a - b - w > tol`), the one maximizing the drop in the
 * sum of squares, `2w(a - b - w)` (the weight closest to half the gap); on a
 * tie the smaller weight (it does not overshoot); among equal weights the
 * lowest seeded hash, then the lowest id. One linear scan: each victim is
 * scanned at most once per cycle, so all scans together are O(S).
 */
function pickSplit(splits: BalanceSplit[], a: number, b: number, tol: number, seed: string): BalanceSplit | undefined {
  const gap = a - b;
  let best: BalanceSplit | undefined;
  let bestGain = -1;
  let bestTie = -1;
  for (let i = 0; i < splits.length; i++) {
    const s = splits[i];
    const w = s.weight;
    if (!(gap - w > tol)) continue;
    const gain = w * (gap - w);
    if (best !== undefined) {
      if (gain < bestGain) continue;
      if (gain === bestGain) {
        if (w > best.weight) continue;
        if (w === best.weight) {
          if (bestTie < 0) bestTie = hashStrings([seed, "split", best.id]);
          const tie = hashStrings([seed, "split", s.id]);
          if (tie > bestTie || (tie === bestTie && s.id > best.id)) continue;
          best = s;
          bestTie = tie;
          continue;
        }
      }
    }
    best = s;
    bestGain = gain;
    bestTie = -1;
  }
  return best;
}

/**
 * Plans this cycle's steals (docs/DESIGN.md, "Takeover, revocation and leader loss"). Pure and deterministic: the same
 * view, in any array order, and the same seed give the same moves.
 *
 * Returns `[]` when anything is claimable, when an owned split is in a
 * handoff with an unknown destination, or when no admissible move exists.
 * Otherwise victims (non-busy members with a movable split) are visited from
 * most to least loaded and each is paired with the least-loaded unused thief
 * (non-busy, load strictly below {@link fairShare}, fewer runnable splits
 * than its `maxInFlight`). For each pair the split whose weight is closest to
 * half the load gap among those with `load(from) > load(to) + weight` is
 * moved (see the module doc for every rule). Moves are listed in victim
 * order. With unit weights and enough lanes, re-planning after the moves land
 * reaches `max − min ≤ 1` and then returns `[]`.
 *
 * @param view Live members and split records.
 * @param config The job-derived tie-break seed.
 * @returns The moves to request this cycle; each member appears at most once.
 * @throws {RangeError} On duplicate member or split ids, or a weight that is not finite and > 0.
 *
 * @example
 * ```ts
 * import { planMoves } from "@splitlease/splitlease/testing";
 * const moves = planMoves({
 *   members: [{ instance: "a", maxInFlight: 8 }, { instance: "b", maxInFlight: 8 }],
 *   splits: [
 *     { id: "s1", weight: 1, owner: "a", status: "runnable" },
 *     { id: "s2", weight: 1, owner: "a", status: "runnable" },
 *     { id: "s3", weight: 1, owner: "a", status: "runnable" },
 *   ],
 * }, { seed: "my-job" });
 * // one move: a split of weight 1 from "a" (load 3) to "b" (load 0)
 * console.assert(moves.length === 1 && moves[0].from === "a" && moves[0].to === "b");
 * ```
 */
export function planMoves(view: BalanceView, config: BalanceConfig): Move[] {
  const { members, total, tolerance, claimable, unknownHandoff } = analyse(view, config.seed);
  if (members.size < 2 || claimable || unknownHandoff) return [];
  const share = total / members.size;

  const all = [...members.values()].filter((m) => !m.busy);
  const byLoadThenTie = (x: MemberState, y: MemberState) => (x.load - y.load) || (x.tie - y.tie) || cmpStr(x.id, y.id);
  // A member running a split in every lane keeps them: nothing is unstarted
  // (claim first), so the lane a move empties would idle while the thief's
  // runs what was already running — no lane starts work sooner.
  const victims = all.filter((m) => m.movable.length > 0 && m.count !== m.max).sort((x, y) => byLoadThenTie(y, x));
  const thieves = all.filter((m) => m.load < share && m.count < m.max).sort(byLoadThenTie);

  const moves: Move[] = [];
  let t = 0;
  for (const v of victims) {
    if (v.used) continue;
    while (t < thieves.length && thieves[t].used) t++;
    if (t >= thieves.length) break;
    const thief = thieves[t];
    // Every later victim is no heavier and every later thief no lighter
    // (this also stops when the lightest thief left is v itself).
    if (thief === v || !(v.load > thief.load)) break;
    const s = pickSplit(v.movable, v.load, thief.load, tolerance, config.seed);
    if (s === undefined) continue; // nothing of v fits; later thieves are no lighter, so try the next victim
    moves.push({ splitId: s.id, from: v.id, to: thief.id, weight: s.weight });
    v.used = true;
    thief.used = true;
    t++;
  }
  return moves;
}
