/**
 * The leader's view of the whole job: every split and member record, fed by
 * its `split.` and `member.` watches (and by its own writes, ahead of their
 * echo), with the indexes assignment needs kept up to date per event — no
 * decision ever scans every split.
 *
 * @module
 */
import {
  decodeRecord,
  type MemberRecord,
  MemberRecordSchema,
  type Residual,
  type SplitRecord,
  SplitRecordSchema,
  type SplitStatus,
} from "../../records.ts";
import { InvalidRecordError } from "../../errors.ts";
import { keys } from "../../store/keys.ts";
import type { StoreEntry } from "../../store/store.ts";
import type { WatchEvent } from "../../store/store.ts";
import { SplitTable } from "./split_table.ts";
import { CompletionWindow } from "./completion_window.ts";
import type { Versioned } from "../versioned.ts";
import { SplitPace } from "./split_pace.ts";
import { type SplitChange, splitChange } from "./split_change.ts";
import { OwnerLoads, ownerKey } from "./owner_loads.ts";
import { DealingRanks } from "./dealing_ranks.ts";

export { ownerKey, parseOwnerKey } from "./owner_loads.ts";

/** Told after every change of a split record (`prev`/`next` undefined when absent or unreadable), with what changed. */
export type SplitListener = (
  id: string,
  prev: SplitRecord | undefined,
  next: Versioned<SplitRecord> | undefined,
  change: SplitChange,
) => void;

/** Full records the view keeps of the splits that changed last (their grants and offers carry them inline). */
export const RECENT_RECORDS = 4096;

/** Told after every change of a member record. */
export type MemberListener = (instance: string, prev: MemberRecord | undefined, next: Versioned<MemberRecord> | undefined) => void;

/** The leader's view of a job's bucket. */
export class LeaderView {
  /** Split records by id, compact: what decisions read of each (see {@linkcode SplitTable}). */
  readonly splits: SplitTable = new SplitTable();
  /** Member records by instance. */
  readonly members: Map<string, Versioned<MemberRecord>> = new Map();
  /** Unreadable records: key → message. */
  readonly invalid: Map<string, string> = new Map();
  /** Runnable splits with no owner. */
  readonly free: Set<string> = new Set();
  /** Quarantined splits (indexed: `/status` lists them on every check). */
  readonly quarantined: Set<string> = new Set();
  /** What each owner runs: its splits, their weight, since when (see {@linkcode OwnerLoads}). */
  readonly #owners: OwnerLoads;
  /** Runnable owned splits by {@linkcode ownerKey}. */
  readonly byOwner: ReadonlyMap<string, Set<string>>;
  /** Runnable weight held by {@linkcode ownerKey}. */
  readonly loadBy: ReadonlyMap<string, number>;
  /** Split counts by status. */
  readonly counts: { runnable: number; completed: number; quarantined: number; cancelled: number } = {
    runnable: 0,
    completed: 0,
    quarantined: 0,
    cancelled: 0,
  };
  /** Total weight of runnable splits. */
  runnableWeight = 0;
  /** Told of every split that becomes free (the dealing order, kept by the assignment tracker). */
  readonly #freed: ((id: string) => void)[] = [];
  /** Total weight of the splits of each status (what the beat publishes: `JobCounts.weight`). */
  readonly weightBy: Record<SplitStatus, number> = { runnable: 0, completed: 0, quarantined: 0, cancelled: 0 };
  /** Completions by the times in their records, for the rate the beat publishes (`JobCounts.rate`). */
  readonly completions: CompletionWindow = new CompletionWindow();
  /**
   * The full records of the splits that changed last (at most
   * {@linkcode RECENT_RECORDS}, oldest dropped first): the ones a grant or an
   * offer is about to carry (a release to a successor, a freed split) go
   * inline, so their member starts or claims them without reading them.
   */
  readonly #recent = new Map<string, Versioned<SplitRecord>>();
  /** Places in the dealing order among equal weights (see {@linkcode DealingRanks}). */
  readonly #ranks = new DealingRanks(this.splits);
  /**
   * Residuals a split record lists whose own record is not in the view yet
   * (cut from a running split; see cuts.ts): the leader creates them, and
   * no outcome is decided while any is missing.
   */
  readonly pendingResiduals: Map<string, { parent: string; residual: Residual }> = new Map();
  /** Split records cut from running ones (residuals). */
  cut = 0;
  /**
   * How long a split's last tenancy ran before it completed, on average over
   * the recent completions (an exponential average; `undefined` before the
   * first): how much work a lane gets through while no leader deals.
   */
  splitMs: number | undefined;
  /** Splits whose record lists residuals (a removed split is looked up only among them). */
  readonly #listing = new Set<string>();
  /** Free splits whose last owner died (their next claim is a takeover, for the claimer's log). */
  readonly orphaned: Set<string> = new Set();
  #resync = new Map<string, Set<string>>();
  #onSplit: SplitListener;
  #onMember: MemberListener;
  readonly #now: () => number;
  /** How fast the running splits' work drops, from their owners' beats. */
  readonly #pace: SplitPace;

  /**
   * Creates an empty view that tells `onSplit` and `onMember` about every
   * change; `now` (the leader's clock) dates progress estimates, so the work
   * left of a running split is extrapolated to now (see {@linkcode LeaderView.workLeft}).
   */
  constructor(onSplit: SplitListener, onMember: MemberListener, now: () => number = () => 0) {
    this.#onSplit = onSplit;
    this.#onMember = onMember;
    this.#now = now;
    this.#pace = new SplitPace(now);
    this.#owners = new OwnerLoads(now);
    this.byOwner = this.#owners.byOwner;
    this.loadBy = this.#owners.loadBy;
  }

  /**
   * Work left of split `id` at `now`, in weight units: its weight × the
   * fraction its last estimate leaves, less what its owner got through since
   * at the pace its estimates fell (all of its weight without an estimate).
   * A split ranked by a stale estimate was asked to be cut at its very end.
   */
  workLeft(id: string, now: number): number {
    const r = this.splits.get(id)?.record;
    return r ? this.#pace.workLeft(id, r, now) : 0;
  }

  /**
   * Notes the estimates a member's heartbeat carries for the splits it runs
   * (`MemberRecord.est`): progress commits go to records no leader watches,
   * so the beat is where the cut ranking learns how far each split is.
   */
  paceFromBeat(instance: string, session: string, est: readonly [string, number, number][] | undefined): void {
    if (!est) return;
    for (const [id, left, total] of est) {
      const o = this.splits.get(id)?.record.owner;
      if (o?.instance === instance && o.session === session) this.#pace.note(id, this.splits.get(id)?.record, { left, total });
    }
  }

  /**
   * The place of split `id` in the dealing order among equal weights:
   * given on first call (the planner ranks a plan's splits in its order
   * before seeding them; a split first seen otherwise ranks after those).
   */
  rank(id: string): number {
    return this.#ranks.rank(id);
  }

  /**
   * Tells `f` of every split that becomes free from now on (a record
   * indexed runnable with no owner), once its place in the dealing order is
   * given: the assignment tracker keeps the dealing order from these.
   */
  onFreed(f: (id: string) => void): void {
    this.#freed.push(f);
  }

  /** Applies one event of the watch over `filter` (`split.` or `member.`). */
  apply(filter: string, ev: WatchEvent): void {
    switch (ev.type) {
      case "reset":
        // Split keys seen in the new snapshot are marked in the table (a bit a split), member keys in a set:
        // a new leader's first snapshot of a million split records kept a million key strings.
        if (filter === keys.splitPrefix) this.splits.unmarkAll();
        this.#resync.set(filter, new Set());
        return;
      case "ready": {
        const seen = this.#resync.get(filter);
        if (!seen) return;
        this.#resync.delete(filter);
        // What the snapshot did not bring is gone. A planned split not dealt yet has no record to see
        // (revision 0): it stays. The ids gone are collected first (removing while iterating the table
        // would skip some), and only those: no record is built for the others.
        const gone = filter === keys.splitPrefix
          ? this.splits.unmarked().map(keys.split)
          : [...this.members.keys()].map(keys.member).filter((k) => !seen.has(k));
        for (const key of gone) this.#remove(key);
        return;
      }
      case "put":
        this.put(ev.key, ev.value, ev.revision);
        if (!this.#resync.has(filter)) return;
        if (filter === keys.splitPrefix) this.splits.mark(ev.key.slice(keys.splitPrefix.length));
        else this.#resync.get(filter)!.add(ev.key);
        return;
      case "delete":
        this.#remove(ev.key, ev.revision);
        return;
    }
  }

  /**
   * Catches the view up with a record read straight from the store — after
   * a lost compare-and-swap, or before a judgment that must not rest on a
   * lagging watch — applied as the watch would apply it (a newer revision
   * only; `undefined`, nothing read, changes nothing). Without it the next
   * pass decides on the same stale view and retries the same losing write
   * at once. Every such re-read of the leader goes through here.
   */
  learn(e: StoreEntry | undefined): void {
    if (e) this.put(e.key, e.value, e.revision);
  }

  /** Applies an entry (from a watch or a read); an older revision than the one held is ignored. */
  put(key: string, value: string, revision: number): void {
    if (key.startsWith(keys.splitPrefix)) {
      const id = key.slice(keys.splitPrefix.length);
      const cur = this.splits.revision(id); // no record built for an event that changes nothing
      if (cur !== undefined && cur >= revision) return;
      const rec = this.#decode(key, value, SplitRecordSchema);
      if (rec) this.setSplit(id, { record: rec, revision });
      else if (cur !== undefined) this.setSplit(id, undefined);
    } else if (key.startsWith(keys.memberPrefix)) {
      const instance = key.slice(keys.memberPrefix.length);
      const cur = this.members.get(instance);
      if (cur && cur.revision >= revision) return;
      const rec = this.#decode(key, value, MemberRecordSchema);
      const next = rec ? { record: rec, revision } : undefined;
      if (next) this.members.set(instance, next);
      else this.members.delete(instance);
      this.#onMember(instance, cur?.record, next);
    }
  }

  #decode<T>(key: string, value: string, schema: Parameters<typeof decodeRecord<T>>[2]): T | undefined {
    try {
      const r = decodeRecord(key, value, schema);
      this.invalid.delete(key);
      return r;
    } catch (e) {
      if (!(e instanceof InvalidRecordError)) throw e;
      this.invalid.set(key, e.message);
      return undefined;
    }
  }

  /**
   * Removes `key`, unless the view holds a newer revision of it than the
   * delete (`revision`): a lagging watch can deliver a member's old delete
   * after a read brought in the record of its restarted successor.
   */
  #remove(key: string, revision = Infinity): void {
    if (key.startsWith(keys.splitPrefix)) {
      const id = key.slice(keys.splitPrefix.length);
      if ((this.splits.get(id)?.revision ?? 0) > revision) return;
      this.invalid.delete(key);
      if (this.splits.has(id)) this.setSplit(id, undefined);
    } else if (key.startsWith(keys.memberPrefix)) {
      const instance = key.slice(keys.memberPrefix.length);
      const cur = this.members.get(instance);
      if (cur && cur.revision > revision) return;
      this.invalid.delete(key);
      if (!cur) return;
      this.members.delete(instance);
      this.#onMember(instance, cur.record, undefined);
    }
  }

  /**
   * A planned split from a page of the plan, not dealt yet: in the view at
   * revision 0 (free, offered like any free split; its claim creates its
   * record, which then replaces this), unless its record is in already.
   */
  plan(id: string, record: SplitRecord, page: number): void {
    if (!this.splits.has(id)) this.setSplit(id, { record, revision: 0 }, page);
  }

  /** Applies a split record this leader just wrote (ahead of its watch echo; an older revision is ignored). */
  applyOwn(id: string, record: SplitRecord, revision: number): void {
    const cur = this.splits.get(id);
    if (cur && cur.revision >= revision) return;
    this.invalid.delete(keys.split(id));
    this.setSplit(id, { record, revision });
  }

  /** The full record of `id` at `revision`, when it is one of the records that changed last (see `#recent`). */
  full(id: string, revision: number): SplitRecord | undefined {
    const e = this.#recent.get(id);
    return e && e.revision === revision ? e.record : undefined;
  }

  /** Sets (or removes) a split record and updates every index. */
  setSplit(id: string, next: Versioned<SplitRecord> | undefined, page = -1): void {
    this.#recent.delete(id);
    if (next && next.revision > 0) {
      this.#recent.set(id, next);
      if (this.#recent.size > RECENT_RECORDS) this.#recent.delete(this.#recent.keys().next().value!);
    }
    const prev = this.splits.get(id);
    const change = splitChange(prev?.record, next?.record);
    if (prev && next && change === "detail") {
      // Nothing a decision reads changed: no index moves.
      this.splits.set(id, next, page);
      this.#onSplit(id, prev.record, next, change);
      return;
    }
    if (prev) this.#unindex(id, prev.record);
    if (next) {
      this.splits.set(id, next, page);
      this.#ranks.adopt(id);
      this.#index(id, next.record);
      this.#pace.forget(id); // a new tenancy (or none): its pace starts over
      const r = next.record, p = prev?.record;
      // Freed by a takeover (an attempt charged, nobody named): its claim is a takeover.
      if (!r.owner && r.status === "runnable" && p?.owner && r.attempts > p.attempts && r.epoch > p.epoch) this.orphaned.add(id);
    } else {
      this.splits.delete(id);
      this.#pace.forget(id);
      // A residual whose record is gone again (an operator's delete) is pending again.
      for (const pid of this.#listing) {
        const x = this.splits.get(pid)?.record.residuals?.find((r) => r.id === id);
        if (x) this.pendingResiduals.set(id, { parent: pid, residual: x });
      }
    }
    this.#onSplit(id, prev?.record, next, change);
  }

  #index(id: string, r: SplitRecord): void {
    if (r.parent !== undefined) this.cut++;
    if (r.residuals?.length) this.#listing.add(id);
    this.pendingResiduals.delete(id);
    if (r.residuals) for (const x of r.residuals) if (!this.splits.has(x.id)) this.pendingResiduals.set(x.id, { parent: id, residual: x });
    this.counts[r.status]++;
    this.weightBy[r.status] += r.weight;
    this.completions.saw(r);
    if (r.status === "quarantined") this.quarantined.add(id);
    if (r.status === "completed") this.#timeCompletion(r);
    if (r.status !== "runnable") return;
    this.runnableWeight += r.weight;
    if (!r.owner) {
      this.free.add(id);
      this.rank(id); // its place among equal weights is given when it is first free
      for (const f of this.#freed) f(id);
      return;
    }
    this.#owners.add(ownerKey(r.owner.instance, r.owner.session), id, r.weight);
  }

  /** Folds a completed split's last tenancy into {@linkcode LeaderView.splitMs}. */
  #timeCompletion(r: SplitRecord): void {
    const t = r.tenancies?.at(-1);
    if (t?.to === undefined || t.end !== "completed" || !(t.to >= t.from)) return;
    const ms = t.to - t.from;
    this.splitMs = this.splitMs === undefined ? ms : 0.9 * this.splitMs + 0.1 * ms;
  }

  #unindex(id: string, r: SplitRecord): void {
    if (r.parent !== undefined) this.cut--;
    this.#listing.delete(id);
    if (r.residuals) for (const x of r.residuals) if (this.pendingResiduals.get(x.id)?.parent === id) this.pendingResiduals.delete(x.id);
    this.counts[r.status]--;
    this.weightBy[r.status] -= r.weight;
    if (r.status === "quarantined") this.quarantined.delete(id);
    if (r.status !== "runnable") return;
    this.runnableWeight -= r.weight;
    if (!r.owner) {
      this.free.delete(id);
      this.orphaned.delete(id);
      return;
    }
    this.#owners.remove(ownerKey(r.owner.instance, r.owner.session), id, r.weight);
  }

  /** Splits the owner with this {@linkcode ownerKey} got less than `ms` ago (see {@linkcode OwnerLoads.heldLately}). */
  heldLately(key: string, ms: number): number {
    return this.#owners.heldLately(key, ms);
  }

  /** Splits (count) held by an owner. */
  heldBy(instance: string, session: string): number {
    return this.heldByKey(ownerKey(instance, session));
  }

  /** Splits (count) held by the owner with this {@linkcode ownerKey}. */
  heldByKey(key: string): number {
    return this.#owners.heldByKey(key);
  }

  /** Runnable weight held by an owner. */
  loadOf(instance: string, session: string): number {
    return this.loadOfKey(ownerKey(instance, session));
  }

  /** Runnable weight held by the owner with this {@linkcode ownerKey}. */
  loadOfKey(key: string): number {
    return this.#owners.loadOfKey(key);
  }
}
