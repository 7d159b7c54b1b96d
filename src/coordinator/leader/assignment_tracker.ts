/**
 * What the leader has promised to whom (docs/DESIGN.md, "How a split
 * reaches a worker without races"), after Flink's `SplitAssignmentTracker`:
 * the offers (free splits reserved for one member each, spares among them),
 * the lanes reserved for splits on their way to a member (a seed or a
 * takeover being written for it, a revocation naming it as successor), and
 * the revocations (who was asked to give up which split, and to whom). It
 * is the one owner of these: decisions read them through
 * {@linkcode MemberState} (`offers`, `spares`, `plain`, `revokes`,
 * `incoming`), and only the tracker changes them — so the bookkeeping that
 * used to be kept in step by hand in three places (the role's offer map,
 * each member's offers, the view's spare heap; the revocations' owners and
 * each member's revokes and expectations) cannot drift.
 *
 * Its invariants, checked by `tests/unit/assignment_tracker_test.ts`: a
 * split is promised to one member at most, and only while it is free; a
 * member's offer count, spare set and offered weight agree with its offers;
 * a revocation naming a successor is expected by that successor exactly
 * once; every lane reservation is released exactly once (a member's go with
 * it when it is forgotten).
 *
 * @module
 */
import type { Owner } from "../../records.ts";
import { MaxHeap } from "../../util/heap.ts";
import type { Revoke } from "./directives.ts";
import type { LeaderView } from "./leader_view.ts";
import { MemberState } from "./member_state.ts";
import type { LaneReservation, MemberPromises } from "./promises.ts";

/** The promises of one member (mutable by the tracker only). */
class Book implements MemberPromises {
  readonly offers = new Map<string, number>();
  readonly spares = new Set<string>();
  offeredWeight = 0;
  readonly revokes = new Map<string, Revoke>();
  /** Splits whose revocation names this member as successor. */
  readonly expected = new Set<string>();
  /** Lanes held for splits being written for it. */
  readonly reserved = new Set<LaneReservation>();

  get plain(): number {
    return this.offers.size - this.spares.size;
  }

  get incoming(): number {
    return this.expected.size + this.reserved.size;
  }

  expects(id: string): boolean {
    return this.expected.has(id);
  }
}

/**
 * The leader's promises of one term.
 *
 * @example
 * ```ts ignore
 * const tracker = new AssignmentTracker(view, states);
 * const m = tracker.member("w1", "s1", 4, false, true);
 * tracker.offer(m, "split-7", 12, 1);
 * console.log(tracker.offeredTo("split-7") === m); // true
 * ```
 */
export class AssignmentTracker {
  readonly #view: LeaderView;
  readonly #states: ReadonlyMap<string, MemberState>;
  readonly #books = new WeakMap<MemberState, Book>();
  /** Every lane reservation held, with the book it is held in. */
  readonly #reservations = new Map<LaneReservation, Book>();
  /** Split id → the member it is offered to. */
  readonly #offeredTo = new Map<string, MemberState>();
  /** Split id → the instance asked to give it up. */
  readonly #revokedFrom = new Map<string, string>();
  /** Offers that are spares, in dealing order (lazy: an entry is checked when looked at). */
  readonly spareOrder: MaxHeap<string> = new MaxHeap();

  /** `states`: the live member sessions by instance (a successor is looked up there). */
  constructor(view: LeaderView, states: ReadonlyMap<string, MemberState>) {
    this.#view = view;
    this.#states = states;
  }

  /** A member state whose promises this tracker keeps. */
  member(instance: string, session: string, maxInFlight: number, draining: boolean, planner: boolean): MemberState {
    const book = new Book();
    const m = new MemberState(instance, session, maxInFlight, draining, planner, book);
    this.#books.set(m, book);
    return m;
  }

  #book(m: MemberState): Book {
    const b = this.#books.get(m);
    if (!b) throw new Error(`Member "${m.instance}" is not one of this tracker's`);
    return b;
  }

  // --- offers ------------------------------------------------------------------

  /** Offers in all. */
  get offered(): number {
    return this.#offeredTo.size;
  }

  /** The member `id` is offered to, if any. */
  offeredTo(id: string): MemberState | undefined {
    return this.#offeredTo.get(id);
  }

  /** Offers `id` (at revision `rev`) to `m`, for a free lane or as a spare. A split is offered to one member at a time. */
  offer(m: MemberState, id: string, rev: number, weight: number, spare = false): void {
    const holder = this.#offeredTo.get(id);
    if (holder !== undefined && holder !== m) throw new Error(`Split "${id}" is offered to "${holder.instance}" already`);
    const b = this.#book(m);
    b.offers.set(id, rev);
    if (spare) b.spares.add(id);
    else b.spares.delete(id);
    b.offeredWeight += weight;
    this.#offeredTo.set(id, m);
    if (spare) this.spareOrder.push(id, weight, this.#view.rank(id));
    m.touch();
  }

  /**
   * Takes back the offer of `id` (claimed, moved, gone, or dealt elsewhere);
   * `requeue` puts it back in the view's dealing order. Returns the member
   * it was offered to.
   */
  unoffer(id: string, weight: number, requeue = false): MemberState | undefined {
    const m = this.#offeredTo.get(id);
    if (!m) return undefined;
    this.#offeredTo.delete(id);
    const b = this.#book(m);
    b.spares.delete(id);
    if (b.offers.delete(id)) {
      b.offeredWeight = Math.max(0, b.offeredWeight - weight);
      if (b.offers.size === 0) b.offeredWeight = 0;
    }
    if (requeue) this.#view.requeue(id);
    return m;
  }

  /** Takes back every offer of `m` (it left, or drains), back to the dealing order. */
  unofferAll(m: MemberState): void {
    const b = this.#book(m);
    for (const id of b.offers.keys()) {
      this.#offeredTo.delete(id);
      this.#view.requeue(id);
    }
    b.offers.clear();
    b.spares.clear();
    b.offeredWeight = 0;
    m.touch();
  }

  // --- lanes on their way ---------------------------------------------------------

  /** Holds a lane of `m` for a split being written for it, until {@linkcode AssignmentTracker.release}. */
  reserve(m: MemberState, why: LaneReservation["why"]): LaneReservation {
    const r: LaneReservation = { instance: m.instance, session: m.session, why };
    const b = this.#book(m);
    b.reserved.add(r);
    this.#reservations.set(r, b);
    return r;
  }

  /**
   * Ends a reservation (its write landed or failed); whether it was held.
   * Once: a second release, or one of a member forgotten meanwhile, changes nothing.
   */
  release(r: LaneReservation): boolean {
    const b = this.#reservations.get(r);
    if (!b) return false;
    this.#reservations.delete(r);
    return b.reserved.delete(r);
  }

  /** Reservations held now (each released exactly once, or ended with its member). */
  get reservations(): number {
    return this.#reservations.size;
  }

  // --- revocations ---------------------------------------------------------------

  /**
   * The live member asked to give `id` up and its revocation, if any. A
   * record of a member that is gone or restarted since is dropped on the way.
   */
  revocationOf(id: string): { member: MemberState; revoke: Revoke } | undefined {
    const inst = this.#revokedFrom.get(id);
    if (inst === undefined) return undefined;
    const m = this.#states.get(inst);
    const r = m && this.#books.get(m)?.revokes.get(id);
    if (!m || !r) {
      this.#revokedFrom.delete(id);
      return undefined;
    }
    return { member: m, revoke: r };
  }

  /** Asks `m` to release `id`; a successor named in it expects the split. */
  revoke(m: MemberState, id: string, r: Revoke): void {
    this.#book(m).revokes.set(id, r);
    this.#revokedFrom.set(id, m.instance);
    this.#successor(r.to)?.expected.add(id);
    m.touch();
  }

  /** Names `to` as the successor of `m`'s revocation of `id` (a drain that had none). */
  nameSuccessor(m: MemberState, id: string, to: MemberState): void {
    const b = this.#book(m);
    const r = b.revokes.get(id);
    if (!r) throw new Error(`Member "${m.instance}" has no revocation of split "${id}" to name a successor for`);
    b.revokes.set(id, { ...r, to: to.owner });
    m.touch();
    this.#book(to).expected.add(id);
  }

  /** The successor of `m`'s revocation of `id` is gone: the drain goes on with none. */
  unnameSuccessor(m: MemberState, id: string): void {
    const b = this.#book(m);
    const r = b.revokes.get(id);
    if (!r?.to) return;
    this.#successor(r.to)?.expected.delete(id);
    const { to: _gone, ...rest } = r;
    b.revokes.set(id, rest);
    m.touch();
  }

  /** Withdraws or settles `m`'s revocation of `id` (its successor stops expecting it); returns it, if there was one. */
  unrevoke(m: MemberState, id: string): Revoke | undefined {
    const b = this.#book(m);
    const r = b.revokes.get(id);
    if (!r) return undefined;
    b.revokes.delete(id);
    this.#revokedFrom.delete(id);
    this.#successor(r.to)?.expected.delete(id);
    m.touch();
    return r;
  }

  /** The book of the live member `owner` names (this session, not a restarted one). */
  #successor(owner: Owner | undefined): Book | undefined {
    const t = owner && this.#states.get(owner.instance);
    return t && t.session === owner!.session ? this.#books.get(t) : undefined;
  }

  // --- members that go ---------------------------------------------------------------

  /**
   * `m` is gone: its offers go back to the dealing order, its lane
   * reservations end (the revocations it is part of are `Revocations`' to
   * settle, through this tracker).
   */
  forget(m: MemberState): void {
    this.unofferAll(m);
    const b = this.#book(m);
    for (const r of b.reserved) this.#reservations.delete(r);
    b.reserved.clear();
  }
}
