/**
 * The body of a member's `assign.<instance>` record, built from what the
 * leader tells it (`MemberState`), sized to fit the store's value limit.
 *
 * @module
 */
import type { AssignEntry, AssignRecord } from "../../records.ts";
import { MAX_VALUE_BYTES } from "../../store/store.ts";
import type { CutAsk, Drop, Grant, Revoke } from "./directives.ts";
import type { LeaderView } from "./leader_view.ts";

/** Bytes of split records written inline in one assignment record; entries past it carry ids only. */
const INLINE_BUDGET = 48 * 1024;
/** Largest assignment record written (the store's value limit, less room for the envelope). */
const RECORD_LIMIT = MAX_VALUE_BYTES - 4096;

/** What one member's assignment record lists. */
export interface AssignListing {
  session: string;
  /** The record's sequence number. */
  seq: number;
  revokes: ReadonlyMap<string, Revoke>;
  grants: ReadonlyMap<string, Grant>;
  /** Offers: split id → the revision offered. */
  offers: ReadonlyMap<string, number>;
  spares: ReadonlySet<string>;
  asks: ReadonlyMap<string, CutAsk>;
}

/**
 * Builds the record, sized as it is built so it always fits the store's
 * value limit: revokes and drops first (a member must see them), then
 * grants not listed before, grants listed before, and offers in dealing
 * order. Split records go inline while the inline budget lasts. Entries
 * past the limit are left for a later write (`unlisted`: one is due at
 * once); `drops` keeps only the drops written; `listed` receives the grants
 * written.
 *
 * @example
 * ```ts ignore
 * const { record, unlisted } = buildAssignRecord(listing, view, term, drops, listed);
 * ```
 */
export function buildAssignRecord(
  m: AssignListing,
  view: LeaderView,
  term: number,
  drops: [string, Drop][],
  listed: Grant[],
): { record: AssignRecord; unlisted: boolean } {
  let size = 256 + m.session.length;
  let inline = INLINE_BUDGET;
  const fits = (n: number): boolean => {
    if (size + n + 1 > RECORD_LIMIT) return false;
    size += n + 1;
    return true;
  };
  const entry = (
    id: string,
    rev: number,
    epoch: number,
    why?: AssignEntry["why"],
    spare = false,
  ): AssignEntry | undefined => {
    const e: AssignEntry = { id, epoch, rev };
    if (why) e.why = why;
    if (spare) e.spare = true;
    // A planned split not dealt yet (revision 0) has no record: its entry names its page of
    // the plan, which the member reads for the record its claim creates.
    if (rev === 0) {
      const page = view.splits.page(id);
      if (page === undefined) return undefined;
      e.page = page;
    }
    const bare = JSON.stringify(e).length;
    // A spare is claimed only while the leader is slow or gone: it carries no
    // record (the claim reads it), so the lane offers' rewrites stay small.
    // The view keeps full records of the splits that changed last only.
    const full = rev > 0 && !spare && inline > 0 ? view.full(id, rev) : undefined;
    if (full) {
      const n = JSON.stringify(full).length + 7;
      if (n <= inline && fits(bare + n)) {
        inline -= n;
        e.rec = full;
        return e;
      }
    }
    return fits(bare) ? e : undefined;
  };
  let unlisted = false;
  const revokes: AssignRecord["revokes"] = [];
  for (const [id, r] of m.revokes) {
    const v = r.to ? { id, epoch: r.epoch, to: r.to } : { id, epoch: r.epoch };
    // One that does not fit is listed once earlier ones are answered (in
    // order, so a revoke once listed stays listed: a missing one means withdrawn).
    if (fits(JSON.stringify(v).length)) revokes.push(v);
  }
  const dropped: AssignRecord["drops"] = [];
  for (const [id, d] of [...drops]) {
    const v = { id, epoch: d.epoch, reason: d.reason };
    if (fits(JSON.stringify(v).length)) dropped.push(v);
    else {
      unlisted = true;
      drops.splice(drops.findIndex(([x]) => x === id), 1); // kept for the next write
    }
  }
  const grants: AssignEntry[] = [];
  for (const first of [true, false]) {
    for (const [id, g] of m.grants) {
      if ((g.at === undefined) !== first) continue;
      const cur = view.splits.get(id);
      if (!cur || cur.record.epoch !== g.epoch) continue;
      const e = entry(id, cur.revision, g.epoch, g.why);
      if (!e) {
        unlisted ||= first;
        continue;
      }
      grants.push(e);
      listed.push(g);
    }
  }
  const offers: AssignEntry[] = [];
  // In dealing order (heaviest first, then rank): a member claims them in the order listed.
  const dealing = [...m.offers].sort(([x], [y]) =>
    (view.splits.get(y)?.record.weight ?? 0) -
      (view.splits.get(x)?.record.weight ?? 0) || view.rank(x) - view.rank(y)
  );
  for (const [id, rev] of dealing) {
    const cur = view.splits.get(id);
    if (!cur || cur.revision !== rev) continue; // moved on: the next refill replaces it
    const e = entry(
      id,
      rev,
      cur.record.epoch,
      view.orphaned.has(id) ? "takeover" : undefined,
      m.spares.has(id),
    );
    if (e) offers.push(e); // one that does not fit waits, reserved, for a later write
  }
  const record: AssignRecord = {
    v: 2,
    term,
    session: m.session,
    seq: m.seq,
    offers,
    grants,
    revokes,
    drops: dropped,
  };
  const cuts: NonNullable<AssignRecord["cuts"]> = [];
  for (const [id, a] of m.asks) {
    const v = { id, epoch: a.epoch, parts: a.parts, ask: a.ask };
    if (fits(JSON.stringify(v).length)) cuts.push(v);
  }
  if (cuts.length > 0) record.cuts = cuts;
  return { record, unlisted };
}
