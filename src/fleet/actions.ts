/**
 * Operator actions on a job's records: requeue quarantined splits, cancel a
 * split, drain a member. Each is a compare-and-swap at the revision just
 * read, retried (after a fresh read) only while the action still applies;
 * a lost race or a record in another state is a result value naming what
 * happened, never an exception. Only outages (`StoreUnavailableError`) and a
 * malformed id (`InvalidKeyError`) throw.
 *
 * Why these writes are safe next to a running fleet (docs/DESIGN.md): every
 * one moves the split's epoch forward (never back: fenced sinks rely on it
 * only growing), so an owner's next write of the split record is fenced (a
 * cancel also fences its progress record, so its next progress commit is); the leader sees the
 * record change and reacts (offers a requeued split, sends the owner of a
 * cancelled one a drop). A member record is written with its own session,
 * so the member adopts it at its next heartbeat and drains itself.
 *
 * @module
 */
import {
  encodeRecord,
  MemberRecordSchema,
  type PageEntry,
  type PageRecord,
  pagedRecord,
  PageRecordSchema,
  PlanRecordSchema,
  type ProgRecord,
  ProgRecordSchema,
  safeDecodeRecord,
  type SplitRecord,
  SplitRecordSchema,
  type SplitStatus,
} from "../records.ts";
import { withTenancy } from "../records/transitions.ts";
import { assertValidId, keys } from "../store/keys.ts";
import type { Store, StoreEntry } from "../store/store.ts";

/** Reads-and-CASes per action before it answers `conflict`. */
export const TRIES = 5;
/** Requeue writes in flight at once for {@linkcode requeueQuarantined}. */
const CONCURRENCY = 16;

/**
 * What {@linkcode requeueSplit} did.
 *
 * @example
 * ```ts
 * import type { RequeueResult } from "@splitlease/splitlease/admin";
 * const ok = (r: RequeueResult) => r.outcome === "requeued";
 * ```
 */
export type RequeueResult =
  | { id: string; outcome: "requeued"; epoch: number; reopened: boolean; message: string }
  | { id: string; outcome: "notQuarantined"; status: SplitStatus; message: string }
  | { id: string; outcome: "notFound" | "unreadable" | "conflict"; message: string };

/**
 * What {@linkcode cancelSplit} did.
 *
 * @example
 * ```ts
 * import type { CancelResult } from "@splitlease/splitlease/admin";
 * const ok = (r: CancelResult) => r.outcome === "cancelled" || r.outcome === "alreadyCancelled";
 * ```
 */
export type CancelResult =
  | {
    id: string;
    outcome: "cancelled";
    epoch: number;
    previous: SplitStatus;
    previousOwner: string | null;
    reopened: boolean;
    message: string;
  }
  | { id: string; outcome: "alreadyCancelled" | "alreadyCompleted" | "notFound" | "unreadable" | "conflict"; message: string };

/**
 * What {@linkcode drainMember} did.
 *
 * @example
 * ```ts
 * import type { DrainMemberResult } from "@splitlease/splitlease/admin";
 * const ok = (r: DrainMemberResult) => r.outcome === "draining" || r.outcome === "alreadyDraining";
 * ```
 */
export type DrainMemberResult =
  | { instance: string; outcome: "draining" | "alreadyDraining"; session: string; message: string }
  | { instance: string; outcome: "notFound" | "unreadable" | "conflict"; message: string };

/** One step of a CAS loop: write `next`, or answer `done` without writing. */
export type Step<R> = { write: string; ok: (revision: number) => R } | { done: R };

/**
 * Reads `key` (or starts from `first`), asks `decide` what to do, CASes at
 * the revision read; on a conflict reads again, up to {@linkcode TRIES}.
 * Every operator write goes through it (the job-level ones of
 * `job_actions.ts` too): at the revision just read, retried only while the
 * action still applies.
 */
export async function casLoop<R>(
  store: Store,
  key: string,
  decide: (cur: StoreEntry | undefined) => Step<R>,
  conflict: () => R,
  first?: StoreEntry,
): Promise<R> {
  let cur: StoreEntry | undefined = first ?? await store.get(key);
  for (let i = 0; i < TRIES; i++) {
    const step = decide(cur);
    if ("done" in step) return step.done;
    const r = await store.update(key, step.write, cur!.revision);
    if (r.ok) return step.ok(r.revision);
    cur = await store.get(key);
  }
  return conflict();
}

function readSplit(id: string, cur: StoreEntry | undefined): { rec: SplitRecord } | { done: { id: string; outcome: "notFound" | "unreadable"; message: string } } {
  if (!cur) return { done: { id, outcome: "notFound", message: `No split "${id}" in this job` } };
  const r = safeDecodeRecord(cur.key, cur.value, SplitRecordSchema);
  if (!r.ok) return { done: { id, outcome: "unreadable", message: r.error.message } };
  return { rec: r.value };
}

/**
 * Requeues a quarantined split: status `runnable`, attempts 0, no owner,
 * epoch + 1 (never reset), its failure history kept. The leader offers it
 * again. A `stalled` job outcome is cleared (`reopened`), so workers
 * restarted after the stall run the split instead of exiting at once.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { requeueSplit } from "@splitlease/splitlease/admin";
 * const r = await requeueSplit(new MemoryStore(), "part-0007");
 * console.log(r.outcome, r.message); // "notFound" No split "part-0007" in this job
 * ```
 */
export async function requeueSplit(store: Store, id: string): Promise<RequeueResult> {
  assertValidId(id, "split id");
  const r = await requeueFrom(store, id);
  if (r.outcome === "requeued") r.reopened = await reopenStalled(store);
  return r;
}

/**
 * Clears a `stalled` job outcome from the plan record (CAS at its revision,
 * everything else kept) after a requeue or cancel made it untrue. A running
 * leader would clear it too (it sees the split runnable), but a stalled job
 * usually has no worker left: restarted workers read the outcome at join and
 * would exit at once. With no outcome yet, a final plan is rewritten as it
 * is: the leader writes an outcome only at a plan revision it read before
 * confirming the splits, so a decision taken before our split write landed
 * loses its CAS instead of landing after it (and a decision that landed
 * first is the stalled outcome cleared here). Whether it was cleared.
 */
async function reopenStalled(store: Store): Promise<boolean> {
  for (let i = 0; i < TRIES; i++) {
    const cur = await store.get(keys.plan);
    if (!cur) return false;
    const r = safeDecodeRecord(cur.key, cur.value, PlanRecordSchema);
    if (!r.ok) return false;
    const stalled = r.value.outcome?.kind === "stalled";
    if (!stalled && (r.value.outcome || r.value.finality !== "final" || r.value.generation === 0)) return false;
    const { outcome: _, ...next } = r.value;
    if ((await store.update(keys.plan, encodeRecord(next), cur.revision)).ok) return stalled;
  }
  return false;
}

/** {@linkcode requeueSplit}, starting from an entry just listed (no first read). */
function requeueFrom(store: Store, id: string, first?: StoreEntry): Promise<RequeueResult> {
  const conflict = (): RequeueResult => ({
    id,
    outcome: "conflict",
    message: `Split "${id}" kept changing while being requeued (${TRIES} tries); read it again and retry`,
  });
  return casLoop<RequeueResult>(store, keys.split(id), (cur) => {
    const read = readSplit(id, cur);
    if ("done" in read) return read;
    const rec = read.rec;
    if (rec.status !== "quarantined") {
      return {
        done: { id, outcome: "notQuarantined", status: rec.status, message: `Split "${id}" is ${rec.status}, not quarantined` },
      };
    }
    const next: SplitRecord = withTenancy({ ...rec, status: "runnable", attempts: 0, owner: null, epoch: rec.epoch + 1 }, Date.now(), rec.owner ? "requeued" : null);
    return {
      write: encodeRecord(next),
      ok: () => ({
        id,
        outcome: "requeued",
        epoch: next.epoch,
        reopened: false,
        message: `Split "${id}" requeued at epoch ${next.epoch}`,
      }),
    };
  }, conflict, first);
}

/**
 * Requeues every quarantined split (one streamed listing of `split.`, then
 * one CAS per quarantined split, 16 in flight). Each split answers for
 * itself: a split that changed meanwhile is reported, not retried blindly.
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { requeueQuarantined } from "@splitlease/splitlease/admin";
 * const { found, requeued, results } = await requeueQuarantined(new MemoryStore());
 * console.log(`${requeued} of ${found} requeued`, results.filter((r) => r.outcome !== "requeued"));
 * ```
 */
export async function requeueQuarantined(
  store: Store,
): Promise<{ found: number; requeued: number; reopened: boolean; results: RequeueResult[] }> {
  const quarantined: StoreEntry[] = [];
  for (const e of await store.list(keys.splitPrefix)) {
    const r = safeDecodeRecord(e.key, e.value, SplitRecordSchema);
    if (r.ok && r.value.status === "quarantined") quarantined.push(e);
  }
  const results: RequeueResult[] = new Array(quarantined.length);
  let next = 0;
  const worker = async () => {
    while (next < quarantined.length) {
      const i = next++;
      const e = quarantined[i];
      results[i] = await requeueFrom(store, e.key.slice(keys.splitPrefix.length), e);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, quarantined.length) }, worker));
  const requeued = results.filter((r) => r.outcome === "requeued").length;
  return { found: quarantined.length, requeued, reopened: requeued > 0 && await reopenStalled(store), results };
}

/**
 * Cancels a split: status `cancelled` (terminal: never offered or run
 * again, counted apart from completed), no owner, epoch + 1. A held split's
 * owner is fenced at its next commit and told by the leader to stop at once
 * (a drop). A completed split cannot be cancelled. A `stalled` job outcome
 * is cleared (`reopened`): the leader judges the job again, and cancelling
 * its last quarantined split completes it.
 *
 * @example
 * ```ts
 * import { cancelSplit } from "@splitlease/splitlease/admin";
 * import { MemoryStore } from "@splitlease/splitlease";
 * const r = await cancelSplit(new MemoryStore(), "part-0007");
 * if (r.outcome === "cancelled") console.log(`was ${r.previous}, owned by ${r.previousOwner ?? "nobody"}`);
 * ```
 */
export async function cancelSplit(store: Store, id: string): Promise<CancelResult> {
  assertValidId(id, "split id");
  const conflict = (): CancelResult => ({
    id,
    outcome: "conflict",
    message: `Split "${id}" kept changing while being cancelled (${TRIES} tries: its owner commits often); retry`,
  });
  const undealt = await cancelUndealt(store, id);
  if (undealt) return undealt;
  const r = await casLoop<CancelResult>(store, keys.split(id), (cur) => {
    const read = readSplit(id, cur);
    if ("done" in read) return read;
    const rec = read.rec;
    if (rec.status === "cancelled") return { done: { id, outcome: "alreadyCancelled", message: `Split "${id}" is already cancelled` } };
    if (rec.status === "completed") {
      return { done: { id, outcome: "alreadyCompleted", message: `Split "${id}" is completed; a completed split is not cancelled` } };
    }
    const next: SplitRecord = withTenancy({ ...rec, status: "cancelled", owner: null, epoch: rec.epoch + 1 }, Date.now(), rec.owner ? "cancelled" : null);
    const previousOwner = rec.owner?.instance ?? null;
    return {
      write: encodeRecord(next),
      ok: () => ({
        id,
        outcome: "cancelled",
        epoch: next.epoch,
        previous: rec.status,
        previousOwner,
        reopened: false,
        message: `Split "${id}" cancelled (was ${rec.status}${previousOwner ? `, held by ${previousOwner}` : ""})`,
      }),
    };
  }, conflict);
  if (r.outcome === "cancelled") {
    await fenceProgress(store, id, r.epoch);
    // Cancelling the last quarantined split of a stalled job makes it complete: let the leader judge again.
    r.reopened = await reopenStalled(store);
  }
  return r;
}

/**
 * Cancels a planned split that was not dealt yet (it has no record of its
 * own; a published page of the plan lists it) by creating its record
 * cancelled, at its first epoch — or `undefined` when it has a record (or no page
 * lists it): the compare-and-swap path then answers. A claim that creates
 * the record first wins, and the cancel goes over that record instead.
 */
async function cancelUndealt(store: Store, id: string): Promise<CancelResult | undefined> {
  if (await store.get(keys.split(id))) return undefined;
  const planned = await plannedEntry(store, id);
  if (!planned) return undefined;
  const first = pagedRecord(planned.entry, planned.page);
  const rec = withTenancy({ ...first, status: "cancelled", epoch: first.epoch + 1 }, Date.now(), null);
  if (!(await store.create(keys.split(id), encodeRecord(rec))).ok) return undefined;
  return {
    id,
    outcome: "cancelled",
    epoch: rec.epoch,
    previous: "runnable",
    previousOwner: null,
    reopened: await reopenStalled(store),
    message: `Split "${id}" cancelled (was runnable, not dealt yet)`,
  };
}

/** The entry of a published page of the plan that lists `id`, if one does. */
async function plannedEntry(store: Store, id: string): Promise<{ entry: PageEntry; page: PageRecord } | undefined> {
  const plan = await store.get(keys.plan);
  const p = plan ? safeDecodeRecord(plan.key, plan.value, PlanRecordSchema) : undefined;
  const pages = p?.ok ? p.value.pages ?? 0 : 0;
  if (pages === 0) return undefined;
  for (const e of await store.list(keys.pagePrefix)) {
    if (e.key >= keys.page(pages)) break;
    const page = safeDecodeRecord(e.key, e.value, PageRecordSchema);
    if (!page.ok) continue;
    const found = page.value.splits.find((x) => x.id === id);
    if (found) return { entry: found, page: page.value };
  }
  return undefined;
}

/**
 * Fences the progress record of a split whose epoch an operator moved to
 * `epoch` (a cancel): its owner's next progress commit is then refused
 * (the record names a newer epoch) rather than landing until the leader's
 * drop reaches it. Best effort: the cancel stands without it (the owner's
 * completion is refused by the split record, the leader drops it).
 */
async function fenceProgress(store: Store, id: string, epoch: number): Promise<void> {
  const key = keys.prog(id);
  try {
    for (let i = 0; i < TRIES; i++) {
      const cur = await store.get(key);
      const p = cur ? safeDecodeRecord(cur.key, cur.value, ProgRecordSchema) : undefined;
      if (p && !p.ok) return; // unreadable: nobody commits over it anyway
      if (p?.ok && p.value.epoch >= epoch) return;
      const next: ProgRecord = { v: 2, epoch, owner: null, progress: p?.ok ? p.value.progress : null };
      if (p?.ok && p.value.records !== undefined) next.records = p.value.records;
      const w = cur ? await store.update(key, encodeRecord(next), cur.revision) : await store.create(key, encodeRecord(next));
      if (w.ok) return;
    }
  } catch {
    // An outage: the leader's drop stops the owner instead.
  }
}

/**
 * Asks a member to drain: writes `draining: true` into its member record
 * (CAS at its revision, its own session kept). The member's next heartbeat
 * (within `leaseMs / 3`) conflicts, adopts the record and drains the whole
 * worker as after SIGTERM: its splits are handed over with no replay and
 * the process exits 0. The leader stops offering it work at once. A member
 * that is dead never reads it; the leader takes its splits over as usual.
 *
 * @example
 * ```ts
 * import { drainMember } from "@splitlease/splitlease/admin";
 * import { MemoryStore } from "@splitlease/splitlease";
 * const r = await drainMember(new MemoryStore(), "pod-3");
 * console.log(r.message); // No member "pod-3" in this job
 * ```
 */
export async function drainMember(store: Store, instance: string): Promise<DrainMemberResult> {
  assertValidId(instance, "instance id");
  const conflict = (): DrainMemberResult => ({
    instance,
    outcome: "conflict",
    message: `Member "${instance}" kept changing while being drained (${TRIES} tries); retry`,
  });
  return await casLoop<DrainMemberResult>(store, keys.member(instance), (cur) => {
    if (!cur) return { done: { instance, outcome: "notFound", message: `No member "${instance}" in this job` } };
    const r = safeDecodeRecord(cur.key, cur.value, MemberRecordSchema);
    if (!r.ok) return { done: { instance, outcome: "unreadable", message: r.error.message } };
    const session = r.value.session;
    if (r.value.draining) {
      return { done: { instance, outcome: "alreadyDraining", session, message: `Member "${instance}" is already draining` } };
    }
    return {
      write: encodeRecord({ ...r.value, draining: true }),
      ok: () => ({
        instance,
        outcome: "draining",
        session,
        message: `Member "${instance}" asked to drain; it starts at its next heartbeat and exits when its splits are handed over`,
      }),
    };
  }, conflict);
}
