/**
 * When a member runs an election, and over which revision of the leader
 * record (docs/DESIGN.md, "Takeover, revocation and leader loss"): a pure
 * decision over what the member's follower has seen. The election itself
 * (the re-read, the create or CAS, the term bump) is `Leadership`'s.
 *
 * @module
 */
import type { LeaderRecord, Owner, PlanRecord } from "../records.ts";
import { keys } from "../store/keys.ts";
import type { LivenessTracker } from "./liveness.ts";
import type { Timings } from "./timings.ts";
import type { Versioned } from "./versioned.ts";

/** What an election is decided on: the member's view of `leader` and `plan` (its `Follower` is one). */
export interface ElectionView {
  /** The newest readable `plan` record seen, if any. */
  readonly plan: Versioned<PlanRecord> | undefined;
  /** The newest readable `leader` record seen, if any. */
  readonly leader: Versioned<LeaderRecord> | undefined;
  /** Revisions of control records that are unreadable (the leader record's among them). */
  readonly unreadable: ReadonlyMap<string, number>;
  /** When the leader record last moved, by revision. */
  readonly leaderLiveness: LivenessTracker;
}

/** The member deciding. */
export interface Elector {
  /** Its instance and session. */
  me: Owner;
  /** Whether it has a planner. */
  planner: boolean;
  /** Whether it elects a leader while the job is stalled (it stays in it: `afterStall: "wait"`). */
  leadWhileStalled: boolean;
  /** When it joined (monotonic): a member without a planner waits from then when no leader record was seen. */
  since: number;
  /** Its timings (`deadAfterMs`, `plannerlessElectionDelayMs`). */
  timings: Pick<Timings, "deadAfterMs" | "plannerlessElectionDelayMs">;
}

/**
 * The election's due time (`at`: check again then; `Infinity`: no election
 * needed), or — once it is due — `judged`: the revision of the leader
 * record judged silent or unreadable, which the election's re-read must
 * find exactly (`undefined`: no record, create one).
 */
export type ElectionDue = { at: number } | { judged: number | undefined };

/**
 * Whether an election is due at `now`. A finished job needs no leader; an
 * unreadable leader record, or one our dead predecessor (our instance,
 * another session) left, is replaced at once; otherwise the leader record
 * must have been silent for a lease, and members without a planner wait
 * half a lease longer while there is planning left to do.
 *
 * @example
 * ```ts ignore
 * const due = electionDue(follower, { me, planner: true, leadWhileStalled: false, since, timings }, clock.now());
 * if ("judged" in due) void elect(due.judged);
 * ```
 */
export function electionDue(f: ElectionView, e: Elector, now: number): ElectionDue {
  const { timings } = e;
  // A finished job needs no leader (an operator's requeue clears the outcome, and elections resume);
  // a stalled one does when this member stays through the stall (it exports the job-wide gauges while leading).
  const done = f.plan?.record.outcome?.kind;
  const finished = done === "allComplete" || (done === "stalled" && !e.leadWhileStalled);
  if (finished && f.unreadable.get(keys.leader) === undefined) return { at: Infinity };
  const l = f.leader?.record;
  // An unreadable leader record leads nobody: replace it at once (by CAS at its revision).
  const garbage = f.unreadable.get(keys.leader);
  // A leader record naming our instance with another session is our dead
  // predecessor's (we took its member record over at join): no lease to wait.
  const mine = l !== undefined && l.instance === e.me.instance && l.session !== e.me.session;
  const exp = f.leader && !mine ? f.leaderLiveness.expiresAt(keys.leader, timings.deadAfterMs) : undefined;
  // Members without a planner wait half a lease longer, so that a member
  // with one wins while there is planning left to do; once a final plan is
  // published nobody needs a planner to lead (the job would otherwise run
  // leaderless for half a lease after its planning leader left).
  const planned = f.plan?.record.finality === "final" && f.plan.record.generation > 0;
  const due = garbage !== undefined || mine
    ? -Infinity
    : e.planner || planned
    ? (exp ?? -Infinity)
    : (exp ?? e.since) + timings.plannerlessElectionDelayMs;
  if (now < due) return { at: due };
  // The revision judged silent (or unreadable): the re-read must find exactly it.
  return { judged: garbage ?? (mine ? f.leader?.revision : f.leader ? f.leaderLiveness.get(keys.leader)?.revision : undefined) };
}
