/**
 * Completion, decided once (docs/DESIGN.md): when the leader's view shows a
 * published final plan with every planned split seen and nothing runnable,
 * it is confirmed — the leader's `split.` watch has applied every change
 * made before the check (one request), or, on a store that cannot tell, one
 * streamed listing of `split.` — and the outcome is written into the `plan`
 * record by CAS at the leader's term. Every member learns it from its `plan`
 * watch. An outcome the store no longer supports (an operator requeued a
 * quarantined split) is cleared the same way.
 *
 * @module
 */
import { decodeRecord, encodeRecord, type JobOutcome, type PlanRecord, PlanRecordSchema, safeDecodeRecord, SplitRecordSchema } from "../../records.ts";
import { keys } from "../../store/keys.ts";
import type { Core } from "../core.ts";
import type { FleetView } from "./fleet_view.ts";

/** Decides and publishes the job outcome. */
export class CompletionJudge {
  readonly #core: Core;
  readonly #view: FleetView;
  readonly #caughtUp: () => Promise<boolean | undefined>;
  #busy = false;
  /** When the view first looked complete without the watch being caught up (a stuck pending count falls back to a listing). */
  #behindSince: number | undefined;

  /** `caughtUp` says whether the view has applied every split change made before the call (`undefined`: cannot tell). */
  constructor(core: Core, view: FleetView, caughtUp: () => Promise<boolean | undefined>) {
    this.#core = core;
    this.#view = view;
    this.#caughtUp = caughtUp;
  }

  /** Checks the view; confirms by listing and publishes (or clears) the outcome. Never throws. */
  async check(plan: PlanRecord | undefined, term: number, planRevision?: number): Promise<void> {
    if (this.#busy || !plan || plan.finality !== "final" || plan.generation === 0 || plan.term !== term) return;
    const v = this.#view;
    const known = planRevision === undefined ? undefined : { plan, revision: planRevision };
    if (plan.outcome) {
      if (v.counts.runnable > 0) await this.#write(term, undefined, known);
      return;
    }
    if (v.counts.runnable > 0 || v.splits.size < plan.planned) return;
    for (const k of v.invalid.keys()) if (k.startsWith(keys.splitPrefix)) return; // unreadable: not provably complete
    this.#busy = true;
    try {
      const outcome = await this.#confirm(plan.planned);
      if (outcome) await this.#write(term, outcome, known);
      else this.#core.clock.setTimeout(() => this.#core.schedule(), 20); // not yet: look again soon
    } catch (e) {
      // Look again soon: after the last completion no event may come for a
      // lease/3 (the next beat), and the outcome would wait for it.
      this.#core.log("warn", "Completion check failed; retrying", { error: String(e) });
      this.#core.clock.setTimeout(() => this.#core.schedule(), Math.min(250, this.#core.config.opTimeoutMs));
    } finally {
      this.#busy = false;
    }
  }

  /** The outcome if every split is finished, confirmed against the store, else `undefined`. */
  async #confirm(planned: number): Promise<JobOutcome | undefined> {
    const { clock, config } = this.#core;
    // A position the store could not give (an outage, a user without the
    // permission to read it) is "cannot tell": the listing decides.
    let caught = await this.#caughtUp().catch(() => undefined);
    if (caught === false) {
      this.#behindSince ??= clock.now();
      // Still behind after an op timeout (a watch that lags, or one that
      // never delivers what the position names): a listing decides.
      if (clock.now() - this.#behindSince < config.opTimeoutMs) return undefined;
      caught = undefined;
    } else this.#behindSince = undefined;
    if (caught === true) {
      // The view has every change made before the check: it decides.
      const v = this.#view;
      const c = v.counts;
      if (c.runnable > 0 || v.splits.size < planned) return undefined;
      for (const k of v.invalid.keys()) if (k.startsWith(keys.splitPrefix)) return undefined;
      return outcomeOf(c.completed, c.quarantined, c.cancelled);
    }
    let completed = 0, quarantined = 0, cancelled = 0;
    for (const e of await this.#core.store.list(keys.splitPrefix)) {
      const r = safeDecodeRecord(e.key, e.value, SplitRecordSchema);
      if (!r.ok || r.value.status === "runnable") return undefined;
      if (r.value.status === "completed") completed++;
      else if (r.value.status === "quarantined") quarantined++;
      else cancelled++;
    }
    if (completed + quarantined + cancelled < planned) return undefined;
    return outcomeOf(completed, quarantined, cancelled);
  }

  /**
   * Writes (or clears) the outcome by CAS at the leader's term: first at the
   * revision the leader's plan watch holds (`known`: one round trip fewer on
   * the way to every member), then, after a conflict, at a fresh read.
   */
  async #write(term: number, outcome: JobOutcome | undefined, known?: { plan: PlanRecord; revision: number }): Promise<void> {
    const { store, log } = this.#core;
    for (let i = 0; i < 4; i++) {
      let plan: PlanRecord, revision: number;
      if (i === 0 && known) ({ plan, revision } = known);
      else {
        const cur = await store.get(keys.plan);
        if (!cur) return;
        plan = decodeRecord(keys.plan, cur.value, PlanRecordSchema);
        revision = cur.revision;
      }
      if (plan.term !== term) return; // deposed
      const next: PlanRecord = { ...plan };
      if (outcome) next.outcome = outcome;
      else delete next.outcome;
      const r = await store.update(keys.plan, encodeRecord(next), revision);
      if (r.ok) {
        if (outcome) log("info", "Job outcome decided", { ...outcome });
        else log("info", "Job outcome cleared: runnable splits again", {});
        return;
      }
    }
  }
}

function outcomeOf(completed: number, quarantined: number, cancelled: number): JobOutcome {
  const extra = cancelled > 0 ? { cancelled } : {};
  return quarantined === 0
    ? { kind: "allComplete", completed, ...extra }
    : { kind: "stalled", completed, quarantined, ...extra };
}
