/**
 * The writer of one member's `assign.<instance>` record: one write in flight
 * per member, changes committed meanwhile coalesce into the next write, CAS
 * at the revision it last wrote or read. What it writes is rendered from
 * the member's directives as its {@linkcode RecordSource} (the
 * `AssignmentTracker`, their one owner) has committed them; the writer
 * keeps only the record's own state: its revision, its sequence number,
 * whether it has changes not yet written.
 *
 * @module
 */
import { AssignRecordSchema, encodeRecord, safeDecodeRecord } from "../../records.ts";
import { SplitleaseError } from "../../errors.ts";
import { keys } from "../../store/keys.ts";
import type { Core } from "../core.ts";
import type { Drop, Grant } from "./directives.ts";
import type { LeaderView } from "./leader_view.ts";
import type { MemberState } from "./member_state.ts";
import { type AssignListing, buildAssignRecord } from "./assign_build.ts";

/**
 * What a member's record is rendered from, and told what landed: the
 * member's committed directives.
 *
 * @example
 * ```ts ignore
 * const writer = new AssignWriter(member, tracker); // the tracker is the source
 * ```
 */
export interface RecordSource {
  /** The drops of `m` to write, as they are now (taken when a write starts). */
  drops(m: MemberState): [string, Drop][];
  /** The rest of `m`'s record, from its committed directives (no draft may be open). */
  listing(m: MemberState): Omit<AssignListing, "seq">;
  /** A write of `m`'s record landed at `revision`: the `drops` it listed are written, the `listed` grants date from it. */
  landed(m: MemberState, revision: number, drops: readonly [string, Drop][], listed: readonly Grant[]): void;
}

/**
 * Writes one member's assignment record (see the module doc).
 *
 * @example
 * ```ts ignore
 * const w = tracker.writer(member);
 * if (w.dirty) await w.flush(core, view, term, () => stepDown());
 * ```
 */
export class AssignWriter {
  readonly #m: MemberState;
  readonly #source: RecordSource;
  /** Revision of the record, when known (read again when not). */
  rev: number | undefined;
  #seq = 0;
  #dirty = false;
  #writing: Promise<unknown> | undefined;

  constructor(m: MemberState, source: RecordSource) {
    this.#m = m;
    this.#source = source;
  }

  /** Whether the record has changes not yet written. */
  get dirty(): boolean {
    return this.#dirty;
  }

  /** Marks the record as changed (a committed draft changed what it lists). */
  touch(): void {
    this.#dirty = true;
  }

  /**
   * Writes the record if it changed and no write is in flight. `onDeposed`
   * runs when a newer term wrote it (this leader was deposed).
   */
  flush(core: Core, view: LeaderView, term: number, onDeposed: () => void): Promise<boolean> {
    if (!this.#dirty || this.#writing) return Promise.resolve(false);
    this.#dirty = false;
    const p = this.#write(core, view, term, onDeposed);
    this.#writing = p;
    return p;
  }

  /** Resolves once no write is in flight and nothing is left to write (or a write failed). */
  async settle(core: Core, view: LeaderView, term: number, onDeposed: () => void): Promise<void> {
    for (let i = 0; i < 4 && (this.#dirty || this.#writing); i++) {
      if (this.#writing) await this.#writing;
      else if (!(await this.flush(core, view, term, onDeposed)) || this.rev === undefined) return;
    }
  }

  async #write(core: Core, view: LeaderView, term: number, onDeposed: () => void): Promise<boolean> {
    const { store, log } = core;
    const m = this.#m;
    const key = keys.assign(m.instance);
    const drops = this.#source.drops(m);
    let replacing: string | undefined;
    try {
      if (this.rev === undefined) {
        const cur = await store.get(key);
        const read = cur ? safeDecodeRecord(key, cur.value, AssignRecordSchema) : undefined;
        if (read?.ok && read.value.term > term) {
          onDeposed();
          return false;
        }
        // Unreadable: ours to overwrite (CAS at its revision), reported once the write lands.
        if (read && !read.ok) replacing = read.error.message;
        this.rev = cur?.revision ?? 0;
      }
      const listed: Grant[] = [];
      const { record: rec, unlisted } = buildAssignRecord({ ...this.#source.listing(m), seq: ++this.#seq }, view, term, drops, listed);
      const value = encodeRecord(rec);
      const r = this.rev === 0 ? await store.create(key, value) : await store.update(key, value, this.rev);
      if (r.ok) {
        this.rev = r.revision;
        if (replacing !== undefined) core.replaced.note(key, replacing);
        this.#source.landed(m, r.revision, drops, listed);
        if (unlisted) this.#dirty = true; // what did not fit goes out in the next write
        return true;
      }
      this.rev = undefined; // read it again next time (a deposed leader, or our own maybe-landed write)
      this.#dirty = true;
    } catch (e) {
      this.#dirty = true;
      this.rev = undefined;
      if (!(e instanceof SplitleaseError && e.code === "STORE_UNAVAILABLE")) {
        // Not an outage (a bug, a refused value): retried with the next change, not in a loop.
        log("error", "Assignment write failed", { member: m.instance, error: String(e) });
        return false;
      }
      log("warn", "Assignment write failed; retrying", { member: m.instance, error: String(e) });
    } finally {
      this.#writing = undefined;
    }
    return true;
  }
}
