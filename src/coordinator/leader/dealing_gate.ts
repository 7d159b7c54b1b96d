/**
 * The one gate of the leader's dealing (issue 41: pausing a job). While the
 * `plan` record says the job is paused, the leader deals nothing new: no
 * offers (those standing are taken back once, when the gate closes), no
 * seeds granted to idle lanes, no takeover grants (a dead member's splits
 * are freed, charged as always), no successors for drains and no steals
 * (the pending ones are withdrawn), no asks to cut — and decides no outcome.
 * What stays: judging members, fencing owners that never answer, taking
 * over the splits of the dead, telling members of grants already written.
 *
 * The gate is one predicate of the plan record ({@linkcode dealingPaused}),
 * read once per pass by `LeaderRole.reconcile` and consulted where each of
 * those rules decides, so that the rules themselves carry no knowledge of
 * pausing (they may be rewritten freely; this file and the few lines that
 * ask `gate.open` move with them). Being the plan record's, it survives a
 * leader change and a restart of the whole fleet: a new leader reads it
 * before its first pass deals anything.
 *
 * @module
 */
import type { PlanRecord } from "../../records.ts";
import type { Assignments } from "./directives.ts";
import type { LeaderIntent } from "./intents.ts";
import type { MemberState } from "./member_state.ts";

/**
 * Whether the plan record says the job is paused (and not finished: a
 * finished job deals nothing anyway).
 *
 * @example
 * ```ts
 * import { dealingPaused } from "./dealing_gate.ts";
 * dealingPaused({ v: 2, term: 1, finality: "final", generation: 1, planned: 3, paused: { at: 0 } }); // true
 * ```
 */
export function dealingPaused(plan: PlanRecord | undefined): boolean {
  return plan?.paused !== undefined && plan.outcome === undefined;
}

/**
 * The gate, as the leader's pass reads it.
 *
 * @example
 * ```ts ignore
 * if (gate.update(plan) === "closed") withdrawOffersAndSteals();
 * if (gate.open) applyAll(decideOffers(book));
 * ```
 */
export class DealingGate {
  #open = true;

  /** Whether new work may be dealt now. */
  get open(): boolean {
    return this.#open;
  }

  /**
   * Reads the plan record (once per pass); returns `"closed"` on the pass
   * that closes the gate, `"opened"` on the one that opens it again, else
   * `undefined`.
   */
  update(plan: PlanRecord | undefined): "closed" | "opened" | undefined {
    const open = !dealingPaused(plan);
    if (open === this.#open) return undefined;
    this.#open = open;
    return open ? "opened" : "closed";
  }
}

/**
 * What closing the gate takes back, as intents in the order they apply:
 * every member's offers and spares (each record is rewritten without them,
 * so a member whose plan watch lags claims none) and every pending steal
 * (its owner would hand the split to a thief that may not start it). Drain
 * revocations stay: their successor is unnamed by the rules. `offers` and
 * `steals` count what goes. Pure.
 *
 * @example
 * ```ts ignore
 * const { intents, offers, steals } = decideClose(states, tracker);
 * ```
 */
export function decideClose(states: ReadonlyMap<string, MemberState>, t: Assignments): { intents: LeaderIntent[]; offers: number; steals: number } {
  const intents: LeaderIntent[] = [];
  let offers = 0, steals = 0;
  for (const st of states.values()) {
    const d = t.of(st);
    offers += d.offers.size;
    intents.push({ kind: "unofferAll", member: st, drains: false });
    for (const [id, r] of d.revokes) {
      if (!r.steal) continue;
      steals++;
      intents.push({ kind: "withdraw", member: st, id });
    }
  }
  return { intents, offers, steals };
}
