/**
 * Registering this worker's member record at join (docs/DESIGN.md,
 * "Liveness: judged by the leader"): a create, or — over a record that is
 * there — the takeover of a crashed predecessor's record, refusing a live
 * twin with our instance id (`DUPLICATE_INSTANCE`). The heartbeats that
 * follow are `Membership`'s.
 *
 * @module
 */
import { SplitleaseError } from "../../errors.ts";
import { encodeRecord, MemberRecordSchema, type MemberRecord, safeDecodeRecord } from "../../records.ts";
import type { Core } from "../core.ts";
import type { CausedStore } from "../../tracing/cause.ts";
import { type FloorRead, newer, readAtLeast } from "../fresh_read.ts";
import type { StoreEntry } from "../../store/store.ts";

/** What a registration leaves the membership: its record's revision, and when the write that landed started (monotonic). */
export interface Registered {
  /** Revision of the member record written. */
  revision: number;
  /** Monotonic start time of that write: the first heartbeat's `lastOk`. */
  lastOk: number;
}

/**
 * The error for a live twin with our instance id.
 *
 * @example
 * ```ts ignore
 * throw duplicateInstance(core); // DUPLICATE_INSTANCE
 * ```
 */
export function duplicateInstance(core: Core): SplitleaseError {
  const { me, config } = core;
  return new SplitleaseError(
    "DUPLICATE_INSTANCE",
    `Instance id "${me.instance}" is already used by another live process of job "${config.job}"`,
  );
}

/**
 * Registers `member.<instance>` (`key`), writing `record` (its `at` and
 * `took` set here). An existing record is a crashed predecessor (taken
 * over) or a live twin (refused): a live twin beats within `leaseMs/3`,
 * so wait that long for its revision to move. The
 * takeover is a CAS at the newest revision read before the wait: it
 * lands only if the record is still there, and a read never answers
 * ahead of the store, so a landed CAS proves the record did not move
 * during the wait, however stale the reads. A lost one is a twin — or,
 * on a store that answered a read from an older revision (its answers
 * disagreed, or one came back older than what we already knew), reads
 * that were behind: then the wait is made again from past the revision
 * that lost, at most four times — and at least once more after answers
 * that agreed, which a replica stuck on one older version gives too. Comparing two reads (before and after
 * the wait) took an old answer before it for a move and refused nearly
 * every restart when most member reads were stale (issue 40).
 *
 * @example
 * ```ts ignore
 * const { revision, lastOk } = await registerMember(core, keys.member(me.instance), record);
 * ```
 */
export async function registerMember(core: Core, key: string, record: MemberRecord): Promise<Registered> {
  const { store, clock, log, me } = core;
  const start = clock.now();
  record.at = clock.wallNow(); // "last seen" from the start: a member that dies before its first beat is judged too
  const r = await store.create(key, encodeRecord(record));
  if (r.ok) return { revision: r.revision, lastOk: start };
  // The create lost: the record exists (an answer "absent" is stale, or it was deleted just now).
  let floor = 1;
  for (let round = 1;; round++) {
    const { entry: cur, stale } = await newest(core, store, key, floor);
    if (cur) {
      const wait = Math.ceil(core.timings.twinWaitMs);
      await new Promise<void>((res) => clock.setTimeout(res, wait));
    }
    // Name the session we replace: it ended without leaving, and the leader
    // charges the splits it still names (a clean leave deletes the record,
    // and a split released to it after that is not charged).
    const old = cur ? safeDecodeRecord(key, cur.value, MemberRecordSchema) : undefined;
    if (old?.ok) record.took = old.value.session;
    else delete record.took;
    const start2 = clock.now();
    record.at = clock.wallNow();
    const w = cur
      ? await store.update(key, encodeRecord(record), cur.revision)
      : await store.create(key, encodeRecord(record));
    if (w.ok) {
      log("info", "Took over the member record of a previous process", { instance: me.instance });
      return { revision: w.revision, lastOk: start2 };
    }
    // A lost CAS after answers that agreed is a twin that beat during the wait — or a replica that answered
    // every read from the same older version (a quiet store: nothing moves its newest revision along, sharded
    // simulation, seed 219). One more round from past the revision that lost tells them apart: a twin beats
    // again and wins it too, a replica gets there. Refusing at once refused every restart of that instance.
    if ((!stale && round >= 2) || round >= 4) throw duplicateInstance(core);
    floor = (cur?.revision ?? 0) + 1;
  }
}

/**
 * The newest of a few reads of our member record, the first at or past
 * `floor` if the store gets there within an op timeout; `stale` when the
 * store showed it answers from older revisions (a read below the floor,
 * or answers that disagree).
 */
async function newest(core: Core, store: CausedStore, key: string, floor: number): Promise<{ entry: StoreEntry | undefined; stale: boolean }> {
  const first = await readMemberPast(core, store, key, floor);
  let entry = first.entry;
  let stale = !first.fresh || first.reads > 1;
  for (let i = 0; i < 3; i++) {
    const e = await store.get(key);
    if (e?.revision !== entry?.revision) stale = true;
    entry = newer(entry, e);
  }
  return { entry, stale };
}

/**
 * `member.<me>` (`key`) at revision `floor` or later, read again while
 * older (within an op timeout); absent counts as not fresh.
 *
 * @example
 * ```ts ignore
 * const { entry, fresh } = await readMemberPast(core, store, keys.member(me.instance), revision + 1);
 * ```
 */
export function readMemberPast(core: Core, store: CausedStore, key: string, floor: number): Promise<FloorRead> {
  return readAtLeast(() => store.get(key), floor, { clock: core.clock, budgetMs: core.config.opTimeoutMs });
}
