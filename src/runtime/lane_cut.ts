/**
 * Answering the leader's ask to cut a running lane's remaining work
 * (docs/DESIGN.md, "Stragglers"): the source decides where
 * (`SplitSource.split`), the coordinator writes the cut (one CAS at the
 * lane's epoch) and the residuals. An answer that cannot be written hands
 * the split back with its committed progress, so no work is lost whatever
 * the source already stopped short of.
 *
 * @module
 */
import type { Coordinator } from "../coordinator/types.ts";
import type { Logger } from "../util/logger.ts";
import { FencedError, SplitleaseError } from "../errors.ts";
import { makeCut } from "../coordinator/cuts.ts";
import type { CutAnswer } from "../coordinator/types.ts";
import type { WorkerLane } from "./lane.ts";
import { canCut, setCutting, shownState } from "./lane_state.ts";
import type { SplitAnswer, SplitSource } from "./source.ts";
import type { WorkerStats } from "./worker_types.ts";

/** What a cut needs from its worker. */
export interface CutDeps<D> {
  coordinator: Coordinator;
  source: SplitSource<D>;
  log: Logger;
  stats: WorkerStats;
  /** Runs a task nobody awaits, logging its failure. */
  background(p: Promise<unknown>): void;
  /** Stops the lane and hands its split back (a cut that could not be written). */
  handBack(lane: WorkerLane<D>): void;
}

/**
 * Asks the lane's source to cut its remaining work into `parts` pieces and
 * writes the answer. Declines (does nothing) for a lane not running, a
 * source without the hook, or a source that declines.
 *
 * @example
 * ```ts ignore
 * cutLane(lane, 4, { coordinator, source, log, stats, background, handBack });
 * ```
 */
export function cutLane<D>(lane: WorkerLane<D>, parts: number, deps: CutDeps<D>): void {
  const { coordinator, source, log, stats } = deps;
  const split = coordinator.split?.bind(coordinator);
  const declined = (why: string, level: "debug" | "warn" = "debug", error?: unknown) => {
    stats.cuts.declined++;
    log(level, "Cut declined", { event: "cut", outcome: "declined", splitId: lane.splitId, why, ...(error ? { error } : {}) });
  };
  if (!canCut(lane.state)) return declined(`lane ${shownState(lane.state)}`);
  if (!source.split || !split) return declined("the source has no split hook");
  let answer;
  try {
    answer = source.split(lane.handle, { parts, fraction: 1 / parts });
  } catch (e) {
    return declined("split threw", "warn", e);
  }
  if (answer === undefined) return declined("the source declined");
  const bad = invalid(source, lane, answer);
  if (bad) {
    log("error", "The source's cut cannot be written; handing the split back with its committed progress", {
      event: "cut",
      outcome: "refused",
      splitId: lane.splitId,
      error: bad,
    });
    stats.cuts.declined++;
    return deps.handBack(lane);
  }
  lane.descriptor = answer.keep;
  setCutting(lane, true);
  deps.background(split(lane.splitId, lane.epoch, answer as unknown as CutAnswer).then(
    (ids) => {
      stats.cuts.performed++;
      log("info", "Cut a split's remaining work", { event: "cut", outcome: "performed", splitId: lane.splitId, epoch: lane.epoch, residuals: ids });
    },
    (e) => {
      if (e instanceof FencedError) return; // lost: its next owner runs the whole remaining range
      if (e instanceof SplitleaseError && e.code === "INVALID_ARGUMENT") {
        log("error", "The cut was refused; handing the split back with its committed progress", { event: "cut", outcome: "refused", splitId: lane.splitId, error: e });
        deps.handBack(lane);
        return;
      }
      // An outage: the cut rides on the tenancy's next write (its commits, its completion).
      log("warn", "Writing a cut failed; it goes with the split's next write", { event: "cut", splitId: lane.splitId, error: e });
    },
  ).finally(() => setCutting(lane, false)));
}

/** What is wrong with an answer (the coordinator's limits of a cut, then `descriptorSchema`), or `undefined`. */
function invalid<D>(source: SplitSource<D>, lane: WorkerLane<D>, answer: SplitAnswer<D>): string | undefined {
  try {
    makeCut(lane.splitId, lane.spec.weight, answer as unknown as CutAnswer);
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
  const schema = source.descriptorSchema;
  if (!schema) return undefined;
  for (const [what, d] of [["keep", answer.keep] as const, ...answer.residuals.map((r, i) => [`residual ${i}`, r.descriptor] as const)]) {
    const r = schema.safeParse(d);
    if (!r.success) return `${what} fails descriptorSchema: ${r.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ")}`;
  }
  return undefined;
}
