/**
 * A rerun's split records (docs/DESIGN.md, "Rerunning a job"): a new run of
 * a finished job finds a record for every split the runs before planned.
 * The splits it plans again are renewed in place — a fresh seed above every
 * epoch of the runs before, carrying what the split did in them — and
 * those it does not plan are removed at its first publish. Splits it plans
 * that no run planned before go to the plan's pages like any (see
 * `Planning`); they start above `epochBase` too.
 *
 * A renewal is one write per split (a claim could not create a record that
 * exists); a rerun of a million splits pays a million writes, as it did
 * before pages. The old progress records stay: a renewed record's `closed`
 * is past their epochs, so nothing of them is carried (`ProgHold.closed`),
 * and the first tenancy's commit writes over them.
 *
 * @module
 */
import { InvalidRecordError, StoreUnavailableError } from "../../errors.ts";
import { encodeRecord, type Json, type SpecRecord, SpecRecordSchema, safeDecodeRecord, type SplitRecord } from "../../records.ts";
import { openRecord, rerunRecord } from "../../records/transitions.ts";
import { keys } from "../../store/keys.ts";
import type { Core } from "../core.ts";
import type { SplitRecords } from "../split_records.ts";
import type { LeaderView } from "./leader_view.ts";
import type { LeaderRole } from "./role.ts";

/** One split a rerun plans again, as the planner returned it. */
export interface RenewedSplit {
  id: string;
  weight: number;
  descriptor: Json;
  /** Whether the descriptor lives in `spec.<id>` (too large to live inline). */
  spec: boolean;
}

/**
 * Renews the records of `splits` (of runs before `run`) for run `run`, at
 * an epoch at least `epochBase`: each seeded free, or granted to a member
 * with an idle lane (its first tenancy: one write). `dealt` counts the
 * splits dealt before these (the idle-lane runs of `SeedRuns`), `planned`
 * all the run plans. Returns the records renewed; an outage throws (the
 * run is retried, and renewing is idempotent: a record of this run is left).
 */
export async function renewRecords(
  core: Core,
  role: LeaderRole,
  splits: readonly RenewedSplit[],
  run: number,
  epochBase: number,
  term: number,
  dealt: number,
  planned: number,
  signal: AbortSignal,
): Promise<number> {
  const { store, config } = core;
  let renewed = 0;
  let failure: unknown;
  const inflight = new Set<Promise<void>>();
  const one = async (p: RenewedSplit, n: number) => {
    if (p.spec) {
      // A rerun's planner may describe a split anew: its spec (immutable within a run) is replaced.
      const spec: SpecRecord = { v: 2, descriptor: p.descriptor, weight: p.weight, term };
      if (!(await store.create(keys.spec(p.id), encodeRecord(spec))).ok) await replaceSpec(store, p.id, spec);
    }
    const heir = role.reserveIdle(n, planned);
    const at = core.clock.wallNow();
    const make = (prev: SplitRecord | undefined) => {
      const free = rerunRecord(prev, p.weight, p.spec ? undefined : p.descriptor, run, epochBase);
      return heir ? openRecord(free, heir.member.owner, false, Infinity, at) : free; // its first tenancy of this run
    };
    try {
      // Landed, the role's view has it at once (the role hears every landed split write).
      if (await reseed(core.splits, p.id, run, make)) renewed++;
    } finally {
      if (heir) role.unreserve(heir.lane);
    }
  };
  let n = dealt;
  for (const p of splits) {
    if (signal.aborted || failure) break;
    const w = one(p, n++).catch((e) => {
      failure ??= e;
    }).finally(() => inflight.delete(w));
    inflight.add(w);
    if (inflight.size >= config.seedConcurrency) await Promise.race(inflight);
  }
  await Promise.all(inflight);
  if (failure) throw failure;
  return renewed;
}

/**
 * The first publish of a rerun removes the split records of the runs
 * before that this run did not plan again — residuals cut from old
 * splits, splits the planner no longer returns — so that they count in no
 * outcome of this run and none is dealt; their totals are in the plan
 * record's history. Records that list residuals go first: a residual
 * whose record vanishes while a record still lists it would be created
 * again. Each delete is guarded by the revision the view holds (a record
 * that changed meanwhile is read and judged again); epochs stay safe,
 * since every record of this run starts above `epochBase`.
 */
export async function retireRecords(core: Core, view: LeaderView, run: number, planned: ReadonlySet<string>): Promise<void> {
  const old: [string, number, number, boolean][] = [];
  for (const [id, e] of view.splits) {
    if (e.revision > 0 && (e.record.run ?? 1) < run && !planned.has(id)) old.push([id, e.revision, e.record.residuals?.length ?? 0, e.record.spec === true]);
  }
  old.sort((a, b) => b[2] - a[2]);
  let removed = 0;
  for (const [id, rev, , hasSpec] of old) {
    let revision = rev, spec = hasSpec;
    for (let i = 0; i < 4; i++) {
      if ((await core.store.delete(keys.split(id), revision)).ok) {
        removed++;
        if (spec) await core.store.delete(keys.spec(id)).catch(() => {});
        break;
      }
      const cur = await core.splits.readPast(id, revision + 1).catch(() => undefined);
      if (!cur || (cur.record.run ?? 1) >= run) break;
      revision = cur.revision;
      spec = cur.record.spec === true;
    }
  }
  if (old.length > 0) core.log("info", "Rerun: removed the split records of earlier runs this run does not plan", { run, removed, found: old.length });
}

/**
 * Writes the rerun record `make` builds over the split's record of an
 * earlier run (or creates it, when it has none); `false` when a record of
 * this run is there already (a planner run of ours before, or another
 * leader's) or the record is unreadable (never written over: its epoch is
 * unknown, and it blocks the outcome as any unreadable record does).
 */
async function reseed(records: SplitRecords, id: string, run: number, make: (prev: SplitRecord | undefined) => SplitRecord): Promise<boolean> {
  let floor = 0;
  for (let i = 0; i < 4; i++) {
    const cur = await (floor > 0 ? records.readPast(id, floor) : records.read(id)).catch((e) => {
      if (e instanceof InvalidRecordError) return null;
      throw e;
    });
    if (cur === null) return false;
    if (!cur) {
      if ((await records.create(id, make(undefined), "seed")).ok) return true;
      floor = 1;
      continue;
    }
    if ((cur.record.run ?? 1) >= run) return false;
    if ((await records.write(id, make(cur.record), cur.revision, "seed")).ok) return true;
    floor = cur.revision + 1; // lost: the record is past it
  }
  throw new StoreUnavailableError("update", 0, { detail: `the record of split "${id}" kept changing while it was seeded again for a rerun` });
}

/** Replaces the spec record of `id` with `spec` when its descriptor differs (a rerun planned it anew). */
async function replaceSpec(store: Core["store"], id: string, spec: SpecRecord): Promise<void> {
  for (let i = 0; i < 4; i++) {
    const cur = await store.get(keys.spec(id));
    if (!cur) {
      if ((await store.create(keys.spec(id), encodeRecord(spec))).ok) return;
      continue;
    }
    const old = safeDecodeRecord(cur.key, cur.value, SpecRecordSchema);
    if (old.ok && JSON.stringify(old.value.descriptor) === JSON.stringify(spec.descriptor) && old.value.weight === spec.weight) return;
    if ((await store.update(keys.spec(id), encodeRecord(spec), cur.revision)).ok) return;
  }
}
