/**
 * Which member a seeded split goes to while members wait for work
 * (docs/DESIGN.md, "Seeding for idle lanes"): live, taking work, with a lane
 * nothing fills, least loaded first, in runs so that grants share rewrites.
 *
 * @module
 */
import type { LeaderView } from "./leader_view.ts";
import type { AssignmentTracker } from "./assignment_tracker.ts";
import type { Assignments, LaneReservation } from "./directives.ts";
import type { MemberState } from "./member_state.ts";

/** Consecutive seeds that go to one member with idle lanes (see {@linkcode SeedRuns.reserve}). */
export const SEED_RUN = 8;

/** The member the last seeds went to, and how many in a row. */
export interface SeedRun {
  m: MemberState;
  n: number;
}

/**
 * A member to seed a split for: live, taking work, with a lane that
 * nothing (held, offered or on its way) fills — least loaded first; and the
 * run it continues or starts; the leader's own member (`own`) is picked
 * last among equally loaded ones. Pure.
 *
 * Each grant reaches its member through a rewrite of its assignment
 * record, and only grants that arrive together share a rewrite: dealing
 * seeds one per member in turn cost about one rewrite per split (0.8 per
 * split at 100 members). So once a plan has seeded 16 splits per member,
 * consecutive seeds stay with one member in runs that grow to
 * {@linkcode SEED_RUN}, while its load stays within the run length of the
 * least loaded. A plan is dealt in runs of up to its even share per
 * member from the start (a member starts the grants of one write
 * together, so consecutive splits keep the plan's order across members),
 * so small plans are still dealt evenly; a large one ends at most a
 * run apart, which balancing evens out with a few moves.
 *
 * @example
 * ```ts ignore
 * const { member, run } = pickSeedMember(states, view, tracker, seeded, planned, lastRun);
 * ```
 */
export function pickSeedMember(
  states: ReadonlyMap<string, MemberState>,
  view: LeaderView,
  t: Assignments,
  seeded: number,
  planned: number,
  run: SeedRun | undefined,
  own?: string,
  shards = 1,
): { member: MemberState | undefined; run: SeedRun | undefined } {
  let best: MemberState | undefined;
  let bestLoad = Infinity;
  let members = 0;
  let runLoad = Infinity;
  for (const m of states.values()) {
    if (m.draining || m.maxInFlight === 0) continue;
    members++;
    const { incoming, plain } = t.of(m);
    // A sharded job: the member's other shards' leaders deal its lanes at the same time, each
    // seeing them free, so a shard grants at most its share of them; offers fill the rest (a
    // claim checks the member's lanes of every shard, a grant it cannot keep is handed back).
    const lanes = shards > 1 ? Math.ceil(m.maxInFlight / shards) : m.maxInFlight;
    if (lanes - view.heldByKey(m.key) - incoming - plain <= 0) continue;
    const load = view.loadOfKey(m.key) + incoming;
    if (m === run?.m) runLoad = load;
    // The leader's own member last among equals: a plan is seeded heaviest
    // first, and the leader usually joined first, so it took the heaviest
    // splits and one SIGKILL lost both the most work and the dealer.
    if (load < bestLoad || (load === bestLoad && best?.instance === own)) (best = m), (bestLoad = load);
  }
  // Consecutive splits to one member, up to its even share of the plan:
  // a member starts the grants of one assignment write together, so
  // dealing 0, 4 to one member and 1, 5 to the next started 4 before 1.
  const even = Math.ceil(planned / Math.max(1, members));
  const length = Math.max(1, Math.min(SEED_RUN, Math.max(even, Math.floor(seeded / (16 * Math.max(1, members))))));
  if (run && run.n < length && runLoad < Infinity && runLoad <= bestLoad + length) return { member: run.m, run: { m: run.m, n: run.n + 1 } };
  return { member: best, run: best && { m: best, n: 1 } };
}

/**
 * Picks members for seeds ({@linkcode pickSeedMember}), remembers the
 * current run and reserves the lane picked.
 *
 * @example
 * ```ts
 * import { SeedRuns } from "./seed_runs.ts";
 * const runs = new SeedRuns();
 * runs.forget(undefined); // a member that had no run: nothing changes
 * ```
 */
export class SeedRuns {
  #run: SeedRun | undefined;

  /** A member to seed a split for (see {@linkcode pickSeedMember}), its lane reserved in `tracker` until the reservation is released. */
  reserve(
    states: ReadonlyMap<string, MemberState>,
    view: LeaderView,
    tracker: AssignmentTracker,
    seeded: number,
    planned = 0,
    own?: string,
    shards = 1,
  ): { member: MemberState; lane: LaneReservation } | undefined {
    const { member, run } = pickSeedMember(states, view, tracker, seeded, planned, this.#run, own, shards);
    this.#run = run;
    return member && { member, lane: tracker.edit((d) => d.reserve(member, "seed")) };
  }

  /** A member session is gone: its run ends. */
  forget(m: MemberState | undefined): void {
    if (m !== undefined && this.#run?.m === m) this.#run = undefined;
  }
}
