/**
 * The order the leader deals free splits in (docs/DESIGN.md, "How a split
 * reaches a worker without races"): heaviest first, equal weights in the
 * planner's order (`LeaderView.rank`); the same splits from the other end
 * (spares are dealt from there); and the offers that are spares, in dealing
 * order (a free lane takes one when it comes first). Part of the
 * {@linkcode AssignmentTracker}, which keeps it with the offers it orders:
 * the view tells it of every split that becomes free, the tracker's draft
 * of every offer taken back to it.
 *
 * The heaps are lazy: an entry may go stale (the split was dealt, claimed
 * or moved on) and is checked when looked at; {@linkcode DealingOrder.prune}
 * drops the stale entries from the tops once a decision has dealt past them.
 *
 * @module
 */
import { MaxHeap } from "../../util/heap.ts";
import type { LeaderView } from "./leader_view.ts";

/** One entry of a dealing order: the split, its weight (negated at the far end) and its place among equals. */
export interface DealingEntry {
  item: string;
  key: number;
  tie: number;
}

/**
 * The dealing order as decisions read it: each order top first, without
 * consuming it (the offer decision deals from these and leaves them as they
 * are; applying its intents moves them).
 *
 * @example
 * ```ts ignore
 * const first = tracker.dealing.front().next().value; // the heaviest free split, maybe stale
 * ```
 */
export interface DealingReads {
  /** Free splits in dealing order (heaviest first). */
  front(): Iterator<DealingEntry>;
  /** Free splits from the other end (lightest, latest first): spares are dealt from here. */
  tail(): Iterator<DealingEntry>;
  /** Offers that are spares, in dealing order. */
  spares(): Iterator<DealingEntry>;
}

/**
 * The leader's dealing order (see the module doc); changed only by its
 * tracker.
 *
 * @example
 * ```ts ignore
 * const order = new DealingOrder(view);
 * order.requeue("split-7"); // free again: back in both orders
 * ```
 */
export class DealingOrder implements DealingReads {
  readonly #view: LeaderView;
  readonly #front = new MaxHeap<string>();
  readonly #tail = new MaxHeap<string>();
  readonly #spares = new MaxHeap<string>();

  constructor(view: LeaderView) {
    this.#view = view;
  }

  front(): Iterator<DealingEntry> {
    return this.#front.ordered();
  }

  tail(): Iterator<DealingEntry> {
    return this.#tail.ordered();
  }

  spares(): Iterator<DealingEntry> {
    return this.#spares.ordered();
  }

  /** Puts a free split in both orders (it became free, came back from an offer, or its backoff ended); one not free is left out. */
  requeue(id: string): void {
    const view = this.#view;
    const w = view.splits.weight(id);
    if (w === undefined || !view.free.has(id)) return;
    const r = view.rank(id);
    this.#front.push(id, w, r);
    this.#tail.push(id, -w, -r);
  }

  /** `id` was offered as a spare (of weight `weight`): a free lane may take it when it comes first. */
  spare(id: string, weight: number): void {
    this.#spares.push(id, weight, this.#view.rank(id));
  }

  /**
   * Drops from the tops the entries no deal can take now: free splits not
   * `dealable` (dealt, claimed, gone, or withheld: whoever withholds a
   * split requeues it when it may be offered), spares no longer `spare`.
   * What it leaves is what dealing one offer at a time left on top, so the
   * next decision does not read them again.
   */
  prune(dealable: (id: string) => boolean, spare: (id: string) => boolean): void {
    for (const heap of [this.#front, this.#tail]) {
      for (let top = heap.peek(); top !== undefined && !dealable(top.item); top = heap.peek()) heap.pop();
    }
    const spares = this.#spares;
    for (let top = spares.peek(); top !== undefined && !spare(top.item); top = spares.peek()) spares.pop();
  }
}
