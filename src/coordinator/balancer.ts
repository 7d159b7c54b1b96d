/**
 * The leader's side of balancing (DESIGN §8): runs `planMoves` when the view
 * changes (rate-limited), writes `handoff.<split>` records, and withdraws
 * them (guarded delete) once done or no longer wanted; fences an owner that
 * never answers.
 *
 * @module
 */
import { type BalanceSplit, type BalanceView, planMoves } from "../balance/plan_moves.ts";
import { encodeRecord, type HandoffRecord } from "../records.ts";
import { keys } from "../store/keys.ts";
import type { Core } from "./core.ts";
import { observe } from "./stats.ts";
import { fenceRecord } from "./transitions.ts";
import { bump } from "./stats.ts";

interface Pending {
  /** Leader-local time the handoff was first seen (or created). */
  since: number;
  /** Membership/plan signature when it was seen. */
  sig: string;
  /** Whether this leader created it (for handover timing). */
  mine: boolean;
  /** Whether the view has shown it yet (our create's echo can lag its reply). */
  seen: boolean;
  /** The thief. */
  to: string;
}

/** Leader-side steal planner and handoff keeper. */
export class Balancer {
  readonly #core: Core;
  readonly #pending = new Map<string, Pending>();
  #lastRun = -Infinity;
  #lastSig = "";
  #urgent = false;
  #busy = false;

  /** Creates the balancer of a coordinator. */
  constructor(core: Core) {
    this.#core = core;
  }

  /** Time between two `planMoves` runs while nothing settles. */
  get intervalMs(): number {
    return Math.max(20, this.#core.config.leaseMs / 10);
  }

  /**
   * Time between two runs right after a steal settled or membership changed:
   * a newcomer far below its share gets one split per cycle, so cycles follow
   * the handovers instead of a fixed beat.
   */
  get minIntervalMs(): number {
    return Math.max(5, this.#core.config.leaseMs / 100);
  }

  /** Forgets leader-local state (on losing leadership). */
  reset(): void {
    this.#pending.clear();
    this.#lastRun = -Infinity;
  }

  /**
   * One leader cycle: maintain existing handoffs, then (rate-limited) plan
   * new moves. `live` maps live, non-draining members to their session and
   * lanes. Returns when the next cycle is due.
   */
  async cycle(
    now: number,
    term: number,
    live: ReadonlyMap<string, { session: string; maxInFlight: number }>,
  ): Promise<number> {
    if (this.#busy) return now + this.intervalMs;
    this.#busy = true;
    try {
      const sig = signature(live, this.#core.view.plan?.record.generation ?? 0);
      await this.#maintain(now, live, sig);
      if (sig !== this.#lastSig) this.#urgent = true;
      const wait = this.#urgent ? this.minIntervalMs : this.intervalMs;
      if (now - this.#lastRun < wait) return this.#lastRun + wait;
      this.#lastRun = now;
      this.#lastSig = sig;
      this.#urgent = false;
      await this.#plan(now, term, live, sig);
      return now + this.intervalMs;
    } finally {
      this.#busy = false;
    }
  }

  async #maintain(
    now: number,
    live: ReadonlyMap<string, { session: string; maxInFlight: number }>,
    sig: string,
  ): Promise<void> {
    const { view, store, config, stats } = this.#core;
    for (const [id, p] of this.#pending) {
      if (view.handoffs.has(id)) continue;
      // Not in the view: settled (withdrawn or done) once the view had shown it,
      // or still on its way if we created it a moment ago.
      if (p.seen || now - p.since > config.drainDeadlineMs + config.leaseMs) {
        this.#pending.delete(id);
        this.#urgent = true; // a steal settled: the next one may be due
      }
    }
    const work: Promise<unknown>[] = [];
    for (const [id, h] of view.handoffs) {
      let p = this.#pending.get(id);
      if (!p) this.#pending.set(id, (p = { since: now, sig, mine: false, seen: true, to: h.record.to }));
      p.seen = true;
      const s = view.splits.get(id)?.record;
      const withdraw = () => work.push(store.delete(keys.handoff(id), h.revision).catch(() => {}));
      if (!s || s.status !== "runnable") {
        withdraw();
        continue;
      }
      const owner = s.owner;
      if (owner?.instance === h.record.to) {
        if (p.mine) observe(stats.handoverSeconds, (now - p.since) / 1000);
        withdraw(); // done
        continue;
      }
      if (!live.has(h.record.to)) {
        withdraw(); // thief gone: its reservation lapses
        continue;
      }
      if (owner === null) {
        // Released to the thief: it claims at once; give up if it never does.
        if (s.reservedFor !== h.record.to || now - p.since > config.drainDeadlineMs + config.leaseMs) withdraw();
        continue;
      }
      const fromLive = live.get(owner.instance)?.session === owner.session;
      if (owner.instance !== h.record.from.instance || owner.session !== h.record.from.session || !fromLive) {
        withdraw(); // owner changed or died: the normal paths take over
        continue;
      }
      if (p.sig !== sig) {
        withdraw(); // a member joined or left, or the plan changed: re-plan
        continue;
      }
      if (now - p.since > config.drainDeadlineMs + config.leaseMs) {
        // The owner never answered: fence it and hand the split to the thief.
        const e = view.splits.get(id)!;
        const next = fenceRecord(s, h.record.to);
        work.push(
          store.update(keys.split(id), encodeRecord(next), e.revision).then((r) => {
            if (r.ok) {
              view.applyOwnSplit(id, next, r.revision);
              bump(stats.revocations, "fenced");
              this.#core.log("warn", "Fenced an owner that did not answer a revocation", {
                split: id,
                owner: owner.instance,
              });
            }
          }).catch(() => {}),
        );
      }
    }
    await Promise.all(work);
  }

  async #plan(
    now: number,
    term: number,
    live: ReadonlyMap<string, { session: string; maxInFlight: number }>,
    sig: string,
  ): Promise<void> {
    const { view, store, config, clock, log } = this.#core;
    if (live.size < 2) return;
    const splits: BalanceSplit[] = [];
    for (const [id, e] of view.splits) {
      const r = e.record;
      if (r.status !== "runnable") continue;
      const ownerLive = r.owner !== null && live.get(r.owner.instance)?.session === r.owner.session;
      // Our own handoffs count even before the view shows them.
      const to = view.handoffs.get(id)?.record.to ?? this.#pending.get(id)?.to;
      splits.push({
        id,
        weight: r.weight,
        owner: ownerLive ? r.owner!.instance : null,
        status: "runnable",
        inHandoff: to !== undefined,
        handoffTo: to ?? null,
        reservedFor: r.reservedFor ?? null,
      });
    }
    const balanceView: BalanceView = {
      members: [...live].map(([instance, m]) => ({ instance, maxInFlight: m.maxInFlight })),
      splits,
    };
    const moves = planMoves(balanceView, { seed: config.job });
    await Promise.all(moves.map(async (m) => {
      const owner = view.splits.get(m.splitId)?.record.owner;
      if (!owner) return;
      const h: HandoffRecord = { v: 1, from: owner, to: m.to, term, requestedAt: clock.wallNow() };
      const r = await store.create(keys.handoff(m.splitId), encodeRecord(h));
      if (r.ok) {
        this.#pending.set(m.splitId, { since: now, sig, mine: true, seen: view.handoffs.has(m.splitId), to: m.to });
        log("info", "Steal requested", { split: m.splitId, from: m.from, to: m.to });
      }
    }));
  }
}

function signature(live: ReadonlyMap<string, { session: string }>, generation: number): string {
  return [...live].map(([i, m]) => i + ":" + m.session).sort().join(",") + "#" + generation;
}
