/**
 * The place of each split in the dealing order among equal weights (the
 * leader's view gives it): the planner's order for a plan's splits, ranked
 * before they are seeded, and after those for a split first seen otherwise.
 * A rank given to a split not in the table yet (a plan's, before its page
 * lands) waits here until its record comes in.
 *
 * @module
 */
import type { SplitTable } from "./split_table.ts";

/** Ranks of splits in the dealing order (see the module doc). */
export class DealingRanks {
  readonly #splits: SplitTable;
  /** Ranks given to splits not in the table yet. */
  readonly #pending = new Map<string, number>();
  #next = 0;

  constructor(splits: SplitTable) {
    this.#splits = splits;
  }

  /** The rank of `id`, given on first call. */
  rank(id: string): number {
    let r = this.#splits.rank(id) ?? this.#pending.get(id);
    if (r !== undefined) return r;
    r = this.#next++;
    if (this.#splits.has(id)) this.#splits.setRank(id, r);
    else this.#pending.set(id, r);
    return r;
  }

  /** `id`'s record came into the table: it takes the rank it was given before, if any. */
  adopt(id: string): void {
    const pending = this.#pending.get(id);
    if (pending === undefined) return;
    this.#splits.setRank(id, pending);
    this.#pending.delete(id);
  }
}
