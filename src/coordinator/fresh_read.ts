/**
 * Reads a stale replica cannot pass off as current (docs/DESIGN.md, "Fresh
 * reads"). A store that serves `get` from a replica (a read replica, a
 * follower, a cache in front) may answer with a value a key had some
 * revisions ago, or "absent" from before it existed. It never answers with
 * a revision the key has not reached, and revisions only grow: an answer
 * older than a revision already known for the key — one our own write
 * landed at, one a watch delivered, one a lost compare-and-swap named (the
 * key has moved past it) — is stale, whatever it says. A decision that acts
 * on a read names such a floor and reads again until the answer reaches
 * it. Nothing here is load-bearing for safety (the epoch CAS is): it keeps
 * stale answers from costing liveness.
 *
 * @module
 */
import type { StoreEntry } from "../store/store.ts";
import type { Clock } from "./types.ts";

/** The answer of {@linkcode readAtLeast}. */
export interface FloorRead {
  /** The last answer (the record, or `undefined`: absent). */
  entry: StoreEntry | undefined;
  /** Whether it reached the floor: it is at least as new as what was already known. */
  fresh: boolean;
  /** Reads made (more than one: the store answered from before the floor at least once). */
  reads: number;
}

/** How {@linkcode readAtLeast} waits between reads and for how long in all. */
export interface FloorWait {
  clock: Clock;
  /** Longest time spent reading again (the store's op timeout): then the last answer is returned, not fresh. */
  budgetMs: number;
}

/**
 * Reads until the answer is at revision `floor` or later (`absent` says
 * whether an answer "absent" counts as fresh: it does for a key that may
 * have been deleted since, it does not for one known to exist; with a
 * floor of 0 nothing is known, and any answer is fresh). The first
 * read again goes out at once, later ones after 1, 2, 4, ... ms (at most a
 * tenth of the budget), until the budget is spent; on a store whose reads
 * are never stale the first answer is fresh, and nothing is read again.
 * Store errors propagate.
 *
 * @example
 * ```ts ignore
 * // After a compare-and-swap at revision 40 lost, the record is past 40.
 * const { entry, fresh } = await readAtLeast(() => store.get(key), 41, { clock, budgetMs: 5000 });
 * if (!fresh) return; // the store kept answering from before: decide nothing on it
 * ```
 */
export async function readAtLeast(
  read: () => Promise<StoreEntry | undefined>,
  floor: number,
  wait: FloorWait,
  absent: "fresh" | "stale" = "stale",
): Promise<FloorRead> {
  const reached = (e: StoreEntry | undefined) => floor <= 0 || (e ? e.revision >= floor : absent === "fresh");
  const start = wait.clock.now();
  let entry = await read();
  let reads = 1;
  for (let pause = 0; !reached(entry); pause = Math.min(Math.max(1, pause * 2), Math.max(1, wait.budgetMs / 10))) {
    if (wait.clock.now() - start + pause > wait.budgetMs) return { entry, fresh: false, reads };
    if (pause > 0) await new Promise<void>((r) => wait.clock.setTimeout(r, pause));
    entry = await read();
    reads++;
  }
  return { entry, fresh: true, reads };
}

/**
 * The newer of two answers for one key (a read and a watch's value, say):
 * both are true of their revisions, so the higher one is at least as
 * current; `undefined` only when both are.
 *
 * @example
 * ```ts
 * import { newer } from "./fresh_read.ts";
 * const read = { key: "plan", value: "{}", revision: 7 };
 * const watched = { key: "plan", value: "{}", revision: 9 };
 * console.log(newer(read, watched)?.revision); // 9
 * ```
 */
export function newer<T extends { revision: number }>(a: T | undefined, b: T | undefined): T | undefined {
  if (!a) return b;
  if (!b) return a;
  return b.revision > a.revision ? b : a;
}
