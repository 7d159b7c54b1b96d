/**
 * The operator actions on a sharded job (docs/OPERATIONS.md, "Sharding a
 * job"): the job's actions — pause, resume, rerun, requeue every
 * quarantined split, drain a member — act on every shard; a split's —
 * requeue, cancel — on the shard that holds it. Each shard's write is the
 * unsharded action on its store (`actions.ts`, `job_actions.ts`: one CAS
 * at the revision read, retried only while it applies); the answer is the
 * job's, with each shard's own in `shards`. Over one store each is the
 * unsharded action, its answer unchanged.
 *
 * @module
 */
import { assertValidId } from "../store/keys.ts";
import {
  cancelSplit,
  type CancelResult,
  drainMember,
  type DrainMemberResult,
  requeueQuarantined,
  requeueSplit,
  type RequeueResult,
} from "./actions.ts";
import { findSplitShard, type JobShards } from "./job_shards.ts";
import { type PauseResult, pauseJob, rerunJob, type RerunResult, resumeJob, type ResumeResult } from "./job_actions.ts";
import { keys } from "../store/keys.ts";
import { PlanRecordSchema, safeDecodeRecord } from "../records.ts";
import { foldRuns } from "./shard_fold.ts";

/**
 * One shard's answer to an action on the whole job.
 *
 * @example
 * ```ts
 * import type { ShardAnswer } from "@splitlease/splitlease/admin";
 * const line = (a: ShardAnswer) => `shard ${a.index} (${a.job}): ${a.outcome}`;
 * ```
 */
export interface ShardAnswer {
  /** Which shard. */
  index: number;
  /** The job name its records are under. */
  job: string;
  /** What the action did there. */
  outcome: string;
  /** Its message. */
  message: string;
}

/** Outcomes that did nothing because of the shard's records (not the job's state): the job's answer is the first of them. */
const FAILED = ["notFound", "unreadable", "conflict"];

function answers(shards: JobShards, rs: readonly { outcome: string; message: string }[]): ShardAnswer[] {
  return rs.map((r, index) => ({ index, job: shards.jobs[index], outcome: r.outcome, message: r.message }));
}

/** The first shard whose action failed, as the job's answer (`undefined`: none did). */
function firstFailure<R extends { outcome: string; message: string }>(shards: JobShards, rs: readonly R[]): R | undefined {
  const i = rs.findIndex((r) => FAILED.includes(r.outcome));
  if (i < 0) return undefined;
  const done = rs.filter((r) => !FAILED.includes(r.outcome)).length;
  return {
    ...rs[i],
    message: `shard ${i} (job "${shards.jobs[i]}"): ${rs[i].message}` +
      (done ? ` (${done} of the ${rs.length} shards answered; the action is safe to repeat)` : ""),
  };
}

/**
 * Pauses a job in every shard (`pauseJob` on each): `paused` once every
 * shard that has not finished is paused, `finished` when every shard is.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { pauseShards } from "@splitlease/splitlease/admin";
 * const r = await pauseShards({ job: "j", stores: [new MemoryStore()], jobs: ["j"] }, { by: "ops" });
 * console.log(r.outcome); // "notFound"
 * ```
 */
export async function pauseShards(shards: JobShards, options: { by?: string; reason?: string } = {}): Promise<PauseResult & { shards?: ShardAnswer[] }> {
  if (shards.stores.length === 1) return await pauseJob(shards.stores[0], options);
  const rs = await Promise.all(shards.stores.map((s) => pauseJob(s, options)));
  const each = answers(shards, rs);
  const failed = firstFailure(shards, rs);
  if (failed) return { ...failed, shards: each };
  const paused = rs.find((r) => r.outcome === "paused") ?? rs.find((r) => r.outcome === "alreadyPaused");
  const finished = rs.filter((r) => r.outcome === "finished").length;
  if (!paused || !("paused" in paused)) {
    return { outcome: "finished", message: `Every shard of the job is finished (${rs.length} shards): there is nothing to pause`, shards: each };
  }
  const also = finished ? ` (${finished} of them finished already)` : "";
  if (paused.outcome === "alreadyPaused") {
    return { outcome: "alreadyPaused", paused: paused.paused, message: `The job is already paused in its ${rs.length} shards${also}`, shards: each };
  }
  return {
    outcome: "paused",
    paused: paused.paused,
    message: `Job paused in its ${rs.length} shards${also}: their leaders deal nothing new and every member hands back what it runs; resume to continue`,
    shards: each,
  };
}

/**
 * Resumes a job in every shard (`resumeJob` on each): `resumed` when a
 * shard was paused, `notPaused` when none was.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { resumeShards } from "@splitlease/splitlease/admin";
 * const r = await resumeShards({ job: "j", stores: [new MemoryStore()], jobs: ["j"] });
 * console.log(r.outcome); // "notFound"
 * ```
 */
export async function resumeShards(shards: JobShards): Promise<ResumeResult & { shards?: ShardAnswer[] }> {
  if (shards.stores.length === 1) return await resumeJob(shards.stores[0]);
  const rs = await Promise.all(shards.stores.map((s) => resumeJob(s)));
  const each = answers(shards, rs);
  const failed = firstFailure(shards, rs);
  if (failed) return { ...failed, shards: each };
  const resumed = rs.filter((r) => r.outcome === "resumed") as Extract<ResumeResult, { outcome: "resumed" }>[];
  if (resumed.length === 0) return { outcome: "notPaused", message: `The job is not paused (in none of its ${rs.length} shards)`, shards: each };
  const pausedForMs = Math.max(...resumed.map((r) => r.pausedForMs));
  return {
    outcome: "resumed",
    pausedForMs,
    message: `Job resumed in its ${rs.length} shards after ${Math.round(pausedForMs / 1000)} s paused`,
    shards: each,
  };
}

/**
 * Reruns a finished job in every shard (`rerunJob` on each), once every
 * shard has finished: a shard that has no outcome yet (or whose planning
 * failed) refuses the whole rerun before any shard is rerun.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { rerunShards } from "@splitlease/splitlease/admin";
 * const r = await rerunShards({ job: "j", stores: [new MemoryStore()], jobs: ["j"] });
 * console.log(r.outcome); // "notFound"
 * ```
 */
export async function rerunShards(shards: JobShards): Promise<RerunResult & { shards?: ShardAnswer[] }> {
  if (shards.stores.length === 1) return await rerunJob(shards.stores[0]);
  // Every shard finished first: a rerun of some shards only would run a job of two runs at once.
  const plans = await Promise.all(shards.stores.map((s) => s.get(keys.plan)));
  for (const [i, e] of plans.entries()) {
    const where = `shard ${i} (job "${shards.jobs[i]}")`;
    if (!e) return { outcome: "notFound", message: `${where} has no plan record yet (no leader has run): start the job's workers first` };
    const r = safeDecodeRecord(e.key, e.value, PlanRecordSchema);
    if (!r.ok) return { outcome: "unreadable", message: `${where}: ${r.error.message}` };
    if (!r.value.outcome) return { outcome: "running", message: `${where} has no outcome yet (it runs, or is paused): rerun the job once every shard finished` };
    if (r.value.outcome.kind === "planFailed") {
      return { outcome: "planFailed", message: `${where}: its planning failed: fix the planner and restart the job's workers (the next leader plans again)` };
    }
  }
  const rs = await Promise.all(shards.stores.map((s) => rerunJob(s)));
  const each = answers(shards, rs);
  const done = rs.filter((r) => r.outcome === "rerun") as Extract<RerunResult, { outcome: "rerun" }>[];
  const bad = rs.findIndex((r) => r.outcome !== "rerun");
  if (bad >= 0) {
    const r = rs[bad] as Exclude<RerunResult, { outcome: "rerun" }>;
    return {
      outcome: r.outcome,
      message: `shard ${bad} (job "${shards.jobs[bad]}"): ${r.message}` +
        (done.length ? ` (${done.length} of the ${rs.length} shards were rerun: once the others finish, rerun it again)` : ""),
      shards: each,
    };
  }
  const run = Math.max(...done.map((r) => r.run));
  const [previous] = foldRuns(done.map((r) => [r.previous]));
  return {
    outcome: "rerun",
    run,
    previous,
    epochBase: Math.max(...done.map((r) => r.epochBase)),
    message: `Run ${run} of the job started in its ${rs.length} shards (run ${previous.run}, ${previous.outcome.kind}, is kept in their ` +
      `histories): their leaders plan again once a worker runs`,
    shards: each,
  };
}

/**
 * Requeues every quarantined split of every shard (`requeueQuarantined`
 * on each): the counts summed, every split's answer listed.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { requeueQuarantinedIn } from "@splitlease/splitlease/admin";
 * const r = await requeueQuarantinedIn({ job: "j", stores: [new MemoryStore()], jobs: ["j"] });
 * console.log(r.found); // 0
 * ```
 */
export async function requeueQuarantinedIn(
  shards: JobShards,
): Promise<{ found: number; requeued: number; reopened: boolean; results: RequeueResult[] }> {
  if (shards.stores.length === 1) return await requeueQuarantined(shards.stores[0]);
  const rs = await Promise.all(shards.stores.map((s) => requeueQuarantined(s)));
  return {
    found: rs.reduce((n, r) => n + r.found, 0),
    requeued: rs.reduce((n, r) => n + r.requeued, 0),
    reopened: rs.some((r) => r.reopened),
    results: rs.flatMap((r) => r.results),
  };
}

/** A split's action on the shard that holds it (`shard`: its index), or `notFound` in none. */
async function onItsShard<R extends { id: string; outcome: string; message: string }>(
  shards: JobShards,
  id: string,
  act: (i: number) => Promise<R>,
): Promise<R | (R & { shard: number }) | { id: string; outcome: "notFound"; message: string }> {
  if (shards.stores.length === 1) return await act(0);
  assertValidId(id, "split id");
  const at = await findSplitShard(shards, id);
  if (at < 0) return { id, outcome: "notFound", message: `No split "${id}" in any of the job's ${shards.stores.length} shards` };
  return { ...(await act(at)), shard: at };
}

/**
 * Requeues a quarantined split in the shard that holds it.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { requeueSplitIn } from "@splitlease/splitlease/admin";
 * const r = await requeueSplitIn({ job: "j", stores: [new MemoryStore(), new MemoryStore()], jobs: ["j", "j--shard1"] }, "part-7");
 * console.log(r.message); // No split "part-7" in any of the job's 2 shards
 * ```
 */
export function requeueSplitIn(shards: JobShards, id: string): Promise<RequeueResult & { shard?: number }> {
  return onItsShard(shards, id, (i) => requeueSplit(shards.stores[i], id));
}

/**
 * Cancels a split in the shard that holds it.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { cancelSplitIn } from "@splitlease/splitlease/admin";
 * const r = await cancelSplitIn({ job: "j", stores: [new MemoryStore()], jobs: ["j"] }, "part-7");
 * console.log(r.outcome); // "notFound"
 * ```
 */
export function cancelSplitIn(shards: JobShards, id: string): Promise<CancelResult & { shard?: number }> {
  return onItsShard(shards, id, (i) => cancelSplit(shards.stores[i], id));
}

/**
 * Asks a member to drain in every shard (one instance is a member of each):
 * `draining` once it was asked in a shard, `notFound` when no shard has it.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { drainMemberIn } from "@splitlease/splitlease/admin";
 * const r = await drainMemberIn({ job: "j", stores: [new MemoryStore()], jobs: ["j"] }, "pod-3");
 * console.log(r.outcome); // "notFound"
 * ```
 */
export async function drainMemberIn(shards: JobShards, instance: string): Promise<DrainMemberResult & { shards?: ShardAnswer[] }> {
  if (shards.stores.length === 1) return await drainMember(shards.stores[0], instance);
  const rs = await Promise.all(shards.stores.map((s) => drainMember(s, instance)));
  const each = answers(shards, rs);
  // A member missing from some shard (it left one, or its record there expired) is drained where it is.
  const found = rs.filter((r) => r.outcome !== "notFound");
  if (found.length === 0) return { instance, outcome: "notFound", message: `No member "${instance}" in any of the job's ${rs.length} shards`, shards: each };
  const bad = rs.findIndex((r) => r.outcome === "unreadable" || r.outcome === "conflict");
  if (bad >= 0) {
    const done = rs.filter((r) => r.outcome === "draining" || r.outcome === "alreadyDraining").length;
    return {
      ...rs[bad],
      message: `shard ${bad} (job "${shards.jobs[bad]}"): ${rs[bad].message}` +
        (done ? ` (it drains in ${done} of the ${rs.length} shards; the action is safe to repeat)` : ""),
      shards: each,
    };
  }
  const draining = found.find((r) => r.outcome === "draining") ?? found[0];
  const session = "session" in draining ? draining.session : "";
  return draining.outcome === "draining"
    ? { instance, outcome: "draining", session, message: `${draining.message} (in ${found.length} of the job's ${rs.length} shards)`, shards: each }
    : { instance, outcome: "alreadyDraining", session, message: `Member "${instance}" is already draining in the job's shards`, shards: each };
}
