/**
 * Completion, decided once (docs/DESIGN.md): when the leader's view shows a
 * published final plan with every planned split seen and nothing runnable,
 * it is confirmed — the leader's `split.` watch has applied every change
 * made before the check (one request), or, on a store that cannot tell, one
 * streamed listing of `split.` — and the outcome is written into the `plan`
 * record by CAS at the leader's term. Every member learns it from its `plan`
 * watch. The outcome is written at a `plan` revision read before the
 * confirmation, so a plan write after it (an operator's requeue or cancel
 * rewrites `plan` after its split write) defeats it; an outcome the split
 * records no longer support (a runnable split, other counts) is cleared
 * the same way and decided again.
 *
 * @module
 */
import { decodeRecord, encodeRecord, type JobOutcome, type PlanRecord, PlanRecordSchema, safeDecodeRecord, SplitRecordSchema } from "../../records.ts";
import { keys } from "../../store/keys.ts";
import { type Core, decided } from "../core.ts";
import type { LeaderView } from "./leader_view.ts";

/** Applies what {@linkcode decideCompletion} decides: confirms and publishes the job outcome, or clears it. */
export class CompletionJudge {
  readonly #core: Core;
  readonly #view: LeaderView;
  readonly #caughtUp: () => Promise<boolean | undefined>;
  #busy = false;
  /** When the view first looked complete without the watch being caught up (a stuck pending count falls back to a listing). */
  #behindSince: number | undefined;

  /** `caughtUp` says whether the view has applied every split change made before the call (`undefined`: cannot tell). */
  constructor(core: Core, view: LeaderView, caughtUp: () => Promise<boolean | undefined>) {
    this.#core = core;
    this.#view = view;
    this.#caughtUp = caughtUp;
  }

  /** Applies an outcome intent: confirms by listing and publishes the outcome, or clears it. Never throws. */
  async apply(i: OutcomeIntent): Promise<void> {
    if (this.#busy) return;
    const known = i.revision === undefined ? undefined : { plan: i.plan, revision: i.revision };
    this.#busy = true; // one clear or decision in flight, not one per pass
    try {
      if (i.action === "clear") await this.#write(i.term, undefined, known);
      else await this.#decide(i.term, i.plan.planned, known);
    } catch (e) {
      // Look again soon: after the last completion no event may come for a
      // lease/3 (the next beat), and the outcome would wait for it.
      const what = i.action === "clear" ? "Clearing the job outcome failed; retrying" : "Completion check failed; retrying";
      this.#core.log("warn", what, { error: String(e) });
      this.#core.clock.setTimeout(() => this.#core.schedule(), Math.min(250, this.#core.config.opTimeoutMs));
    } finally {
      this.#busy = false;
    }
  }

  /**
   * Confirms and writes the outcome by CAS at a `plan` revision read
   * *before* the confirmation (the watch's, else a read), never at one read
   * after it: a plan write that lands after the confirmation started — an
   * operator's requeue or cancel rewrites `plan` after its split write —
   * makes the CAS lose, and the outcome is confirmed again from a fresh
   * read instead of written blindly.
   */
  async #decide(term: number, planned: number, known?: { plan: PlanRecord; revision: number }): Promise<void> {
    const { store } = this.#core;
    let at = known;
    for (let i = 0; i < 4; i++) {
      if (!at) {
        const cur = await store.get(keys.plan);
        if (!cur) return;
        const plan = decodeRecord(keys.plan, cur.value, PlanRecordSchema);
        if (plan.term !== term || plan.outcome || plan.finality !== "final") return; // deposed, or decided
        at = { plan, revision: cur.revision };
        planned = plan.planned;
      }
      const outcome = await this.#confirm(planned);
      if (!outcome) {
        this.#core.clock.setTimeout(() => this.#core.schedule(), 20); // not yet: look again soon
        return;
      }
      if (await this.#write(term, outcome, at, true)) return;
      at = undefined; // the plan moved since the confirmation began: confirm again
    }
    this.#core.clock.setTimeout(() => this.#core.schedule(), 20);
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
      return viewShowsDone(v, planned) ? outcomeOf(v.counts.completed, v.counts.quarantined, v.counts.cancelled) : undefined;
    }
    let completed = 0, quarantined = 0, cancelled = 0;
    // A residual listed by a cut whose record does not exist yet is work left.
    const seen = new Set<string>(), listed: string[] = [];
    for (const e of await this.#core.store.list(keys.splitPrefix)) {
      const r = safeDecodeRecord(e.key, e.value, SplitRecordSchema);
      if (!r.ok || r.value.status === "runnable") return undefined;
      seen.add(e.key.slice(keys.splitPrefix.length));
      for (const x of r.value.residuals ?? []) listed.push(x.id);
      if (r.value.status === "completed") completed++;
      else if (r.value.status === "quarantined") quarantined++;
      else cancelled++;
    }
    if (completed + quarantined + cancelled < planned || listed.some((id) => !seen.has(id))) return undefined;
    return outcomeOf(completed, quarantined, cancelled);
  }

  /**
   * Writes (or clears) the outcome by CAS at the leader's term: first at the
   * revision the leader's plan watch holds (`known`: one round trip fewer on
   * the way to every member), then, after a conflict, at a fresh read —
   * except with `once` (an outcome: its revision must predate the
   * confirmation). Whether it was written.
   */
  async #write(term: number, outcome: JobOutcome | undefined, known?: { plan: PlanRecord; revision: number }, once = false): Promise<boolean> {
    const { store } = this.#core;
    for (let i = 0; i < (once ? 1 : 4); i++) {
      let plan: PlanRecord, revision: number;
      if (i === 0 && known) ({ plan, revision } = known);
      else {
        const cur = await store.get(keys.plan);
        if (!cur) return false;
        plan = decodeRecord(keys.plan, cur.value, PlanRecordSchema);
        revision = cur.revision;
      }
      if (plan.term !== term) return false; // deposed
      const next: PlanRecord = { ...plan };
      if (outcome) next.outcome = outcome;
      else delete next.outcome;
      const r = await store.update(keys.plan, encodeRecord(next), revision);
      if (r.ok) {
        if (outcome) decided(this.#core, "info", "Job outcome decided", "outcome.decided", { ...outcome });
        else decided(this.#core, "info", "Job outcome cleared: the split records no longer support it", "outcome.cleared", { was: plan.outcome?.kind });
        return true;
      }
    }
    return false;
  }
}

/** Publish or clear the job outcome (see {@linkcode decideCompletion}). */
export interface OutcomeIntent {
  /** `confirm`: confirm every split finished against the store and publish the outcome; `clear`: remove a standing one. */
  action: "confirm" | "clear";
  plan: PlanRecord;
  term: number;
  /** Revision `plan` was read at, if known. */
  revision: number | undefined;
}

/** Whether the view shows every planned split finished: nothing runnable, every planned split and listed residual seen, none unreadable. */
export function viewShowsDone(v: LeaderView, planned: number): boolean {
  if (v.counts.runnable > 0 || v.splits.size < planned || v.pendingResiduals.size > 0) return false;
  for (const k of v.invalid.keys()) if (k.startsWith(keys.splitPrefix)) return false;
  return true;
}

/** Whether a standing outcome disagrees with the view (a runnable split, or other counts once every split is seen). */
export function outcomeDisagrees(v: LeaderView, o: JobOutcome, planned: number): boolean {
  const c = v.counts;
  if (c.runnable > 0 || v.pendingResiduals.size > 0) return true;
  if (o.kind === "planFailed" || v.splits.size < planned) return false;
  for (const k of v.invalid.keys()) if (k.startsWith(keys.splitPrefix)) return false;
  const now = outcomeOf(c.completed, c.quarantined, c.cancelled);
  return now.kind !== o.kind || now.completed !== o.completed || (now.cancelled ?? 0) !== (o.cancelled ?? 0) ||
    (now.kind === "stalled" && o.kind === "stalled" && now.quarantined !== o.quarantined);
}

/**
 * What completion asks of the leader of `term` now: for a final plan of
 * its term, `confirm` when the view shows every split finished and no
 * outcome stands, `clear` when a standing outcome is one the split records
 * no longer support (an operator requeued or cancelled a split, possibly
 * while the outcome was on its way: it never stands against the store),
 * else nothing. Pure.
 *
 * @example
 * ```ts ignore
 * const intent = decideCompletion(view, plan, term, planRevision);
 * ```
 */
export function decideCompletion(v: LeaderView, plan: PlanRecord | undefined, term: number, revision?: number): OutcomeIntent | undefined {
  if (!plan || plan.finality !== "final" || plan.generation === 0 || plan.term !== term) return undefined;
  if (plan.outcome) return outcomeDisagrees(v, plan.outcome, plan.planned) ? { action: "clear", plan, term, revision } : undefined;
  return viewShowsDone(v, plan.planned) ? { action: "confirm", plan, term, revision } : undefined;
}

function outcomeOf(completed: number, quarantined: number, cancelled: number): JobOutcome {
  const extra = cancelled > 0 ? { cancelled } : {};
  return quarantined === 0
    ? { kind: "allComplete", completed, ...extra }
    : { kind: "stalled", completed, quarantined, ...extra };
}
