/**
 * Which free splits to claim, and how long to wait before each (DESIGN §6):
 * fair share by weight over live members, capped by `maxInFlight`, heaviest
 * first, rendezvous-ranked stagger against herds. Pure: no I/O, no clock.
 *
 * @module
 */
import { rendezvousRank } from "../balance/hash.ts";
import type { SplitRecord } from "../records.ts";
import { ownerKey, parseOwnerKey, type Versioned } from "./view.ts";

/** How a split becomes ours. */
export type ClaimKind = "claim" | "takeover" | "reclaim" | "resume";

/** A claim decision. */
export interface ClaimCandidate {
  /** Split id. */
  id: string;
  /** `claim` (free), `takeover` (dead owner: attempt), `reclaim` (our crashed predecessor: attempt), `resume` (ours after a self-fence). */
  kind: ClaimKind;
  /** Split weight. */
  weight: number;
  /** Stagger before trying, in ms (0 for our own or reserved splits). */
  delayMs: number;
}

/** Everything the claim decision reads. */
export interface ClaimInput {
  /** This instance and session. */
  me: { instance: string; session: string };
  /** Job seed for rendezvous ranking. */
  seed: string;
  /** Splits, by id. */
  splits: ReadonlyMap<string, Versioned<SplitRecord>>;
  /** Runnable unowned split ids. */
  unowned: ReadonlySet<string>;
  /** Runnable owned split ids by owner key (instance and session). */
  ownedBy: ReadonlyMap<string, ReadonlySet<string>>;
  /** Runnable weight by owner key. */
  loadBy: ReadonlyMap<string, number>;
  /** Total runnable weight. */
  runnableWeight: number;
  /** Live, non-draining members other than me: instance → {session, maxInFlight}. */
  peers: ReadonlyMap<string, { session: string; maxInFlight: number }>;
  /** Whether an owner (instance and session) is alive, draining members included. */
  ownerAlive: (instance: string, session: string) => boolean;
  /** Members whose splits may be taken over now (dead, past any rebalance delay). */
  takeable: (instance: string) => boolean;
  /** Splits held or being claimed by me, and their total weight. */
  heldCount: number;
  /** Weight held or being claimed by me. */
  heldWeight: number;
  /** Split ids held or being claimed by me. */
  isMine: (id: string) => boolean;
  /**
   * This member's rendezvous score for a split (higher first among equal
   * weights): members prefer different splits, so claims rarely collide, and
   * a member's preferred splits are the ones it ranks first for.
   */
  score: (id: string) => number;
  /** Whether `id` must be skipped (handoff in flight, recently failed claim). */
  skip: (id: string) => boolean;
  /** My lanes. */
  maxInFlight: number;
  /** Per-rank stagger. */
  claimStaggerMs: number;
}

/**
 * Fair share of runnable weight for one of `members` live members.
 *
 * @example
 * ```ts
 * import { fairShareOf } from "@splitlease/splitlease";
 * fairShareOf(8, 2); // 4
 * ```
 */
export function fairShareOf(runnableWeight: number, members: number): number {
  return members > 0 ? runnableWeight / members : runnableWeight;
}

/** Picks this round's claims, heaviest first, within share and lanes. */
export function chooseClaims(input: ClaimInput): ClaimCandidate[] {
  const { me } = input;
  let lanes = input.maxInFlight - input.heldCount;
  if (lanes <= 0) return [];
  const out: ClaimCandidate[] = [];

  // Our own splits first: a restarted process reclaims its predecessor's
  // splits at once, and a worker back from a self-fence resumes its own.
  for (const [key, ids] of input.ownedBy) {
    const owner = parseOwnerKey(key);
    if (owner.instance !== me.instance) continue;
    const kind = owner.session === me.session ? "resume" : "reclaim";
    for (const id of ids) {
      if (lanes <= 0) break;
      if (input.isMine(id) || input.skip(id)) continue;
      out.push({ id, kind, weight: input.splits.get(id)!.record.weight, delayMs: 0 });
      lanes--;
    }
  }

  const share = fairShareOf(input.runnableWeight, input.peers.size + 1);
  let load = input.heldWeight + out.reduce((a, c) => a + c.weight, 0);
  // Peers that could take a free split: a free lane and below share. When
  // none can (they are at share or out of lanes), the share no longer caps
  // us: a free split must not wait for a lane that will never come.
  const below: string[] = [];
  const withLanes: string[] = [];
  for (const [instance, p] of input.peers) {
    const k = ownerKey(instance, p.session);
    if ((input.ownedBy.get(k)?.size ?? 0) >= p.maxInFlight) continue;
    withLanes.push(instance);
    if ((input.loadBy.get(k) ?? 0) < share) below.push(instance);
  }
  const cap = below.length > 0 ? share : Infinity;
  const lanesOf = new Set(withLanes);
  if (lanes <= 0 || load >= cap) return out;

  // Free splits: unowned (respecting live reservations) and those of dead
  // owners. Only the best `lanes` are kept (top-k, no full sort: the free
  // set can hold the whole backlog).
  const best = new TopK(lanes);
  for (const id of input.unowned) {
    if (input.isMine(id) || input.skip(id)) continue;
    const r = input.splits.get(id)!.record;
    const reservedFor = r.reservedFor ?? null;
    // A reservation holds while its member is live and has a lane to take it.
    if (reservedFor !== null && reservedFor !== me.instance && lanesOf.has(reservedFor)) continue;
    best.offer({ id, kind: "claim", weight: r.weight, reserved: reservedFor === me.instance, score: input.score });
  }
  for (const [key, ids] of input.ownedBy) {
    const owner = parseOwnerKey(key);
    if (owner.instance === me.instance) continue;
    if (input.ownerAlive(owner.instance, owner.session)) continue; // alive (draining ones too)
    if (!input.takeable(owner.instance)) continue;
    for (const id of ids) {
      if (input.isMine(id) || input.skip(id)) continue;
      best.offer({ id, kind: "takeover", weight: input.splits.get(id)!.record.weight, reserved: false, score: input.score });
    }
  }
  const free = best.sorted();
  if (free.length === 0) return out;

  // Herd ranking over the members that may claim these splits too.
  const eligible = [me.instance, ...(cap === Infinity ? withLanes : below)];
  for (const f of free) {
    if (lanes <= 0 || load >= cap) break;
    const rank = f.reserved ? 0 : rendezvousRank(f.id, eligible, input.seed).indexOf(me.instance);
    out.push({ id: f.id, kind: f.kind, weight: f.weight, delayMs: rank * input.claimStaggerMs });
    lanes--;
    load += f.weight;
  }
  return out;
}

interface Free {
  id: string;
  kind: ClaimKind;
  weight: number;
  score: (id: string) => number;
  reserved: boolean;
}

/** Reserved first, then heaviest, then our highest rendezvous score: negative when `a` ranks first. */
function rankFree(a: Free, b: Free): number {
  return Number(b.reserved) - Number(a.reserved) || b.weight - a.weight || b.score(b.id) - a.score(a.id) ||
    (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** Keeps the best `k` offers in order; O(n·k) for small k. */
class TopK {
  #k: number;
  #items: Free[] = [];
  constructor(k: number) {
    this.#k = k;
  }
  offer(f: Free): void {
    const items = this.#items;
    if (items.length === this.#k && rankFree(f, items[items.length - 1]) >= 0) return;
    let i = items.length;
    while (i > 0 && rankFree(f, items[i - 1]) < 0) i--;
    items.splice(i, 0, f);
    if (items.length > this.#k) items.pop();
  }
  sorted(): Free[] {
    return this.#items;
  }
}
