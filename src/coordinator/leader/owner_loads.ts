/**
 * What each owner (an instance and its session) runs, as the leader's view
 * indexes it: the runnable splits it holds, their weight, and when each got
 * its owner — the per-member numbers every dealing decision reads (free
 * lanes, balance, prefetch), kept up to date per split change so no
 * decision scans the splits. Apart from `LeaderView` because it is one
 * concept of its own: the view feeds it, the decisions read it.
 *
 * @module
 */

/** Index key of an owner: instance and session. */
export function ownerKey(instance: string, session: string): string {
  return instance + " " + session;
}

/** Splits an {@linkcode ownerKey} back into instance and session. */
export function parseOwnerKey(key: string): { instance: string; session: string } {
  const i = key.indexOf(" ");
  return { instance: key.slice(0, i), session: key.slice(i + 1) };
}

/** The runnable splits each owner holds, their weight, and since when (see the module doc). */
export class OwnerLoads {
  /** Runnable owned splits by {@linkcode ownerKey}. */
  readonly byOwner: Map<string, Set<string>> = new Map();
  /** Runnable weight held by {@linkcode ownerKey}. */
  readonly loadBy: Map<string, number> = new Map();
  /** When (the leader's clock) each owned split got its current owner in this view: how long its lane has run it. */
  readonly #ownedSince = new Map<string, number>();
  readonly #now: () => number;

  constructor(now: () => number) {
    this.#now = now;
  }

  /** Split `id` of `weight` is runnable and held by the owner `key`, from now. */
  add(key: string, id: string, weight: number): void {
    let set = this.byOwner.get(key);
    if (!set) this.byOwner.set(key, (set = new Set()));
    set.add(id);
    this.#ownedSince.set(id, this.#now());
    this.loadBy.set(key, (this.loadBy.get(key) ?? 0) + weight);
  }

  /** Split `id` of `weight` is no longer runnable and held by the owner `key`. */
  remove(key: string, id: string, weight: number): void {
    this.#ownedSince.delete(id);
    const set = this.byOwner.get(key);
    if (set) {
      set.delete(id);
      if (set.size === 0) this.byOwner.delete(key);
    }
    const load = (this.loadBy.get(key) ?? 0) - weight;
    if (set?.size) this.loadBy.set(key, load);
    else this.loadBy.delete(key);
  }

  /**
   * Splits the owner `key` got less than `ms` ago (the leader's clock):
   * lanes running a split that started lately, whose next split is worth
   * prefetching when splits are tiny.
   */
  heldLately(key: string, ms: number): number {
    const ids = this.byOwner.get(key);
    if (!ids) return 0;
    const now = this.#now();
    let n = 0;
    for (const id of ids) if (now - (this.#ownedSince.get(id) ?? now) < ms) n++;
    return n;
  }

  /** Splits (count) held by the owner `key`. */
  heldByKey(key: string): number {
    return this.byOwner.get(key)?.size ?? 0;
  }

  /** Runnable weight held by the owner `key`. */
  loadOfKey(key: string): number {
    return this.loadBy.get(key) ?? 0;
  }
}
