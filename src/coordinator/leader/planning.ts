/**
 * Planning on the leader (docs/DESIGN.md, "Plans"): runs the planner off the
 * heartbeat path, writes its splits into pages of the plan — ids checked as
 * they come, a thousand splits a write (a descriptor too large to live
 * inline goes to `spec.` first) — counts `planned` from the leader's view
 * (dealt or not), and publishes by CAS at the revision read before
 * planning, so a deposed leader's publish loses. Failed runs are retried
 * with backoff.
 *
 * @module
 */
import { InvalidRecordError, SplitleaseError, StoreUnavailableError } from "../../errors.ts";
import {
  decodeRecord,
  encodeRecord,
  type PageEntry,
  pagedRecord,
  type PageRecord,
  PlanRecordSchema,
  type PlanRecord,
  type SpecRecord,
} from "../../records.ts";
import { keys } from "../../store/keys.ts";
import { causedBy, type Core } from "../core.ts";
import type { Span } from "@opentelemetry/api";
import { failSpan, within } from "../../tracing/spans.ts";
import type { LeaderRole } from "./role.ts";
import { addPageTerms, pageChunks, writePage } from "./plan_pages.ts";
import { openRecord } from "../../records/transitions.ts";
import { type RenewedSplit, renewRecords, retireRecords } from "./rerun_records.ts";
import type { PlannedSplit, Planner } from "../types.ts";
import { checkPlanResult } from "./plan_result.ts";
import type { Versioned } from "../versioned.ts";
import { readAtLeast } from "../fresh_read.ts";
import { takePlan } from "./plan_intake.ts";


/** The planner side of one leader term. */
export class Planning {
  readonly #core: Core;
  readonly #planner: Planner;
  readonly #role: LeaderRole;
  readonly #leading: () => boolean;
  readonly #known: () => Versioned<PlanRecord> | undefined;
  /** A revision `plan` is known to have moved past (a publish of ours lost its CAS there): reads from before it are stale. */
  #past = 0;
  /** The plan record this leader just published with more to list (the next part starts from it). */
  #published: Versioned<PlanRecord> | undefined;
  /**
   * Pages this term wrote, published or not: a run after one whose publish
   * failed goes on after them (its splits are in the view, dealt from those
   * pages), never over them, and publishes them too. Seed 354: a publish
   * that failed left the splits of page 0 in the view; the next run found
   * nothing new, published no pages, and two splits were never dealt.
   * Counted per job run: a rerun plans its pages from page 0 again.
   */
  #written = { run: 0, pages: 0 };
  #timer: unknown;
  #running = false;
  #abort = new AbortController();
  /** Consecutive failed runs. */
  failures = 0;
  /** The last failure, for status. */
  lastError: string | undefined;

  /**
   * `known` is the newest `plan` this member knows of (its watch, which the
   * term bump and every plan read or write of the leader's also reach): a
   * read of `plan` older than it is stale.
   */
  constructor(core: Core, planner: Planner, role: LeaderRole, leading: () => boolean, known: () => Versioned<PlanRecord> | undefined) {
    this.#core = core;
    this.#planner = planner;
    this.#role = role;
    this.#leading = leading;
    this.#known = known;
  }

  /**
   * `plan` as of a revision no older than any known for it (the watch's
   * value, our term bump, a revision a lost publish named): a read, read
   * again while it answers from before that (a store serving reads from a
   * replica), else the watch's value when that is the newest known; `stale`
   * when neither reaches it (the caller looks again soon). Before, a stale
   * read showed the term before ours, planning took it for a newer
   * leader's and never ran for the rest of the term (issue 40, item 1).
   */
  async #read(store: Core["store"]): Promise<Versioned<PlanRecord> | "stale" | undefined> {
    const known = this.#known();
    // The next part of a listing right after our publish: the record we wrote, unless anything newer is
    // known (a store's queue a read waits behind, saved once a part; a record written since makes the
    // next publish lose its CAS, and that run reads it).
    const ours = this.#published;
    this.#published = undefined;
    if (ours && (known?.revision ?? 0) <= ours.revision && this.#past <= ours.revision) return ours;
    const floor = Math.max(known?.revision ?? 0, this.#past);
    const { entry, fresh } = await readAtLeast(() => store.get(keys.plan), floor, { clock: this.#core.clock, budgetMs: this.#core.config.opTimeoutMs });
    if (fresh && entry) {
      const read = { record: decodeRecord(keys.plan, entry.value, PlanRecordSchema), revision: entry.revision };
      return known && known.revision > read.revision ? known : read;
    }
    if (known && known.revision >= floor) return known;
    return fresh ? undefined : "stale";
  }

  /** Plans after `delay` ms. */
  schedule(delay: number): void {
    const { clock } = this.#core;
    if (this.#timer !== undefined) clock.clearTimeout(this.#timer);
    this.#timer = clock.setTimeout(() => {
      this.#timer = undefined;
      void this.#once();
    }, delay);
  }

  /**
   * Called with the plan record on every leader pass: a plan reset to
   * nothing published (`generation` 0: a rerun, while this leader had
   * planned its final plan already and scheduled nothing more) is planned
   * now, unless a run is in flight or scheduled.
   */
  onPlan(plan: PlanRecord | undefined): void {
    // Not after a failed run (its backoff is scheduled, or the plan failed for good in this term).
    if (plan?.generation !== 0 || plan.outcome !== undefined || this.failures > 0) return;
    if (!this.#running && this.#timer === undefined && this.#leading()) this.schedule(0);
  }

  /** Stops: aborts a running planner, cancels timers. */
  stop(): void {
    this.#abort.abort();
    this.#published = undefined;
    if (this.#timer !== undefined) this.#core.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  async #once(): Promise<void> {
    if (!this.#leading() || this.#running) return;
    this.#running = true;
    const term = this.#role.term;
    // One span per run (tracing on), the cause of its store operations; the planner runs inside it.
    const span = this.#core.trace.planRun(term);
    const cause = span ? this.#core.trace.spanCause(span) : undefined;
    const core = cause ? causedBy(this.#core, cause) : this.#core;
    try {
      await this.#run(core, term, span);
    } finally {
      this.#running = false;
      cause?.settle();
      span?.end();
    }
  }

  async #run(core: Core, term: number, span: Span | undefined): Promise<void> {
    const { store, clock, log, config } = core;
    const signal = this.#abort.signal;
    try {
      const cur = await this.#read(store);
      if (cur === "stale" || (cur && cur.record.term < term)) return this.#again("the store answered with a plan from before our term");
      if (!cur) throw new InvalidRecordError(keys.plan, `the record vanished during term ${term}`, []);
      const plan = cur.record;
      if (plan.term > term) {
        log("warn", "Leader deposed before planning", { term, planTerm: plan.term });
        this.#core.schedule(); // the leader's pass sees the newer term and steps down
        return;
      }
      if (plan.finality === "final" && plan.generation > 0) return; // planned once
      if (plan.outcome) return; // failed for good in this term (a new leader clears it and plans again)
      const { shard } = this.#core;
      const planner = () => this.#planner({ cursor: plan.cursor, term, signal, ...(shard.count > 1 ? { shard: { ...shard } } : {}) });
      // The planner's result is not held past the seeding (its splits may be a million objects).
      const { splits, finality, cursor, more } = checkPlanResult(await (span ? within(span, planner) : planner()));
      if (signal.aborted || !this.#leading()) return;
      const run = plan.run ?? 1;
      const { created, pages, ids } = await this.#seed(core, splits, term, signal, plan.pages ?? 0, run, plan.epochBase ?? 0);
      if (signal.aborted || !this.#leading() || pages < 0) return;
      // A rerun's first publish: the records of the runs before that this run did not plan again go first.
      if (run > 1 && plan.generation === 0) await retireRecords(core, this.#role.view, run, ids);
      if (signal.aborted || !this.#leading()) return;
      // Splits of earlier planner runs count, dealt or not; residuals cut from running splits do not (they
      // are no plan's), nor records of earlier job runs.
      const planned = this.#role.view.splits.planned(run);
      const next: PlanRecord = {
        ...plan,
        finality,
        generation: plan.generation + 1,
        planned,
        publishedAt: clock.wallNow(),
      };
      if (pages > 0) next.pages = pages;
      else delete next.pages;
      const terms = addPageTerms(plan.pageTerms, plan.pages ?? 0, pages, term);
      if (terms) next.pageTerms = terms;
      else delete next.pageTerms;
      delete next.outcome;
      if (cursor !== undefined) next.cursor = cursor;
      // Publish at the revision read before planning: a newer term wins.
      const r = await store.update(keys.plan, encodeRecord(next), cur.revision);
      if (!r.ok) {
        // A newer term (we are deposed: the leader's pass steps down), or the
        // record moved under our own term (then plan again from what it holds).
        this.#past = Math.max(this.#past, cur.revision + 1);
        const now = await this.#read(store);
        const t = now && now !== "stale" ? now.record.term : term;
        log("warn", "Plan publish lost its CAS", { term, planTerm: t });
        if (t <= term && this.#leading()) this.schedule(0);
        this.#core.schedule();
        return;
      }
      this.failures = 0;
      this.lastError = undefined;
      const published = { term, generation: next.generation, finality: next.finality, planned: next.planned, seeded: created };
      log("info", "Plan published", published);
      core.trace.decision("plan.published", published);
      this.#core.schedule();
      // A listing in parts: its next part now (the planner said there is more), else at the replan interval.
      if (more) this.#published = { record: next, revision: r.revision };
      if (next.finality === "open") this.schedule(more ? 0 : config.replanIntervalMs);
    } catch (e) {
      if (signal.aborted) return;
      if (span) failSpan(span, e);
      this.lastError = e instanceof Error ? e.message : String(e);
      if (e instanceof SplitleaseError && e.code === "STORE_UNAVAILABLE") {
        // The store, not the planner: retry (seeding is idempotent) without counting it.
        const delay = Math.round(this.#core.timings.planOutageRetryMs * (0.75 + 0.5 * this.#core.random()));
        log("warn", "Planning interrupted by a store outage; retrying", { error: this.lastError, term, retryInMs: delay });
        if (this.#leading()) this.schedule(delay);
        return;
      }
      this.failures++;
      this.#core.stats.planFailures++;
      if (this.failures >= config.planAttempts) {
        const failed = { error: this.lastError, term, failures: this.failures };
        log("error", "Planning failed for good: the job fails", failed);
        core.trace.decision("plan.failed_for_good", failed);
        await this.#fail(store, term).catch((err) => {
          log("warn", "Could not publish the failed plan; retrying", { error: String(err) });
          if (this.#leading()) this.schedule(this.#core.timings.planFailRetryMs);
        });
      } else {
        // Exponential backoff with ±25% jitter, capped at a lease.
        const base = Math.min(this.#core.timings.planBackoffMaxMs, 250 * 2 ** Math.min(this.failures - 1, 12));
        const delay = Math.round(base * (0.75 + 0.5 * this.#core.random()));
        const failed = { error: this.lastError, term, failures: this.failures, retryInMs: delay };
        log("error", "Planning failed; retrying", failed);
        core.trace.decision("plan.failed", failed);
        if (this.#leading()) this.schedule(delay);
      }
    }
  }

  /** Planning again soon: what the store answered cannot be decided on (it is older than what we know). */
  #again(why: string): void {
    this.#core.log("debug", "Planning again: a stale read", { why });
    if (this.#leading()) this.schedule(this.#core.timings.heartbeatRetryMs);
  }

  /** Publishes the terminal outcome `planFailed` (CAS, at our term). */
  async #fail(store: Core["store"], term: number): Promise<void> {
    for (let i = 0; i < 4; i++) {
      const cur = await this.#read(store);
      if (cur === "stale") throw new StoreUnavailableError("get", this.#core.config.opTimeoutMs, { detail: "the store kept answering with an older plan record" });
      if (!cur) return;
      const plan = cur.record;
      if (plan.term > term) return; // deposed
      const next: PlanRecord = {
        ...plan,
        outcome: { kind: "planFailed", error: (this.lastError ?? "unknown").slice(0, 2000), attempts: this.failures, term },
      };
      if ((await store.update(keys.plan, encodeRecord(next), cur.revision)).ok) return;
      this.#past = Math.max(this.#past, cur.revision + 1);
    }
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
  async #seed(
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
