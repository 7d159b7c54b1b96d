/**
 * The leader's intent table (docs/DESIGN.md, "Code map"): one applier per
 * kind of intent, each the one way its kind takes effect — into the
 * tracker's draft the role's pass (or event) has open, or through the part
 * of the role that does its I/O (re-reads, takeover and fence writes).
 *
 * @module
 */
import { type Core, decided } from "../core.ts";
import type { AssignmentTracker } from "./assignment_tracker.ts";
import type { CutAsks } from "./cut_asks.ts";
import type { IntentAppliers } from "./intents.ts";
import type { DeathJudge } from "./judge.ts";
import { applyOffer } from "./offers.ts";
import type { Revocations } from "./revocations.ts";
import type { Takeovers } from "./takeovers.ts";

/** The parts of a leader's role that apply intents. */
export interface ApplierParts {
  core: Core;
  /** Written only while a draft is open: every applier runs inside one. */
  tracker: AssignmentTracker;
  judge: DeathJudge;
  takeovers: Takeovers;
  revocations: Revocations;
  cuts: CutAsks;
}

/**
 * The table of one leader term.
 *
 * @example
 * ```ts ignore
 * const appliers = leaderAppliers({ core, tracker, judge, takeovers, revocations, cuts });
 * tracker.edit(() => applyIntents(intents, appliers));
 * ```
 */
export function leaderAppliers(p: ApplierParts): IntentAppliers {
  const { core, tracker, judge, takeovers, revocations, cuts } = p;
  return {
    reread: (i) => judge.reread(i),
    recheck: (i) => judge.recheck(i),
    gone: (i) => judge.date(i),
    take: (i) => takeovers.take(i.owner, i.ids, i.heir, i.why, i.charge),
    revoke: (i) => revocations.revoke(i),
    name: (i) => revocations.name(i),
    settle: (i) => revocations.settle(i),
    withdraw: (i) => revocations.withdraw(i),
    fence: (i) => revocations.fence(i),
    ask: (i) => cuts.ask(i),
    answered: (i) => cuts.answered(i),
    giveUp: (i) => cuts.giveUp(i),
    offer: (i) => applyOffer(tracker, i),
    unoffer: (i) => applyOffer(tracker, i),
    prune: (i) => applyOffer(tracker, i),
    unofferAll: (i) => {
      if (i.drains) i.member.draining = true;
      tracker.unofferAll(i.member);
    },
    grant: (i) => tracker.grant(i.member, i.id, i.grant),
    forgetGrant: (i) => tracker.forgetGrant(i.member, i.id),
    drop: (i) => tracker.drop(i.member, i.id, i.drop),
    acknowledge: (i) => tracker.acknowledge(i.member, i.seen),
    suspect: (i) => void (i.member.suspect = i.beats),
    resend: (i) => {
      for (const g of i.grants) tracker.grant(i.member, g.id, { epoch: g.epoch });
      decided(core, "debug", "Re-sent grants to a member that may not know all its splits", "grants.resent", { member: i.member.instance, owned: i.owned, held: i.held });
    },
  };
}
