/**
 * When, on our own clock, a revision of the store had certainly landed
 * (docs/DESIGN.md, "A new leader"). Revisions increase in the order writes
 * land, across the whole store: a record at revision r landed before any
 * write of ours at a revision above r, and so before that write's reply
 * reached us. A coordinator notes its own heartbeats here; a new leader
 * dates the member records of its first snapshot by them instead of by its
 * first sighting, so a member that died just before the election — the
 * dead leader above all, whose last beat may postdate its last leader beat
 * — is judged one lease plus at most one beat after its death.
 *
 * @module
 */

/** Most writes remembered: at one heartbeat per `leaseMs/3`, five leases of them. */
const KEPT = 16;

/**
 * Our landed writes: revision and the local time their reply came.
 *
 * @example
 * ```ts
 * import { LandedBy } from "./landed_by.ts";
 * const ours = new LandedBy();
 * ours.note(40, 1000); // our beat landed at revision 40; its reply came at t=1000
 * ours.note(52, 1330);
 * console.log(ours.before(45)); // 1330: revision 45 had landed by then
 * console.log(ours.before(60)); // undefined: nothing of ours landed after it yet
 * ```
 */
export class LandedBy {
  readonly #writes: { revision: number; at: number }[] = [];

  /** A write of ours landed at `revision`; its reply came at `at` (our monotonic clock). */
  note(revision: number, at: number): void {
    const last = this.#writes.at(-1);
    if (last && last.revision >= revision) return;
    this.#writes.push({ revision, at });
    if (this.#writes.length > KEPT) this.#writes.shift();
  }

  /**
   * The earliest time on our clock by which `revision` had landed: the
   * reply of our first write above it. `undefined` when none of the writes
   * we remember is above it.
   */
  before(revision: number): number | undefined {
    for (const w of this.#writes) if (w.revision > revision) return w.at;
    return undefined;
  }
}
