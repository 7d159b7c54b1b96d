/**
 * Who holds what and what was promised to whom (docs/DESIGN.md, "How a
 * split reaches a worker without races"), after Flink's
 * `SplitAssignmentTracker`: the one owner of every directive the leader
 * gives its members — offers (spares among them), grants, drops,
 * revocations, asks to cut —, of the lanes reserved for splits on their way
 * to a member (a seed or a takeover being written for it), of the dealing
 * order, and of the writer of each member's `assign.<instance>` record.
 *
 * Decisions read it (`Assignments` in `directives.ts`: `of(member)`, `offeredTo`,
 * `revocationOf`, `askOf`, `dealing`) and return intents. Applying intents
 * writes into a draft of it ({@linkcode AssignmentTracker.edit}): the
 * decisions after it in the same pass read what the draft holds (each
 * decides on the state the previous one's intents left), and the pass (or
 * the event) commits it, which marks the records it changed to be written.
 * A record is rendered from committed state only: the writer asks for it
 * outside any draft, and `listing` refuses inside one. A write outside a
 * draft throws.
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
import type { AssignmentDraft, CutAsk, Drop, Grant, LaneReservation, MemberDirectives, Revoke } from "./directives.ts";
import { DealingOrder, type DealingReads } from "./dealing_order.ts";
import type { LeaderView } from "./leader_view.ts";
import { MemberState } from "./member_state.ts";
import { AssignWriter, type RecordSource } from "./assign_writer.ts";
import type { AssignListing } from "./assign_build.ts";

/** Everything one member is told and promised (mutable by the tracker only), and the writer of its record. */
class Book implements MemberDirectives {
  readonly offers = new Map<string, number>();
  readonly spares = new Set<string>();
  offeredWeight = 0;
  readonly revokes = new Map<string, Revoke>();
  /** Splits whose revocation names this member as successor. */
  readonly expected = new Set<string>();
  /** Lanes held for splits being written for it. */
  readonly reserved = new Set<LaneReservation>();
  readonly grants = new Map<string, Grant>();
  readonly drops = new Map<string, Drop>();
  readonly asks = new Map<string, CutAsk>();
  readonly writer: AssignWriter;

  constructor(writer: AssignWriter) {
    this.writer = writer;
  }

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
 * The leader's directives and promises of one term (see the module doc).
 *
 * @example
 * ```ts ignore
 * const tracker = new AssignmentTracker(view, states);
 * const m = tracker.member("w1", "s1", 4, false, true);
 * tracker.edit((d) => d.offer(m, "split-7", 12, 1));
 * console.log(tracker.offeredTo("split-7") === m, tracker.writer(m).dirty); // true true
 * ```
 */
export class AssignmentTracker implements AssignmentDraft, RecordSource {
  readonly #view: LeaderView;
  readonly #states: ReadonlyMap<string, MemberState>;
  readonly #books = new WeakMap<MemberState, Book>();
  /** Every lane reservation held, with the book it is held in. */
  readonly #reservations = new Map<LaneReservation, Book>();
  /** Split id → the member it is offered to. */
  readonly #offeredTo = new Map<string, MemberState>();
  /** Split id → the instance asked to give it up. */
  readonly #revokedFrom = new Map<string, string>();
  /** Split id → the member asked to cut it. */
  readonly #askedFrom = new Map<string, MemberState>();
  readonly #dealing: DealingOrder;
  /** Drafts open (an event inside a pass joins the pass's draft). */
  #depth = 0;
  /** Members whose record the open draft changed. */
  readonly #touched = new Set<MemberState>();

  /** `states`: the live member sessions by instance (a successor is looked up there). The view tells it of every split that becomes free. */
  constructor(view: LeaderView, states: ReadonlyMap<string, MemberState>) {
    this.#view = view;
    this.#states = states;
    this.#dealing = new DealingOrder(view);
    for (const id of view.free) this.#dealing.requeue(id);
    view.onFreed((id) => this.#dealing.requeue(id));
  }

  /** A member state whose directives this tracker keeps. */
  member(instance: string, session: string, maxInFlight: number, draining: boolean, planner: boolean): MemberState {
    const m = new MemberState(instance, session, maxInFlight, draining, planner);
    this.#books.set(m, new Book(new AssignWriter(m, this)));
    return m;
  }

  #book(m: MemberState): Book {
    const b = this.#books.get(m);
    if (!b) throw new Error(`Member "${m.instance}" is not one of this tracker's`);
    return b;
  }

  // --- drafts -------------------------------------------------------------------------

  /**
   * Runs `f` over a draft of the tracker and commits it when the outermost
   * draft ends: the records it changed are marked to be written. A draft
   * opened while one is open joins it (an event the pass's own writes
   * cause). `f` must not wait: a draft lives within one synchronous run.
   */
  edit<T>(f: (d: AssignmentDraft) => T): T {
    this.#depth++;
    try {
      return f(this);
    } finally {
      if (--this.#depth === 0) {
        for (const m of this.#touched) this.#book(m).writer.touch();
        this.#touched.clear();
      }
    }
  }

  #writable(): void {
    if (this.#depth === 0) throw new Error("The assignment tracker is written only in a draft (tracker.edit)");
  }

  touch(m: MemberState): void {
    this.#writable();
    this.#touched.add(m);
  }

  // --- reads ----------------------------------------------------------------------------

  of(m: MemberState): MemberDirectives {
    return this.#book(m);
  }

  /** The writer of `m`'s assignment record. */
  writer(m: MemberState): AssignWriter {
    return this.#book(m).writer;
  }

  get offered(): number {
    return this.#offeredTo.size;
  }

  offeredTo(id: string): MemberState | undefined {
    return this.#offeredTo.get(id);
  }

  /** A record of a member that is gone or restarted since is dropped on the way. */
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

  askOf(id: string): { member: MemberState; ask: CutAsk } | undefined {
    const m = this.#askedFrom.get(id);
    const a = m && this.#book(m).asks.get(id);
    if (!m || !a) return void this.#askedFrom.delete(id);
    return { member: m, ask: a };
  }

  get asked(): ReadonlyMap<string, MemberState> {
    return this.#askedFrom;
  }

  get reservations(): number {
    return this.#reservations.size;
  }

  get dealing(): DealingReads {
    return this.#dealing;
  }

  // --- offers and the dealing order -------------------------------------------------------

  offer(m: MemberState, id: string, rev: number, weight: number, spare = false): void {
    this.#writable();
    const holder = this.#offeredTo.get(id);
    if (holder !== undefined && holder !== m) throw new Error(`Split "${id}" is offered to "${holder.instance}" already`);
    const b = this.#book(m);
    b.offers.set(id, rev);
    if (spare) b.spares.add(id);
    else b.spares.delete(id);
    b.offeredWeight += weight;
    this.#offeredTo.set(id, m);
    if (spare) this.#dealing.spare(id, weight);
    this.#touched.add(m);
  }

  unoffer(id: string, weight: number, requeue = false): MemberState | undefined {
    this.#writable();
    const m = this.#offeredTo.get(id);
    if (!m) return undefined;
    this.#offeredTo.delete(id);
    const b = this.#book(m);
    b.spares.delete(id);
    if (b.offers.delete(id)) {
      b.offeredWeight = Math.max(0, b.offeredWeight - weight);
      if (b.offers.size === 0) b.offeredWeight = 0;
    }
    if (requeue) this.#dealing.requeue(id);
    return m;
  }

  unofferAll(m: MemberState): void {
    this.#writable();
    const b = this.#book(m);
    for (const id of b.offers.keys()) {
      this.#offeredTo.delete(id);
      this.#dealing.requeue(id);
    }
    b.offers.clear();
    b.spares.clear();
    b.offeredWeight = 0;
    this.#touched.add(m);
  }

  requeue(id: string): void {
    this.#writable();
    this.#dealing.requeue(id);
  }

  prune(withheld: (id: string) => boolean): void {
    this.#writable();
    const view = this.#view;
    this.#dealing.prune(
      (id) => view.free.has(id) && this.#offeredTo.get(id) === undefined && !withheld(id),
      (id) => {
        const m = this.#offeredTo.get(id);
        return m !== undefined && this.#book(m).spares.has(id);
      },
    );
  }

  // --- lanes on their way -------------------------------------------------------------------

  reserve(m: MemberState, why: LaneReservation["why"]): LaneReservation {
    this.#writable();
    const r: LaneReservation = { instance: m.instance, session: m.session, why };
    const b = this.#book(m);
    b.reserved.add(r);
    this.#reservations.set(r, b);
    return r;
  }

  release(r: LaneReservation): boolean {
    this.#writable();
    const b = this.#reservations.get(r);
    if (!b) return false;
    this.#reservations.delete(r);
    return b.reserved.delete(r);
  }

  // --- revocations ----------------------------------------------------------------------------

  revoke(m: MemberState, id: string, r: Revoke): void {
    this.#writable();
    this.#book(m).revokes.set(id, r);
    this.#revokedFrom.set(id, m.instance);
    this.#successor(r.to)?.expected.add(id);
    this.#touched.add(m);
  }

  nameSuccessor(m: MemberState, id: string, to: MemberState): void {
    this.#writable();
    const b = this.#book(m);
    const r = b.revokes.get(id);
    if (!r) throw new Error(`Member "${m.instance}" has no revocation of split "${id}" to name a successor for`);
    b.revokes.set(id, { ...r, to: to.owner });
    this.#touched.add(m);
    this.#book(to).expected.add(id);
  }

  unnameSuccessor(m: MemberState, id: string): void {
    this.#writable();
    const b = this.#book(m);
    const r = b.revokes.get(id);
    if (!r?.to) return;
    this.#successor(r.to)?.expected.delete(id);
    const { to: _gone, ...rest } = r;
    b.revokes.set(id, rest);
    this.#touched.add(m);
  }

  unrevoke(m: MemberState, id: string): Revoke | undefined {
    this.#writable();
    const b = this.#book(m);
    const r = b.revokes.get(id);
    if (!r) return undefined;
    b.revokes.delete(id);
    this.#revokedFrom.delete(id);
    this.#successor(r.to)?.expected.delete(id);
    this.#touched.add(m);
    return r;
  }

  /** The book of the live member `owner` names (this session, not a restarted one). */
  #successor(owner: Owner | undefined): Book | undefined {
    const t = owner && this.#states.get(owner.instance);
    return t && t.session === owner!.session ? this.#books.get(t) : undefined;
  }

  // --- grants, drops, asks to cut -------------------------------------------------------------

  grant(m: MemberState, id: string, g: Grant): void {
    this.#writable();
    this.#book(m).grants.set(id, g);
    this.#touched.add(m);
  }

  forgetGrant(m: MemberState, id: string): void {
    this.#writable();
    this.#book(m).grants.delete(id);
  }

  acknowledge(m: MemberState, seen: number): void {
    this.#writable();
    const grants = this.#book(m).grants;
    for (const [id, g] of grants) if (g.at !== undefined && g.at <= seen) grants.delete(id);
  }

  drop(m: MemberState, id: string, d: Drop): void {
    this.#writable();
    this.#book(m).drops.set(id, d);
    this.#touched.add(m);
  }

  ask(m: MemberState, id: string, a: CutAsk): void {
    this.#writable();
    this.#book(m).asks.set(id, a);
    this.#askedFrom.set(id, m);
    this.#touched.add(m);
  }

  unask(m: MemberState, id: string): CutAsk | undefined {
    this.#writable();
    const asks = this.#book(m).asks;
    const a = asks.get(id);
    if (!a) return undefined;
    asks.delete(id);
    if (this.#askedFrom.get(id) === m) this.#askedFrom.delete(id);
    this.#touched.add(m);
    return a;
  }

  // --- members that go ----------------------------------------------------------------------

  forget(m: MemberState): void {
    this.unofferAll(m);
    const b = this.#book(m);
    for (const r of b.reserved) this.#reservations.delete(r);
    b.reserved.clear();
    for (const id of b.asks.keys()) if (this.#askedFrom.get(id) === m) this.#askedFrom.delete(id);
  }

  // --- what a record is rendered from (the writer's RecordSource) -----------------------------------

  drops(m: MemberState): [string, Drop][] {
    return [...this.#book(m).drops];
  }

  listing(m: MemberState): Omit<AssignListing, "seq"> {
    if (this.#depth > 0) throw new Error("An assignment record is rendered from committed directives only (no draft open)");
    const b = this.#book(m);
    return { session: m.session, revokes: b.revokes, grants: b.grants, offers: b.offers, spares: b.spares, asks: b.asks };
  }

  landed(m: MemberState, revision: number, drops: readonly [string, Drop][], listed: readonly Grant[]): void {
    const b = this.#book(m);
    for (const g of listed) g.at ??= revision;
    for (const [id, d] of drops) if (b.drops.get(id) === d) b.drops.delete(id);
  }
}
