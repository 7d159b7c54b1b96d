/**
 * The directives the leader lists in a member's `assign.<instance>` record
 * besides its offers: grants, revocations, drops and asks to cut.
 *
 * @module
 */
import type { AssignEntry, Owner } from "../../records.ts";

/** A revocation the leader asked for. */
export interface Revoke {
  /** Epoch of the owner's tenancy. */
  epoch: number;
  /** Successor to release to. */
  to?: Owner;
  /** Leader time it was asked. */
  since: number;
  /** Membership signature when it was asked (a balancing move is withdrawn when it changes). */
  sig?: string;
  /** Whether it is a balancing steal (fenced if never answered) rather than a drain. */
  steal: boolean;
}

/** An ask to cut a held split's remaining work (see leader/cut_asks.ts). */
export interface CutAsk {
  /** Epoch of the owner's tenancy. */
  epoch: number;
  /** Pieces wanted, the kept one included. */
  parts: number;
  /** The leader's number of this ask of the split. */
  ask: number;
  /** Leader time it was asked. */
  since: number;
  /** The split's cut count when asked (a higher one answers it). */
  cuts: number;
}

/** A tenancy the member must stop, listed once in its assignment record. */
export interface Drop {
  /** Epoch of the tenancy. */
  epoch: number;
  /** Why: its record was fenced or expired (taken over), or the split was cancelled. */
  reason: "fenced" | "expired" | "cancelled";
}

/** A split opened for a member, listed in its assignment record. */
export interface Grant {
  /** Epoch opened for the member. */
  epoch: number;
  /** Why it was opened, when not a plain grant. */
  why?: AssignEntry["why"];
  /** Revision of the first assignment record that listed it. */
  at?: number;
}
