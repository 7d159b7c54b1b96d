/**
 * Builds the `/status` snapshot of a coordinator from its view.
 *
 * @module
 */
import type { Owner } from "../records.ts";
import type { CoordinatorStatus, SplitSpec } from "./types.ts";
import type { JobView } from "./view.ts";

/** Inputs of {@linkcode buildStatus}. */
export interface StatusInput {
  view: JobView;
  me: Owner;
  job: string;
  state: CoordinatorStatus["state"];
  connected: boolean;
  isLeader: boolean;
  leaderAlive: boolean;
  liveMembers: string[];
  held: ReadonlyMap<string, {
    epoch: number;
    record: { weight: number; progress: CoordinatorStatus["held"][number]["progress"] };
    spec: SplitSpec;
    draining: boolean;
  }>;
  outcome: CoordinatorStatus["outcome"];
}

/** Assembles a {@linkcode CoordinatorStatus}. */
export function buildStatus(s: StatusInput): CoordinatorStatus {
  const v = s.view;
  const quarantined: string[] = [];
  if (v.statusCounts.quarantined > 0) {
    for (const [id, e] of v.splits) if (e.record.status === "quarantined") quarantined.push(id);
    quarantined.sort();
  }
  const plan = v.plan?.record;
  const leader = v.leader?.record;
  return {
    instance: s.me.instance,
    session: s.me.session,
    job: s.job,
    state: s.state,
    connected: s.connected,
    isLeader: s.isLeader,
    leader: leader ? { instance: leader.instance, term: leader.term, alive: s.leaderAlive } : null,
    plan: plan
      ? { term: plan.term, finality: plan.finality, generation: plan.generation, planned: plan.planned }
      : null,
    liveMembers: s.liveMembers,
    held: [...s.held].map(([id, t]) => ({
      id,
      epoch: t.epoch,
      weight: t.record.weight,
      progress: t.record.progress,
      draining: t.draining,
    })).sort((a, b) => (a.id < b.id ? -1 : 1)),
    counts: {
      planned: plan?.planned ?? v.splits.size,
      runnable: v.statusCounts.runnable,
      unclaimed: v.unowned.size,
      owned: v.statusCounts.runnable - v.unowned.size,
      completed: v.statusCounts.completed,
      quarantined: v.statusCounts.quarantined,
    },
    quarantined,
    outcome: s.outcome,
    invalidRecords: [...v.invalid].map(([key, message]) => ({ key, message })),
  };
}
