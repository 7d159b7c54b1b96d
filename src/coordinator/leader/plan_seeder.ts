/**
 * The seeding half of a planner run on the leader (docs/DESIGN.md, "Plans"):
 * the planner's splits read and checked, those not planned before written
 * as pages of the plan — descriptors too large to live inline to `spec.`
 * first — and each page's splits dealt as it lands (granted to idle lanes,
 * the rest handed to the view to be offered). Apart from `Planning`, which
 * runs the planner, publishes the plan and retries failures: this side
 * writes only pages, specs and the records of the splits it grants.
 *
 * @module
 */
import { encodeRecord, type PageEntry, pagedRecord, type PageRecord, type SpecRecord } from "../../records.ts";
import { keys } from "../../store/keys.ts";
import type { Core } from "../core.ts";
import type { LeaderRole } from "./role.ts";
import { pageChunks, writePage } from "./plan_pages.ts";
import { openRecord } from "../../records/transitions.ts";
import { type RenewedSplit, renewRecords } from "./rerun_records.ts";
import type { PlannedSplit } from "../types.ts";
import { takePlan } from "./plan_intake.ts";

/** Writes and deals the splits of one leader term's planner runs (`Planning` holds one). */
export class PlanSeeder {
  readonly #core: Core;
  readonly #role: LeaderRole;

  /**
   * Pages this term wrote, published or not: a run after one whose publish
   * failed goes on after them (its splits are in the view, dealt from those
   * pages), never over them, and publishes them too. Seed 354: a publish
   * that failed left the splits of page 0 in the view; the next run found
   * nothing new, published no pages, and two splits were never dealt.
   * Counted per job run: a rerun plans its pages from page 0 again.
   */
  #written = { run: 0, pages: 0 };

  constructor(core: Core, role: LeaderRole) {
    this.#core = core;
    this.#role = role;
  }

  /**
   * Reads the planner's whole result, validated as it comes (a duplicate id
   * refuses the plan, naming every duplicate, before anything is written),
   * then writes the splits not planned before as pages of the plan from
   * page `first` on, heaviest first (equal weights in the planner's order),
   * each page's splits handed to the leader's view as it lands so they are
   * dealt at once. A split has no record of its own until a member claims
   * it (the claim creates it): one write per page, not one per split. A
   * descriptor too large to live inline goes to `spec.<id>` first.
   * Returns the splits written and the page count after them.
   */
  async seed(
    core: Core,
    splits: Iterable<PlannedSplit> | AsyncIterable<PlannedSplit>,
    term: number,
    signal: AbortSignal,
    first: number,
    run: number,
    epochBase: number,
  ): Promise<{ created: number; pages: number; ids: Set<string> }> {
    const { store, config } = core;
    const view = this.#role.view;
    const { planned, large, ids } = await takePlan(splits, core.shard, signal);
    // Splits an earlier planner run planned (dealt or not) are planned once: a replan, or a new leader's,
    // names the same ids. In a rerun, those with a record of an earlier job run are renewed in place.
    const entries: PageEntry[] = [], renew: RenewedSplit[] = [];
    for (const e of planned) {
      const held = view.splits.get(e.id);
      if (!held) entries.push(e);
      else if (held.revision > 0 && (held.record.run ?? 1) < run) {
        renew.push({ id: e.id, weight: e.weight ?? 1, descriptor: e.spec ? large.get(e.id)! : e.descriptor ?? null, spec: e.spec === true });
      }
    }
    const count = planned.length;
    planned.length = 0; // the entries to write are in `entries` now
    for (const e of entries) view.rank(e.id); // the dealing order among equal weights
    const renewed = renew.length > 0 ? await renewRecords(core, this.#role, renew, run, epochBase, term, 0, count, signal) : 0;
    let failure: unknown;
    const inflight = new Set<Promise<void>>();
    for (const e of entries) {
      if (signal.aborted || failure) break;
      if (!e.spec) continue;
      const spec: SpecRecord = { v: 2, descriptor: large.get(e.id)!, weight: e.weight ?? 1, term };
      const w = store.create(keys.spec(e.id), encodeRecord(spec)).then(() => {}).catch((err) => {
        failure ??= err;
      }).finally(() => inflight.delete(w));
      inflight.add(w);
      if (inflight.size >= config.seedConcurrency) await Promise.race(inflight);
    }
    await Promise.all(inflight);
    large.clear();
    if (failure) throw failure;
    // A rerun's pages say which run their splits are of, and the epoch their records start at.
    const meta: Pick<PageRecord, "run" | "epochBase"> = run > 1 ? { run, ...(epochBase > 0 ? { epochBase } : {}) } : {};
    const page = Math.max(first, this.#written.run === run ? this.#written.pages : 0);
    let dealt = 0;
    // Grants in flight across pages: the next page is written while they land (they are in the view before the publish).
    const granting = new Set<Promise<void>>();
    // Pages written PAGE_WRITES_IN_FLIGHT at a time, dealt in order as each lands: a store busy with the
    // fleet's writes answers each write after its queue, and one page at a time made a plan of a
    // thousand pages wait a thousand queues (about 3 pages a second under 100 busy workers).
    const chunks = pageChunks(entries);
    const fresh = entries.length;
    entries.length = 0; // in `chunks` now, each page's released once it is dealt
    const writes: Promise<boolean>[] = [];
    const write = (i: number) => {
      const w = writePage(store, page + i, { v: 2, term, splits: chunks[i], ...meta }, config.opTimeoutMs);
      w.catch(() => {}); // read in order below; one that fails while an earlier one is read is not unhandled
      writes[i] = w;
    };
    let deposed = false, landed = page;
    try {
      for (let i = 0; i < chunks.length; i++) {
        if (signal.aborted) break;
        for (let j = writes.length; j < Math.min(chunks.length, i + PAGE_WRITES_IN_FLIGHT); j++) write(j);
        if (!(await writes[i])) {
          deposed = true;
          break;
        }
        landed = page + i + 1;
        this.#written = { run, pages: landed };
        dealt = this.#deal(core, chunks[i], meta, page + i, dealt, fresh, signal, granting);
        chunks[i] = []; // dealt: its entries are the view's now
        // A pass for the page's offers now, unless grants are in flight: then the last to land runs it, as
        // when the page waited for them (a pass while lanes are reserved for grants not delivered yet lets
        // their member fill those lanes from its spares, and the grants then wait).
        if (granting.size === 0) this.#core.schedule();
      }
    } finally {
      // Every write started settles before the run goes on (a later run writes from `#written` on).
      await Promise.allSettled(writes);
      await Promise.all(granting);
    }
    if (deposed) {
      this.#core.log("warn", "Leader deposed while planning: a newer term wrote a page of the plan", { term, page: landed });
      this.#core.schedule();
      return { created: 0, pages: -1, ids };
    }
    return { created: fresh + renewed, pages: landed, ids };
  }

  /**
   * Deals the splits of a page that just landed: while a member has an idle
   * lane (a free lane no offer or grant fills) the split's record is
   * created for it (epoch 1, a grant: it starts without a write of its
   * own), in runs of consecutive splits (see `SeedRuns`); every other split
   * goes to the view not dealt yet (revision 0), to be offered and claimed
   * by creating its record. Either way one write before a lane starts it.
   * Grants never hold up the plan: with `seedConcurrency` of them in flight
   * (`granting`, shared by the pages of a run) the rest of the page is
   * offered, so a plan's pages are written at the store's rate while its
   * first splits start, not at the rate lanes free up (a plan of tiny
   * splits used to be granted split by split, its publish waiting for the
   * fleet to run nearly all of it).
   */
  #deal(
    core: Core,
    chunk: readonly PageEntry[],
    meta: Pick<PageRecord, "run" | "epochBase">,
    page: number,
    dealt: number,
    planned: number,
    signal: AbortSignal,
    inflight: Set<Promise<void>>,
  ): number {
    const view = this.#role.view;
    let i = 0;
    for (; i < chunk.length && !signal.aborted && inflight.size < core.config.seedConcurrency; i++) {
      const e = chunk[i];
      const heir = this.#role.reserveIdle(dealt, planned);
      if (!heir) break;
      dealt++;
      const rec = openRecord(pagedRecord(e, meta), heir.member.owner, false, Infinity, this.#core.clock.wallNow()); // its first tenancy
      const w = core.splits.create(e.id, rec, "seed")
        .then(async (r) => {
          if (!r.ok) view.learn(await core.splits.entry(e.id)); // dealt already (a claim, a predecessor's grant)
        })
        .catch((err) => this.#core.log("warn", "Dealing a planned split failed; it is offered instead", { split: e.id, error: String(err) }))
        .finally(() => {
          this.#role.unreserve(heir.lane);
          view.plan(e.id, pagedRecord(e, meta), page); // not in the view yet: not dealt after all
          inflight.delete(w);
          // The last grant in flight to land runs the pass that writes the grants into their members'
          // assignment records, and the offers of the pages written meanwhile.
          if (inflight.size === 0) this.#core.schedule();
        });
      inflight.add(w);
    }
    for (const e of chunk.slice(i)) view.plan(e.id, pagedRecord(e, meta), page); // dealt from now on, as offers
    return dealt;
  }
}


/** Pages of a plan a run keeps in flight while it writes them (each up to 128 KiB). */
const PAGE_WRITES_IN_FLIGHT = 32;