/**
 * Builds the `/status` snapshot of a coordinator. Job-wide figures come from
 * the leader: directly on the leader, from its last heartbeat elsewhere —
 * until the job has an outcome (`allComplete` or `stalled`): then from the
 * outcome the `plan` record carries, the same on every member. The leader's
 * last heartbeat predates the outcome (it beats every `leaseMs / 3`, and a
 * leader that left beats no more), so after the end it told idle members
 * `completed 184, runnable 16` of a job of 200 done (issue 40, item 4).
 *
 * @module
 */
import type { Owner } from "../records.ts";
import type { Follower } from "./member/follower.ts";
import type { LeaderRole } from "./leader/role.ts";
import type { Planning } from "./leader/planning.ts";
import type { ReplacedRecord } from "./replaced_records.ts";
import type { Tenancy } from "./member/tenancy.ts";
import type { CoordinatorStatus } from "./types.ts";
import { smallest } from "../util/smallest.ts";

/** Quarantined split ids the leader's `/status` lists at most (`counts.quarantined` counts them all). */
export const STATUS_QUARANTINED_LISTED = 1000;

/** Inputs of {@linkcode buildStatus}. */
export interface StatusInput {
  me: Owner;
  job: string;
  state: CoordinatorStatus["state"];
  connected: boolean;
  follower: Follower;
  leaderAlive: boolean;
  role: LeaderRole | undefined;
  planning: Planning | undefined;
  held: ReadonlyMap<string, Tenancy>;
  /** Unreadable records a CAS of ours replaced, oldest first. */
  replaced: readonly ReplacedRecord[];
  now: number;
}

/** Assembles a {@linkcode CoordinatorStatus}. */
export function buildStatus(s: StatusInput): CoordinatorStatus {
  const f = s.follower;
  const plan = f.plan?.record;
  const leader = f.leader?.record;
  const role = s.role?.ready ? s.role : undefined;
  const c = role ? role.counts() : leader?.counts;
  // A decided end counts from its record: every split is completed, cancelled or quarantined, none runnable.
  const o = f.outcome === "allComplete" || f.outcome === "stalled" ? plan?.outcome : undefined;
  const ended = o && o.kind !== "planFailed"
    ? { completed: o.completed, quarantined: o.kind === "stalled" ? o.quarantined : 0, cancelled: o.cancelled ?? 0 }
    : undefined;
  // Off the leader: the ids its last beat published (the first few), so the list agrees with the count.
  // On the leader the first STATUS_QUARANTINED_LISTED (a million quarantined splits made /status a sort of them all and megabytes of ids).
  const quarantined = role ? smallest(role.view.quarantined, STATUS_QUARANTINED_LISTED) : [...(leader?.counts?.quarantinedIds ?? [])];
  const invalid = new Map(f.invalid);
  if (role) for (const [k, m] of role.view.invalid) invalid.set(k, m);
  const liveMembers = role ? [...role.states.keys()].sort() : [s.me.instance];
  const status: CoordinatorStatus = {
    instance: s.me.instance,
    session: s.me.session,
    job: s.job,
    state: s.state,
    connected: s.connected,
    isLeader: role !== undefined,
    leader: leader ? { instance: leader.instance, term: leader.term, alive: s.leaderAlive } : null,
    plan: plan
      ? { term: plan.term, finality: plan.finality, generation: plan.generation, planned: plan.planned }
      : null,
    paused: f.paused,
    liveMembers,
    members: c?.members ?? liveMembers.length,
    held: [...s.held].map(([id, t]) => ({
      id,
      epoch: t.epoch,
      weight: t.record.weight,
      progress: t.prog.progress,
      draining: t.draining,
    })).sort((a, b) => (a.id < b.id ? -1 : 1)),
    counts: ended
      ? {
        // Every split there is (residuals cut from running ones included) is one of these three.
        planned: ended.completed + ended.quarantined + ended.cancelled,
        runnable: 0,
        unclaimed: 0,
        owned: 0,
        ...ended,
      }
      : {
        // Residuals cut from running splits are planned work too.
        planned: (plan?.planned ?? 0) + (c?.cut ?? 0),
        runnable: c?.runnable ?? 0,
        unclaimed: c?.unowned ?? 0,
        owned: c ? c.runnable - c.unowned : 0,
        completed: c?.completed ?? 0,
        quarantined: c?.quarantined ?? 0,
        cancelled: c?.cancelled ?? 0,
      },
    quarantined,
    outcome: f.outcome,
    invalidRecords: [
      ...s.replaced.map((r) => ({ key: r.key, message: r.message, replaced: true })),
      ...[...invalid].map(([key, message]) => ({ key, message })),
    ],
  };
  if (s.planning?.lastError) {
    status.planning = { failures: s.planning.failures, lastError: s.planning.lastError };
  }
  if (role && role.retry.waiting.size > 0) {
    status.retrying = [...role.retry.waiting].slice(0, 100).map(([id, b]) => ({
      id,
      attempts: b.attempts,
      inMs: Math.max(0, Math.round(b.at - s.now)),
    }));
  }
  return status;
}
