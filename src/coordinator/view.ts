/**
 * A coordinator's local view of its job's bucket, fed by watches, with the
 * indexes the claim path needs kept up to date incrementally (a reconcile
 * never scans every split).
 *
 * @module
 */
import {
  HandoffRecordSchema,
  type HandoffRecord,
  LeaderRecordSchema,
  type LeaderRecord,
  MemberRecordSchema,
  type MemberRecord,
  PlanRecordSchema,
  type PlanRecord,
  safeDecodeRecord,
  SplitRecordSchema,
  type SplitRecord,
} from "../records.ts";
import { keys } from "../store/keys.ts";
import type { WatchEvent } from "../store/store.ts";

/** A decoded record with the revision that wrote it. */
export interface Versioned<T> {
  /** The record. */
  record: T;
  /** Its revision. */
  revision: number;
}

/** What changed when an event was applied (for the caller's bookkeeping). */
export interface Applied {
  /** The key touched. */
  key: string;
  /** Whether the key is now absent (deleted, or unreadable). */
  removed: boolean;
}

/** Index key of an owner: instance and session. */
export function ownerKey(instance: string, session: string): string {
  return instance + " " + session;
}

/** Splits an {@linkcode ownerKey} back into instance and session. */
export function parseOwnerKey(key: string): { instance: string; session: string } {
  const i = key.indexOf(" ");
  return { instance: key.slice(0, i), session: key.slice(i + 1) };
}

/** The local view of a job's bucket. */
export class JobView {
  /** Live member records by instance id. */
  readonly members: Map<string, Versioned<MemberRecord>> = new Map();
  /** Split records by split id. */
  readonly splits: Map<string, Versioned<SplitRecord>> = new Map();
  /** Handoff records by split id. */
  readonly handoffs: Map<string, Versioned<HandoffRecord>> = new Map();
  /** The leader record. */
  leader: Versioned<LeaderRecord> | undefined;
  /** The plan record. */
  plan: Versioned<PlanRecord> | undefined;
  /** Unreadable records: key → message. */
  readonly invalid: Map<string, string> = new Map();

  /** Runnable splits with no owner. */
  readonly unowned: Set<string> = new Set();
  /** Runnable owned splits, by {@linkcode ownerKey}. */
  readonly ownedBy: Map<string, Set<string>> = new Map();
  /** Runnable weight held, by {@linkcode ownerKey}. */
  readonly loadBy: Map<string, number> = new Map();
  /** Split counts by status. */
  readonly statusCounts: { runnable: number; completed: number; quarantined: number } = {
    runnable: 0,
    completed: 0,
    quarantined: 0,
  };
  /** Total weight of runnable splits. */
  runnableWeight = 0;

  #resync = new Map<string, Set<string>>();

  /**
   * Applies one watch event of the watch over `filter`. Returns what changed,
   * or `undefined` for markers.
   */
  apply(filter: string, ev: WatchEvent): Applied | undefined {
    switch (ev.type) {
      case "reset":
        this.#resync.set(filter, new Set());
        return undefined;
      case "ready": {
        const seen = this.#resync.get(filter);
        if (seen) {
          this.#resync.delete(filter);
          for (const key of this.#keysUnder(filter)) if (!seen.has(key)) this.#remove(key);
        }
        return undefined;
      }
      case "put":
        this.#resync.get(filter)?.add(ev.key);
        this.#put(ev.key, ev.value, ev.revision);
        return { key: ev.key, removed: this.invalid.has(ev.key) };
      case "delete":
        this.#remove(ev.key);
        return { key: ev.key, removed: true };
    }
  }

  /** Applies a record this instance just wrote (ahead of its watch echo). */
  applyOwnSplit(id: string, record: SplitRecord, revision: number): void {
    const cur = this.splits.get(id);
    if (cur && cur.revision >= revision) return;
    this.#setSplit(id, { record, revision });
  }

  /** Applies an entry read directly from the store (newer wins). */
  putRaw(key: string, value: string, revision: number): void {
    this.#put(key, value, revision);
  }

  #keysUnder(filter: string): string[] {
    if (filter === keys.leader) return this.leader ? [keys.leader] : [];
    if (filter === keys.plan) return this.plan ? [keys.plan] : [];
    if (filter === keys.memberPrefix) return [...this.members.keys()].map(keys.member);
    if (filter === keys.splitPrefix) return [...this.splits.keys()].map(keys.split);
    if (filter === keys.handoffPrefix) return [...this.handoffs.keys()].map(keys.handoff);
    return [];
  }

  #put(key: string, value: string, revision: number): void {
    if (key === keys.leader) {
      this.#decode(key, value, revision, LeaderRecordSchema, (v) => (this.leader = v));
    } else if (key === keys.plan) {
      this.#decode(key, value, revision, PlanRecordSchema, (v) => (this.plan = v));
    } else if (key.startsWith(keys.memberPrefix)) {
      const id = key.slice(keys.memberPrefix.length);
      this.#decode(key, value, revision, MemberRecordSchema, (v) => this.members.set(id, v));
    } else if (key.startsWith(keys.splitPrefix)) {
      const id = key.slice(keys.splitPrefix.length);
      const cur = this.splits.get(id);
      if (cur && cur.revision > revision) return;
      this.#decode(key, value, revision, SplitRecordSchema, (v) => this.#setSplit(id, v));
    } else if (key.startsWith(keys.handoffPrefix)) {
      const id = key.slice(keys.handoffPrefix.length);
      this.#decode(key, value, revision, HandoffRecordSchema, (v) => this.handoffs.set(id, v));
    }
  }

  #decode<T>(
    key: string,
    value: string,
    revision: number,
    schema: Parameters<typeof safeDecodeRecord<T>>[2],
    set: (v: Versioned<T>) => void,
  ): void {
    const r = safeDecodeRecord(key, value, schema);
    if (r.ok) {
      this.invalid.delete(key);
      set({ record: r.value, revision });
    } else {
      this.#remove(key);
      this.invalid.set(key, r.error.message);
    }
  }

  #remove(key: string): void {
    this.invalid.delete(key);
    if (key === keys.leader) this.leader = undefined;
    else if (key === keys.plan) this.plan = undefined;
    else if (key.startsWith(keys.memberPrefix)) this.members.delete(key.slice(keys.memberPrefix.length));
    else if (key.startsWith(keys.splitPrefix)) this.#setSplit(key.slice(keys.splitPrefix.length), undefined);
    else if (key.startsWith(keys.handoffPrefix)) this.handoffs.delete(key.slice(keys.handoffPrefix.length));
  }

  #setSplit(id: string, next: Versioned<SplitRecord> | undefined): void {
    const prev = this.splits.get(id);
    if (prev) this.#unindex(id, prev.record);
    if (next) {
      this.splits.set(id, next);
      this.#index(id, next.record);
    } else {
      this.splits.delete(id);
    }
  }

  #index(id: string, r: SplitRecord): void {
    this.statusCounts[r.status]++;
    if (r.status !== "runnable") return;
    this.runnableWeight += r.weight;
    if (!r.owner) {
      this.unowned.add(id);
      return;
    }
    const k = ownerKey(r.owner.instance, r.owner.session);
    let set = this.ownedBy.get(k);
    if (!set) this.ownedBy.set(k, (set = new Set()));
    set.add(id);
    this.loadBy.set(k, (this.loadBy.get(k) ?? 0) + r.weight);
  }

  #unindex(id: string, r: SplitRecord): void {
    this.statusCounts[r.status]--;
    if (r.status !== "runnable") return;
    this.runnableWeight -= r.weight;
    if (!r.owner) {
      this.unowned.delete(id);
      return;
    }
    const k = ownerKey(r.owner.instance, r.owner.session);
    const set = this.ownedBy.get(k);
    if (set) {
      set.delete(id);
      if (set.size === 0) this.ownedBy.delete(k);
    }
    const load = (this.loadBy.get(k) ?? 0) - r.weight;
    if (set?.size) this.loadBy.set(k, load);
    else this.loadBy.delete(k);
  }
}
