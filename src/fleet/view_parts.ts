/**
 * The parts of a fleet view that every way of reading it builds the same:
 * the job-wide counts folded from split facts, the members with their load
 * and rate, the plan and the leader as a view shows them. A full read
 * (`fleet_view.ts`), the live index (`fleet_index.ts`) and the summary
 * from the leader's heartbeat (`fleet_summary.ts`) all assemble their
 * views from these, so that they say the same of the same records.
 *
 * @module
 */
import type { LeaderRecord, MemberRecord, PlanRecord } from "../records.ts";
import type { SplitFacts } from "./fleet_rate.ts";
import { jobResultOf } from "./job_result.ts";
import { judgeMember, leaseOf } from "./member_liveness.ts";
import type { FleetCounts } from "./fleet_figures.ts";
import type { FleetLiveness, FleetMember } from "./fleet_member.ts";
import type { FleetView } from "./types.ts";

/**
 * Instance id prefix of a `splitlease ui` process (`splitlease-ui-<8 hex>`):
 * a view marks such a member (with no lanes) `ui`, not a worker.
 */
export const UI_INSTANCE_PREFIX = "splitlease-ui-";

/** Counts of no split at all. */
export function emptyCounts(): FleetCounts {
  return {
    total: 0, runnable: 0, owned: 0, unclaimed: 0, unowned: 0, completed: 0, quarantined: 0, permanent: 0, cancelled: 0, invalid: 0, weight: 0,
    completedWeight: 0,
  };
}

/**
 * Adds one readable split to the counts, and its owner's load to `owned`
 * (`instance/session` → runnable splits it owns).
 */
export function countSplit(counts: FleetCounts, owned: Map<string, number>, f: SplitFacts): void {
  counts.total++;
  counts[f.status]++;
  counts.weight += f.weight;
  if (f.status === "completed") counts.completedWeight += f.weight;
  if (f.permanent) counts.permanent++;
  if (f.status !== "runnable") return;
  if (f.owner !== null) {
    counts.owned++;
    owned.set(f.owner, (owned.get(f.owner) ?? 0) + 1);
  } else counts.unclaimed++;
}

/** The job's fingerprint from its `job` record's text, or `null` (an unreadable job record is the coordinator's to report). */
export function fingerprintOf(jobValue: string | undefined): string | null {
  if (jobValue === undefined) return null;
  try {
    const j = JSON.parse(jobValue) as { fingerprint?: unknown };
    return typeof j.fingerprint === "string" ? j.fingerprint : null;
  } catch {
    return null;
  }
}

/** The plan as a view shows it. */
export function planView(plan: PlanRecord | undefined): FleetView["plan"] {
  if (!plan) return null;
  return {
    term: plan.term,
    finality: plan.finality,
    generation: plan.generation,
    planned: plan.planned,
    outcome: plan.outcome?.kind ?? null,
    result: jobResultOf(plan),
    run: plan.run ?? 1,
    history: plan.history ?? [],
  };
}

/** Who judged liveness, for a view. */
export function livenessView(liveness: FleetLiveness | undefined, leader: LeaderRecord | undefined): FleetView["liveness"] {
  return liveness ? { judgedBy: "here", by: liveness.by } : { judgedBy: "clock", leader: leader?.instance ?? null };
}

/**
 * Every member as a view shows it, by instance id: judged by the leader's
 * rule (`member_liveness.ts`) at `at` (with `liveness`: by the leader's own
 * judgement), its load from `owned` (`instance/session` → runnable splits
 * it owns) and its rate from `perMinute`.
 */
export function memberViews(
  members: ReadonlyMap<string, MemberRecord>,
  owned: ReadonlyMap<string, number>,
  perMinute: (instance: string) => number,
  leader: LeaderRecord | undefined,
  at: number,
  liveness: FleetLiveness | undefined,
): FleetMember[] {
  const live = liveness ? new Set(liveness.liveMembers) : undefined;
  return [...members].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([instance, m]) => {
    const mine = owned.get(instance + "/" + m.session) ?? 0;
    const judged = judgeMember({ record: m, now: at, owned: mine, ...(live ? { leader: live.has(instance) } : {}) });
    // Past its lease its last report (working, idle, ...) is no longer true.
    const activity: FleetMember["activity"] = judged === "gone" || judged === "unresponsive"
      ? judged
      : m.draining ? "draining" : m.maxInFlight === 0 ? "standby" : mine > 0 || (m.held ?? 0) > 0 ? "working" : "idle";
    return {
      instance,
      session: m.session,
      runtime: m.runtime,
      version: m.version,
      maxInFlight: m.maxInFlight,
      owned: mine,
      held: m.held ?? null,
      beat: m.beat,
      draining: m.draining === true,
      planner: m.planner === true,
      leader: leader?.instance === instance && leader.session === m.session,
      alive: judged === "unknown" ? null : judged === "alive",
      liveness: judged,
      lease: leaseOf(m),
      activity,
      ui: instance.startsWith(UI_INSTANCE_PREFIX) && m.maxInFlight === 0,
      lastBeatAt: m.at ?? null,
      perMinute: perMinute(instance),
    };
  });
}
