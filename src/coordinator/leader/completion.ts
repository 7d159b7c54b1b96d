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
import { permanentlyFailed } from "../../records/transitions.ts";
import type { StoreEntry, WriteResult } from "../../store/store.ts";
import { type Core, decided } from "../core.ts";
import type { LeaderView } from "./leader_view.ts";

/** Applies what {@linkcode decideCompletion} decides: confirms and publishes the job outcome, or clears it. */
export class CompletionJudge {
  readonly #core: Core;
  readonly #view: LeaderView;
  readonly #caughtUp: () => Promise<boolean | undefined>;
  readonly #learn: (entry: StoreEntry) => void;
  #busy = false;
  /** When the view first looked complete without the watch being caught up (a stuck pending count falls back to a listing). */
  #behindSince: number | undefined;

  /**
   * `caughtUp` says whether the view has applied every split change made
   * before the call (`undefined`: cannot tell); `learn` hands the leader's
   * view of `plan` a record read or written here (its watch may lag: a pass
   * that decided on the lagging view would make the same losing write again).
   */
  constructor(core: Core, view: LeaderView, caughtUp: () => Promise<boolean | undefined>, learn: (entry: StoreEntry) => void) {
    this.#core = core;
    this.#view = view;
    this.#caughtUp = caughtUp;
    this.#learn = learn;
  }

  /** Applies an outcome intent: confirms by listing and publishes the outcome, or clears it. Never throws. */
  async apply(i: OutcomeIntent): Promise<void> {
    if (this.#busy) return;
    const known = i.revision === undefined ? undefined : { plan: i.plan, revision: i.revision };
    this.#busy = true; // one clear or decision in flight, not one per pass
    try {
      if (i.action === "clear") await this.#clear(i.term, i.plan.outcome, known);
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
    let at = known;
    for (let i = 0; i < 4; i++) {
      if (!at) {
        const cur = await this.#read();
        if (!cur) return;
        // Deposed, decided, or paused since the pass decided to confirm (a pause suspends completion).
        if (cur.plan.term !== term || cur.plan.outcome || cur.plan.finality !== "final" || cur.plan.paused) return;
        at = cur;
        planned = cur.plan.planned;
      }
      const found = await this.#confirm(planned);
      if (found.state !== "done") {
        this.#core.clock.setTimeout(() => this.#core.schedule(), 20); // not yet: look again soon
        return;
      }
      const outcome = found.outcome;
      const r = await this.#cas(at, { ...at.plan, outcome });
      if (r.ok) return decided(this.#core, "info", "Job outcome decided", "outcome.decided", { ...outcome });
      at = undefined; // the plan moved since the confirmation began: confirm again
    }
    this.#core.clock.setTimeout(() => this.#core.schedule(), 20);
  }

  /**
   * Clears `judged`, the outcome the leader's view holds and found wrong,
   * once the store confirms it wrong (a view whose split watch lags can
   * show a runnable split the store has finished: the outcome it would
   * clear is right), by CAS at the view's revision. A lost CAS means `plan`
   * moved since: the fresh record goes to the view and is cleared only if
   * it still carries that very outcome. Another outcome (one decided since,
   * possibly right) or none is left as it is: the next pass decides on the
   * fresh record. Never rewrites `plan` unchanged (with a watch that lags,
   * each such rewrite superseded the key again and kept the view stale for
   * good).
   */
  async #clear(term: number, judged: JobOutcome | undefined, known?: { plan: PlanRecord; revision: number }): Promise<void> {
    const found = await this.#confirm(known?.plan.planned ?? 0);
    if (found.state === "behind" || (found.state === "done" && sameOutcome(found.outcome, judged))) {
      this.#core.clock.setTimeout(() => this.#core.schedule(), 20); // the view is behind the store: look again
      return;
    }
    let at = known;
    for (let i = 0; i < 4; i++) {
      at ??= await this.#read();
      if (!at || at.plan.term !== term || !sameOutcome(at.plan.outcome, judged)) return this.#core.schedule();
      const next: PlanRecord = { ...at.plan };
      delete next.outcome;
      const r = await this.#cas(at, next);
      if (r.ok) {
        decided(this.#core, "info", "Job outcome cleared: the split records no longer support it", "outcome.cleared", { was: judged?.kind });
        return;
      }
      at = undefined;
    }
    this.#core.schedule();
  }

  /** `plan` as the store holds it now, handed to the leader's view too. */
  async #read(): Promise<{ plan: PlanRecord; revision: number } | undefined> {
    const cur = await this.#core.store.get(keys.plan);
    if (!cur) return undefined;
    const plan = decodeRecord(keys.plan, cur.value, PlanRecordSchema);
    this.#learn(cur);
    return { plan, revision: cur.revision };
  }

  /** One CAS of `plan`; a landed write reaches the leader's view at once, ahead of its watch. */
  async #cas(at: { revision: number }, next: PlanRecord): Promise<WriteResult> {
    const value = encodeRecord(next);
    const r = await this.#core.store.update(keys.plan, value, at.revision);
    if (r.ok) this.#learn({ key: keys.plan, value, revision: r.revision });
    return r;
  }

  /**
   * What the store says of the job now: `done` with the outcome when every
   * planned split is finished, `open` when one is not, `behind` when the
   * view has not caught up with the store yet (for at most an op timeout:
   * then a listing decides).
   */
  async #confirm(planned: number): Promise<Confirmed> {
    const { clock, config } = this.#core;
    // A position the store could not give (an outage, a user without the
    // permission to read it) is "cannot tell": the listing decides.
    let caught = await this.#caughtUp().catch(() => undefined);
    if (caught === false) {
      this.#behindSince ??= clock.now();
      // Still behind after an op timeout (a watch that lags, or one that
      // never delivers what the position names): a listing decides.
      if (clock.now() - this.#behindSince < config.opTimeoutMs) return BEHIND;
      caught = undefined;
    } else this.#behindSince = undefined;
    if (caught === true) {
      // The view has every change made before the check: it decides.
      const v = this.#view;
      return viewShowsDone(v, planned) ? done(outcomeOf(v.counts.completed, v.counts.quarantined, v.counts.cancelled, permanentIn(v))) : OPEN;
    }
    let completed = 0, quarantined = 0, cancelled = 0, permanent = 0;
    // A residual listed by a cut whose record does not exist yet is work left.
    const seen = new Set<string>(), listed: string[] = [];
    for (const e of await this.#core.store.list(keys.splitPrefix)) {
      const r = safeDecodeRecord(e.key, e.value, SplitRecordSchema);
      if (!r.ok || r.value.status === "runnable") return OPEN;
      seen.add(e.key.slice(keys.splitPrefix.length));
      for (const x of r.value.residuals ?? []) listed.push(x.id);
      if (r.value.status === "completed") completed++;
      else if (r.value.status === "quarantined") {
        quarantined++;
        if (permanentlyFailed(r.value)) permanent++;
      } else cancelled++;
    }
    if (completed + quarantined + cancelled < planned || listed.some((id) => !seen.has(id))) return OPEN;
    return done(outcomeOf(completed, quarantined, cancelled, permanent));
  }
}

/** What the store says of the job (see `CompletionJudge.#confirm`). */
type Confirmed = { state: "done"; outcome: JobOutcome } | { state: "open" } | { state: "behind" };
const OPEN: Confirmed = { state: "open" };
const BEHIND: Confirmed = { state: "behind" };
const done = (outcome: JobOutcome): Confirmed => ({ state: "done", outcome });

/** Whether two outcomes are the same decision (kind and counts, what they skipped included). */
function sameOutcome(a: JobOutcome | undefined, b: JobOutcome | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  const fields = (o: JobOutcome) =>
    o.kind === "planFailed" ? [o.kind, o.error, o.attempts, o.term] : [o.kind, o.completed, ...stallCounts(o), o.cancelled ?? 0];
  const x = fields(a), y = fields(b);
  return x.every((v, i) => v === y[i]);
}

/** A stall's quarantined and permanent counts (0 and 0 for a complete job). */
function stallCounts(o: Exclude<JobOutcome, { kind: "planFailed" }>): [number, number] {
  return o.kind === "stalled" ? [o.quarantined, o.permanent ?? 0] : [0, 0];
}

/**
 * Quarantined splits of the view whose last failure was permanent: the
 * split table's flag, read over the quarantined set when an outcome is
 * decided or checked (O(quarantined), never per write).
 */
function permanentIn(v: LeaderView): number {
  let n = 0;
  for (const id of v.quarantined) if (v.splits.permanent(id)) n++;
  return n;
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
  // Every pass of a stalled job checks its outcome: the quarantined set is walked only when the other counts agree.
  const now = outcomeOf(c.completed, c.quarantined, c.cancelled, 0);
  if (now.kind !== o.kind || now.completed !== o.completed || (now.cancelled ?? 0) !== (o.cancelled ?? 0)) return true;
  if (now.kind !== "stalled" || o.kind !== "stalled") return false;
  return now.quarantined !== o.quarantined || permanentIn(v) !== (o.permanent ?? 0);
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
  if (!plan || plan.finality !== "final" || plan.generation === 0 || plan.term !== term || plan.paused) return undefined;
  if (plan.outcome) return outcomeDisagrees(v, plan.outcome, plan.planned) ? { action: "clear", plan, term, revision } : undefined;
  return viewShowsDone(v, plan.planned) ? { action: "confirm", plan, term, revision } : undefined;
}

/** The outcome of these counts; what was skipped (cancelled, permanently failed) is named only when there is some. */
function outcomeOf(completed: number, quarantined: number, cancelled: number, permanent: number): JobOutcome {
  const extra = cancelled > 0 ? { cancelled } : {};
  return quarantined === 0
    ? { kind: "allComplete", completed, ...extra }
    : { kind: "stalled", completed, quarantined, ...extra, ...(permanent > 0 ? { permanent } : {}) };
}
