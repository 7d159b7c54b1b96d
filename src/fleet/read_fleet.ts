/**
 * The fleet view, reading part: one snapshot of a job's records from any
 * store (a streamed listing of `split.` on NATS), on any member or from
 * outside the fleet (the CLI). Nothing here writes.
 *
 * @module
 */
import { JobGoneError } from "../errors.ts";
import { keys } from "../store/keys.ts";
import type { Store } from "../store/store.ts";
import { buildFleetView, normalizeFleetQuery } from "./fleet_view.ts";
import type { FleetLiveness } from "./fleet_member.ts";
import type { FleetQuery } from "./fleet_query.ts";
import type { FleetSnapshot, FleetView } from "./types.ts";

/**
 * Options of {@linkcode readFleet}: the query, and liveness when the caller
 * is the leader.
 *
 * @example
 * ```ts
 * import type { ReadFleetOptions } from "@splitlease/splitlease/admin";
 * const options: ReadFleetOptions = { state: ["runnable"], owner: "pod-1", limit: 20 };
 * ```
 */
export interface ReadFleetOptions extends FleetQuery {
  /** Liveness as the leader judges it (give it only on the leader: `coordinator.status().liveMembers`). */
  liveness?: FleetLiveness;
  /** Wall clock (default `Date.now`). */
  wallNow?: () => number;
}

/**
 * Reads one snapshot of a job's records: the `job`, `plan` and `leader`
 * records, every member record, every split record, every progress record
 * and the plan's pages (streamed listings: on NATS one fails only when it
 * stops making progress). Every read is waited for; the first failure is
 * thrown, a {@linkcode JobGoneError} first.
 *
 * @example
 * ```ts
 * import { buildFleetView } from "./fleet_view.ts";
 * import { MemoryStore } from "@splitlease/splitlease";
 * const snapshot = await readFleetSnapshot(new MemoryStore());
 * const page1 = buildFleetView(snapshot, { limit: 10 });
 * const page2 = buildFleetView(snapshot, { limit: 10, after: page1.page.next ?? undefined });
 * ```
 */
export async function readFleetSnapshot(store: Store, wallNow: () => number = Date.now): Promise<FleetSnapshot> {
  const at = wallNow();
  // Pages and progress before splits: a split dealt or completed between two listings is then read with its record.
  const [pages, progs] = await Promise.allSettled([store.list(keys.pagePrefix), store.list(keys.progPrefix)]);
  const [job, plan, leader, members, splits] = await Promise.allSettled([
    store.get(keys.job),
    store.get(keys.plan),
    store.get(keys.leader),
    store.list(keys.memberPrefix),
    store.list(keys.splitPrefix),
  ]);
  const failed = [pages, progs, job, plan, leader, members, splits].filter((r) => r.status === "rejected");
  // A job whose records are gone is said so by whichever read learned it (on NATS a listing: a get only finds no responders).
  if (failed.length) throw (failed.find((r) => r.reason instanceof JobGoneError) ?? failed[0]).reason;
  const value = <T>(r: PromiseSettledResult<T>) => (r as PromiseFulfilledResult<T>).value;
  return {
    job: value(job),
    plan: value(plan),
    leader: value(leader),
    members: value(members),
    splits: value(splits),
    progs: value(progs),
    pages: value(pages),
    at,
  };
}

/**
 * Whether a snapshot holds no record of the job at all: read by a member
 * of the job (which wrote its `job` record when it joined), its records
 * were deleted (on PostgreSQL a deleted job reads as empty; on NATS the
 * reads fail with {@linkcode JobGoneError}).
 *
 * @example
 * ```ts
 * import { isEmptySnapshot } from "./read_fleet.ts";
 * isEmptySnapshot({ job: undefined, plan: undefined, leader: undefined, members: [], splits: [], at: 0 }); // true
 * ```
 */
export function isEmptySnapshot(s: FleetSnapshot): boolean {
  if (s.job || s.plan || s.leader || s.members.length > 0) return false;
  for (const _ of s.splits) return false;
  return true;
}

/**
 * The fleet as an operator reads it, from any member or from outside:
 * members, job-wide counts and one page of splits (filtered by state and
 * owner, paged by id with `after` = the previous page's `page.next`).
 * Members are judged by the leader's judgement when `liveness` is given
 * (on the leader), otherwise by each one's lease against the time of its
 * last beat (`FleetMember.liveness`: `alive`, `unresponsive`, `gone`).
 *
 * @example
 * ```ts
 * import { MemoryStore } from "@splitlease/splitlease";
 * import { readFleet } from "@splitlease/splitlease/admin";
 * const store = new MemoryStore();
 * let view = await readFleet(store, { state: "quarantined", limit: 100 });
 * for (;;) {
 *   for (const s of view.splits) console.log(s.id, s.attempts, s.failures.at(-1)?.message);
 *   if (view.page.next === null) break;
 *   view = await readFleet(store, { state: "quarantined", limit: 100, after: view.page.next });
 * }
 * ```
 */
export async function readFleet(store: Store, options: ReadFleetOptions = {}): Promise<FleetView> {
  const { liveness, wallNow, ...query } = options;
  normalizeFleetQuery(query); // a bad query fails before anything is read
  return buildFleetView(await readFleetSnapshot(store, wallNow), query, liveness);
}
