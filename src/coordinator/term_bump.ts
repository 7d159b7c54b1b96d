/**
 * The two writes of `plan` a leader makes outside its role (docs/DESIGN.md,
 * "Takeover, revocation and leader loss"): the term bump at its election
 * (the leader fence: every record a deposed leader writes carries an older
 * term) and, while it leads, writing an unreadable plan record back.
 *
 * @module
 */
import { encodeRecord, type PlanRecord, PlanRecordSchema, safeDecodeRecord } from "../records.ts";
import { keys } from "../store/keys.ts";
import type { StoreEntry } from "../store/store.ts";
import type { Core } from "./core.ts";
import type { Versioned } from "./versioned.ts";

/** What the term's plan writes read and tell: the member's view of `plan` (its `Follower` is one). */
export interface PlanView {
  /** The highest term seen on any record. */
  readonly maxTerm: number;
  /** The newest readable `plan` record seen, if any. */
  readonly plan: Versioned<PlanRecord> | undefined;
  /** Why each unreadable control record is unreadable, by key. */
  readonly invalid: ReadonlyMap<string, string>;
  /** Applies a record read (our own write, known now) as if watched. */
  applyRead(key: string, entry: StoreEntry): void;
}

/** Whether the election that bumps the term still holds. */
export interface TermGuard {
  /** Still leading (not stopped or deposed meanwhile). */
  leading(): boolean;
  /** The membership still proven (no freeze since: a twin may hold our instance). */
  fresh(): boolean;
}

/**
 * Bumps `plan.term` (the leader fence) through `core`'s store while
 * `term.leading()`; returns the new term and the plan record it wrote (its
 * pages are the published plan), or `undefined` when it gave up (deposed,
 * the membership no longer proven, eight conflicts).
 *
 * @example
 * ```ts ignore
 * const bumped = await bumpTerm(leaderCore, follower, { leading: () => leading, fresh });
 * if (bumped) leaderRecord.term = bumped.term;
 * ```
 */
export async function bumpTerm(core: Core, view: PlanView, term: TermGuard): Promise<{ term: number; plan: Pick<PlanRecord, "pages" | "pageTerms"> } | undefined> {
  const { store } = core;
  for (let i = 0; i < 8 && term.leading(); i++) {
    const cur = await store.get(keys.plan);
    if (!term.fresh()) return undefined; // frozen since the election: a twin may hold our instance now
    const prev = cur ? safeDecodeRecord(keys.plan, cur.value, PlanRecordSchema) : undefined;
    let next: PlanRecord;
    if (prev?.ok) {
      next = { ...prev.value, term: prev.value.term + 1 };
      // A failed plan is retried by every new leader (a restart retries).
      if (next.outcome?.kind === "planFailed") delete next.outcome;
    } else {
      // Absent, or unreadable: start over above every term seen (the plan
      // is planned again; seeding is idempotent).
      next = { v: 2, term: view.maxTerm + 1, finality: "open", generation: 0, planned: 0 };
    }
    const value = encodeRecord(next);
    const r = cur ? await store.update(keys.plan, value, cur.revision) : await store.create(keys.plan, value);
    if (r.ok) {
      if (prev && !prev.ok) core.replaced.note(keys.plan, prev.error.message);
      // Our own term, known now: a later read of `plan` older than it is stale (planning reads past it).
      view.applyRead(keys.plan, { key: keys.plan, value, revision: r.revision });
      return { term: next.term, plan: next };
    }
  }
  return undefined;
}

/**
 * A plan record that turned unreadable while we lead in `term`: write ours
 * back (CAS at its `revision`). Whether it landed (then plan again: the
 * published state may be lost).
 *
 * @example
 * ```ts ignore
 * if (await repairPlan(leaderCore, follower, term, revision)) planning?.schedule(0);
 * ```
 */
export async function repairPlan(core: Core, view: PlanView, term: number, revision: number): Promise<boolean> {
  const f = view;
  const base: PlanRecord = f.plan?.record ?? { v: 2, term: term, finality: "open", generation: 0, planned: 0 };
  const next: PlanRecord = { ...base, term: term };
  const message = f.invalid.get(keys.plan) ?? "unreadable";
  const r = await core.store.update(keys.plan, encodeRecord(next), revision);
  if (r.ok) core.replaced.note(keys.plan, message);
  return r.ok;
}
