/**
 * No straggler (docs/DESIGN.md, "Stragglers"): when lanes are idle and no
 * free split is left to deal them, the leader asks the owners of the
 * running splits with the most work left to cut it (`planCuts` decides,
 * pure), and creates the residuals a landed cut lists whose records do not
 * exist yet (the owner creates them too; whoever is first wins the
 * create-if-absent).
 *
 * @module
 */
import { MAX_RESIDUALS, type SplitRecord } from "../../records.ts";
import type { Core } from "../core.ts";
import { residualRecord } from "../cuts.ts";
import type { AssignmentTracker } from "./assignment_tracker.ts";
import type { Assignments } from "./directives.ts";
import type { AnsweredIntent, AskIntent, Decision, GiveUpIntent, LeaderIntent } from "./intents.ts";
import type { LeaderView } from "./leader_view.ts";
import { workLeftOf } from "./split_pace.ts";
import type { MemberState } from "./member_state.ts";
import { claimers, freeLanes } from "./offers.ts";

/** A running split the leader may ask to be cut. */
export interface CutCandidate {
  /** Split id. */
  id: string;
  /** Instance of its owner. */
  owner: string;
  /** Estimated work left, in weight units. */
  work: number;
}

/** One ask the leader decided: cut `id` (owned by `owner`) into `parts` pieces. */
export interface CutPlan {
  /** Split id. */
  id: string;
  /** Instance of its owner. */
  owner: string;
  /** Pieces wanted, the kept one included (2 to 17). */
  parts: number;
}

/**
 * Which running splits to ask to be cut, and into how many pieces, for
 * `idle` lanes: each idle lane goes to the candidate whose pieces would be
 * largest (estimated work left / pieces), so the largest remaining piece
 * shrinks first. A piece is never planned below `minWork` (nor a candidate
 * with less work left), nor more than {@linkcode MAX_RESIDUALS} residuals
 * per cut. Pure.
 *
 * @example
 * ```ts
 * import { planCuts } from "./cut_asks.ts";
 * planCuts(3, [{ id: "big", owner: "a", work: 900 }, { id: "small", owner: "b", work: 100 }], 0);
 * // [{ id: "big", owner: "a", parts: 4 }]
 * ```
 */
export function planCuts(idle: number, candidates: readonly CutCandidate[], minWork: number): CutPlan[] {
  if (idle <= 0) return [];
  const pieces = candidates
    .filter((c) => c.work > 0 && Number.isFinite(c.work) && c.work >= minWork)
    .map((c) => ({ c, parts: 1 }));
  for (let lane = 0; lane < idle; lane++) {
    let best: (typeof pieces)[number] | undefined;
    for (const p of pieces) {
      if (p.parts > MAX_RESIDUALS) continue;
      const piece = p.c.work / (p.parts + 1);
      if (minWork > 0 && piece < minWork) continue;
      if (!best || p.c.work / p.parts > best.c.work / best.parts || (p.c.work / p.parts === best.c.work / best.parts && p.c.id < best.c.id)) {
        best = p;
      }
    }
    if (!best) break;
    best.parts++;
  }
  return pieces.filter((p) => p.parts >= 2).map((p) => ({ id: p.c.id, owner: p.c.owner, parts: p.parts }));
}

/** Estimated work left of a split: its weight × the fraction its last estimate says is left (all of it without one). */
export function workLeft(r: SplitRecord): number {
  return workLeftOf(r);
}

/** How much a running split's work left may pass the lanes' even share before it is cut: 10 % more. */
const STRAGGLER_SLACK = 1.1;

/**
 * Lanes that will go idle, predicted: with `lanes` lanes, `free` work not
 * started and the work left of the running splits, every lane could finish
 * at the same time `(free + Σ left) / lanes`; a running split with more
 * left than that (by {@linkcode STRAGGLER_SLACK}) will run on alone while
 * lanes idle. Returns how many more pieces would bring every such split
 * down to the even share. Pure.
 *
 * @example
 * ```ts
 * import { predictIdle } from "./cut_asks.ts";
 * predictIdle(8, 40, [60, 10, 10]); // 3: the even share is 15, and 60 needs 4 pieces
 * ```
 */
export function predictIdle(lanes: number, free: number, left: readonly number[]): number {
  if (lanes <= 0) return 0;
  const even = (free + left.reduce((a, b) => a + b, 0)) / lanes;
  if (!(even > 0)) return 0;
  let extra = 0;
  for (const w of left) if (w > even * STRAGGLER_SLACK) extra += Math.ceil(w / even) - 1;
  return extra;
}

/** What {@linkcode decideCutAsks} reads. */
export interface CutAskInput {
  view: LeaderView;
  states: ReadonlyMap<string, MemberState>;
  now: number;
  /** Every free split is offered or waiting out a backoff. */
  nothingFree: boolean;
  /** Who is told and promised what, the asks to cut among it (read only). */
  tracker: Assignments;
  /** Split id → leader time before which it is not asked again. */
  cooldown: ReadonlyMap<string, number>;
  /** Split id → the number of the last ask of it. */
  asks: ReadonlyMap<string, number>;
  askTimeoutMs: number;
  cooldownMs: number;
  minWork: number;
}

/**
 * The cut asks of one pass: an ask unanswered for `askTimeoutMs` is given
 * up (its split cooling down for `cooldownMs`); then, when nothing is free
 * and no residual waits to be created, the idle lanes not already covered
 * by pending asks go to `planCuts` over the running splits of splittable
 * members (none under revocation, asked, cooling down, or with residuals
 * to create). Pure.
 *
 * @example
 * ```ts ignore
 * const { intents, next } = decideCutAsks(input);
 * ```
 */
export function decideCutAsks(input: CutAskInput): Decision {
  const { view, states, tracker: t, now } = input;
  const intents: LeaderIntent[] = [];
  const givenUp = new Map<string, number>();
  let next = Infinity;
  let expected = 0;
  for (const [id, m] of t.asked) {
    const a = t.of(m).asks.get(id)!;
    const due = a.since + input.askTimeoutMs;
    if (now >= due) {
      givenUp.set(id, now + input.cooldownMs);
      intents.push({ kind: "giveUp", member: m, id, until: now + input.cooldownMs });
    } else {
      next = Math.min(next, due);
      expected += a.parts - 1;
    }
  }
  if (view.pendingResiduals.size > 0) return { intents, next };
  // Only splittable members' splits are cut: none, nothing to decide.
  const cutters = [...states.values()].filter((m) => !m.draining && view.members.get(m.instance)?.record.splittable === true);
  if (cutters.length === 0) return { intents, next };
  // Lanes idle now (once every free split is dealt), or that will be before
  // the running splits with the most work left end: asked before the lanes
  // go idle, into as many pieces as lanes will be, by a fresh estimate.
  let lanes = 0, idleNow = 0;
  for (const m of claimers(states)) {
    lanes += m.maxInFlight;
    idleNow += Math.max(0, freeLanes(view, t, m) - t.of(m).plain);
  }
  let running = 0;
  const left: number[] = [];
  for (const [k, ids] of view.byOwner) {
    running += view.loadBy.get(k) ?? 0;
    for (const id of ids) left.push(view.workLeft(id, now));
  }
  const idle = Math.max(input.nothingFree ? idleNow : 0, predictIdle(lanes, Math.max(0, view.runnableWeight - running), left)) - expected;
  if (idle <= 0) return { intents, next };
  const candidates: CutCandidate[] = [];
  for (const m of cutters) {
    const { revokes, asks } = t.of(m);
    for (const id of view.byOwner.get(m.key) ?? []) {
      if (revokes.has(id) || (asks.has(id) && !givenUp.has(id))) continue;
      if ((givenUp.get(id) ?? input.cooldown.get(id) ?? 0) > now) continue;
      // Residuals still to create first (those created stay listed until the owner's next split write).
      const r = view.splits.get(id)!.record;
      if (r.residuals?.some((x) => !view.splits.has(x.id))) continue;
      candidates.push({ id, owner: m.instance, work: view.workLeft(id, now) });
    }
  }
  for (const c of planCuts(idle, candidates, input.minWork)) {
    const member = states.get(c.owner)!;
    const r = view.splits.get(c.id)!.record;
    const ask = { epoch: r.epoch, parts: c.parts, ask: (input.asks.get(c.id) ?? 0) + 1, since: now, cuts: r.cuts ?? 0 };
    intents.push({ kind: "ask", member, id: c.id, ask });
    next = Math.min(next, now + input.askTimeoutMs);
  }
  return { intents, next };
}

/**
 * Split `id` changed to `next`: an ask of it is answered once it was cut
 * (a higher cut count), or overtaken once it moved or ended. Pure.
 *
 * @example
 * ```ts ignore
 * applyIntents(decideAnswered(tracker, id, record), appliers);
 * ```
 */
export function decideAnswered(t: Assignments, id: string, next: SplitRecord | undefined): LeaderIntent[] {
  const pending = t.askOf(id);
  if (!pending) return [];
  const { member: m, ask: a } = pending;
  const o = next?.owner;
  const same = next?.status === "runnable" && next.epoch === a.epoch && o?.instance === m.instance && o.session === m.session;
  return !same || (next!.cuts ?? 0) > a.cuts ? [{ kind: "answered", member: m, id }] : [];
}

/** Most residual creations the leader has in flight. */
const CREATE_WAVE = 64;

/**
 * The leader's asks to cut running splits applied (the asks themselves are
 * the tracker's: who was asked to cut what), what it remembers of past
 * asks (their numbers, the cooldown of those given up), and its creation
 * of the residuals.
 */
export class CutAsks {
  readonly #core: Core;
  readonly #view: LeaderView;
  readonly #states: ReadonlyMap<string, MemberState>;
  readonly #tracker: AssignmentTracker;
  /** Split id → leader time before which it is not asked again. */
  readonly #cooldown = new Map<string, number>();
  /** Split id → the number of the last ask of it. */
  readonly #asked = new Map<string, number>();
  readonly #creating = new Set<string>();

  constructor(core: Core, view: LeaderView, states: ReadonlyMap<string, MemberState>, tracker: AssignmentTracker) {
    this.#core = core;
    this.#view = view;
    this.#states = states;
    this.#tracker = tracker;
  }

  /**
   * One pass: creates pending residuals, then applies the asks decided (see
   * {@linkcode decideCutAsks}; the asks of members gone went with them).
   * `nothingFree`: every free split is offered or waiting out a backoff.
   * Returns when the next ask times out.
   */
  cycle(now: number, nothingFree: boolean, apply: (intents: LeaderIntent[]) => void): number {
    // Creating a pending residual changes nothing a decision reads until it lands.
    this.#createPending();
    const { timings, config } = this.#core;
    const d = decideCutAsks({
      view: this.#view,
      states: this.#states,
      now,
      nothingFree,
      tracker: this.#tracker,
      cooldown: this.#cooldown,
      asks: this.#asked,
      askTimeoutMs: timings.cutAskTimeoutMs,
      cooldownMs: timings.cutCooldownMs,
      minWork: config.cutMinWork,
    });
    apply(d.intents);
    if (this.#cooldown.size > 4 * this.#view.byOwner.size + 256) {
      for (const [id, until] of this.#cooldown) if (until <= now) this.#cooldown.delete(id);
    }
    return d.next;
  }

  /** Applies an ask: listed for the owner, counted, timed. */
  ask({ member: m, id, ask }: AskIntent): void {
    this.#asked.set(id, ask.ask);
    this.#tracker.ask(m, id, ask);
    this.#core.stats.cuts.asked++;
    this.#core.log("debug", "Asked for a cut", { split: id, owner: m.instance, parts: ask.parts });
  }

  /** Applies giving up an unanswered ask: withdrawn, and its split cools down. */
  giveUp({ member: m, id, until }: GiveUpIntent): void {
    this.#tracker.unask(m, id);
    this.#cooldown.set(id, until);
  }

  /** Applies an ask answered or overtaken (see {@linkcode decideAnswered}). */
  answered({ member: m, id }: AnsweredIntent): void {
    this.#tracker.unask(m, id);
  }

  /** Creates the residuals landed cuts list whose records are not in the view (if absent: the owner may be first). */
  #createPending(): void {
    const { splits, log } = this.#core;
    for (const [id, p] of this.#view.pendingResiduals) {
      if (this.#creating.size >= CREATE_WAVE) return;
      if (this.#creating.has(id)) continue;
      this.#creating.add(id);
      splits.create(id, residualRecord(p.parent, this.#view.splits.get(p.parent)?.record, p.residual), "residual")
        .then(async (w) => {
          if (w.ok) return;
          this.#view.learn(await splits.entry(id)); // the owner was first: apply it now rather than at its echo
        })
        .catch((e) => log("warn", "Creating a residual failed; retrying on the next pass", { split: p.parent, residual: id, error: String(e) }))
        .finally(() => {
          this.#creating.delete(id);
          this.#core.schedule();
        });
    }
  }
}
