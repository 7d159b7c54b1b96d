/**
 * What the leader's decisions return (docs/DESIGN.md, "Code map"): each rule
 * — deaths, takeovers, revocations, cut asks, offers, completion — is a
 * function of the view, the member states, the assignment tracker (read
 * only) and `now` that returns intents, and `LeaderRole` applies them in
 * one place, in the order they were decided, into a draft of the tracker.
 * A decision that makes several choices in one pass (successors for a
 * drain, heirs of a dead member) counts the lanes its earlier choices
 * take, so applying its intents in order gives what deciding them one at
 * a time would.
 *
 * @module
 */
import type { Owner } from "../../records.ts";
import type { CutAsk, Drop, Grant, Revoke } from "./directives.ts";
import type { MemberState } from "./member_state.ts";

/** Re-read the record of a member whose record stopped moving; judged dead if unmoved. */
export interface RereadIntent {
  kind: "reread";
  member: MemberState;
  /** Leader time its lease ran out (the judgment dates the death from it). */
  expiredAt: number;
}

/** A gone member's record may have moved (a split of its moved since its judgment): re-read it. */
export interface RecheckIntent {
  kind: "recheck";
  instance: string;
  session: string;
  /** Its owner key ("instance|session"). */
  ownerKey: string;
}

/** Date the departure of a member whose splits wait out `rebalanceDelayMs`. */
export interface GoneIntent {
  kind: "gone";
  instance: string;
  /** Leader time it is gone from. */
  since: number;
}

/** Take the splits `ids` of a gone owner over: to `heir` (the same instance, restarted) or to whoever `planTakeover` picks. */
export interface TakeIntent {
  kind: "take";
  owner: Owner;
  ids: string[];
  heir: MemberState | undefined;
  why: "restarted" | "gone" | "left";
  /** Whether the move costs an attempt (not when the owner left cleanly). */
  charge: boolean;
}

/** Ask `member` to release `id` (a drain, or a balancing steal). */
export interface RevokeIntent {
  kind: "revoke";
  member: MemberState;
  id: string;
  revoke: Revoke;
}

/** Name `to` as the successor of a drain revocation that has none. */
export interface NameIntent {
  kind: "name";
  member: MemberState;
  id: string;
  to: MemberState;
}

/**
 * A revocation of `id` is settled: its owner let the split go (or lost it),
 * so it is listed no more and its successor stops expecting it;
 * `handoverSeconds`: how long a steal took to reach its thief.
 */
export interface SettleIntent {
  kind: "settle";
  member: MemberState;
  id: string;
  handoverSeconds?: number;
}

/** Withdraw a steal that is no longer wanted (its thief left or drains, or membership changed). */
export interface WithdrawIntent {
  kind: "withdraw";
  member: MemberState;
  id: string;
}

/** The owner never answered a steal: open the next epoch for the thief by CAS. */
export interface FenceIntent {
  kind: "fence";
  member: MemberState;
  id: string;
  revoke: Revoke;
  thief: MemberState;
}

/** Ask `member` to cut the remaining work of `id`. */
export interface AskIntent {
  kind: "ask";
  member: MemberState;
  id: string;
  ask: CutAsk;
}

/** The ask of `id` was answered (the split was cut), or overtaken (it moved or ended): listed no more. */
export interface AnsweredIntent {
  kind: "answered";
  member: MemberState;
  id: string;
}

/** An ask of `id` went unanswered: withdraw it and do not ask again before `until`. */
export interface GiveUpIntent {
  kind: "giveUp";
  member: MemberState;
  id: string;
  until: number;
}

/** Offer `id` (at revision `rev`) to `member`: for a free lane, or as a spare. */
export interface OfferIntent {
  kind: "offer";
  member: MemberState;
  id: string;
  rev: number;
  weight: number;
  spare: boolean;
}

/**
 * Take back `member`'s offer of `id` (trimmed to its free lanes, a spare
 * dealt to another's lane, or a split that moved on); `requeue`: back to
 * the dealing order; `tell`: its record changes (its next write says so).
 */
export interface UnofferIntent {
  kind: "unoffer";
  member: MemberState;
  id: string;
  weight: number;
  requeue: boolean;
  tell: boolean;
}

/**
 * Drop from the tops of the dealing order what no deal can take now
 * (dealt, claimed, gone, or `withheld`), after the offer decision dealt
 * past it: the next decision does not read those entries again.
 */
export interface PruneIntent {
  kind: "prune";
  withheld: (id: string) => boolean;
}

/**
 * Take back every offer of `member`, its record rewritten without them:
 * it starts draining (`drains`: its state says so from now on), or the job
 * was paused.
 */
export interface UnofferAllIntent {
  kind: "unofferAll";
  member: MemberState;
  drains: boolean;
}

/** List a split opened for `member` (at `grant.epoch`) in its next record. */
export interface GrantIntent {
  kind: "grant";
  member: MemberState;
  id: string;
  grant: Grant;
}

/** Stop listing a grant: acknowledged, or the split moved on. */
export interface ForgetGrantIntent {
  kind: "forgetGrant";
  member: MemberState;
  id: string;
}

/** Tell `member` to stop a tenancy it may still run (its split was cancelled). */
export interface DropIntent {
  kind: "drop";
  member: MemberState;
  id: string;
  drop: Drop;
}

/** `member` applied its assignment record at revision `seen`: the grants it listed are known to it. */
export interface AcknowledgeIntent {
  kind: "acknowledge";
  member: MemberState;
  seen: number;
}

/** Consecutive beats on which `member` reported holding fewer splits than the view names it for. */
export interface SuspectIntent {
  kind: "suspect";
  member: MemberState;
  beats: number;
}

/** Grant `member` again the splits it owns but may not know of (anti-entropy: `owned` in the view, `held` by its beat). */
export interface ResendIntent {
  kind: "resend";
  member: MemberState;
  grants: { id: string; epoch: number }[];
  owned: number;
  held: number;
}

/** One decision of the leader's pass, applied by `LeaderRole`. */
export type LeaderIntent =
  | RereadIntent
  | RecheckIntent
  | GoneIntent
  | TakeIntent
  | RevokeIntent
  | NameIntent
  | SettleIntent
  | WithdrawIntent
  | FenceIntent
  | AskIntent
  | AnsweredIntent
  | GiveUpIntent
  | OfferIntent
  | UnofferIntent
  | PruneIntent
  | UnofferAllIntent
  | GrantIntent
  | ForgetGrantIntent
  | DropIntent
  | AcknowledgeIntent
  | SuspectIntent
  | ResendIntent;

/** What a decision returns: its intents, and when it wants the next pass (`Infinity`: on the next event). */
export interface Decision {
  intents: LeaderIntent[];
  next: number;
}

/**
 * Lanes a pass's earlier choices took: successors named and steals
 * withdrawn change a member's `incoming` only when applied, so a decision
 * naming several successors counts its own choices here.
 *
 * @example
 * ```ts ignore
 * const lanes = new LaneLedger();
 * lanes.take(successor); // it is named for one more split
 * lanes.of(successor); // 1
 * ```
 */
export class LaneLedger {
  readonly #taken = new Map<MemberState, number>();

  /** `m` expects `n` more releases (negative: fewer). */
  take(m: MemberState, n = 1): void {
    this.#taken.set(m, (this.#taken.get(m) ?? 0) + n);
  }

  /** Lanes this pass took from `m` so far. */
  of(m: MemberState): number {
    return this.#taken.get(m) ?? 0;
  }
}

/** How each kind of intent is applied: one function per kind. */
export type IntentAppliers = { [K in LeaderIntent["kind"]]: (i: Extract<LeaderIntent, { kind: K }>) => void };

/**
 * Applies intents in the order they were decided, each by its kind's
 * applier. The compiler refuses appliers missing a kind.
 *
 * @example
 * ```ts ignore
 * applyIntents(decideRevocations(input, sig, fenceAfterMs).intents, appliers);
 * ```
 */
export function applyIntents(intents: readonly LeaderIntent[], appliers: IntentAppliers): void {
  for (const i of intents) (appliers[i.kind] as (i: LeaderIntent) => void)(i);
}
