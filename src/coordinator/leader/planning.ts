/**
 * Planning on the leader (docs/DESIGN.md, "Plans"): runs the planner off the
 * heartbeat path, writes its splits into pages of the plan — ids checked as
 * they come, a thousand splits a write (a descriptor too large to live
 * inline goes to `spec.` first) — counts `planned` from the leader's view
 * (dealt or not), and publishes by CAS at the revision read before
 * planning, so a deposed leader's publish loses. Failed runs are retried
 * with backoff. Writing and dealing the splits of a run is `PlanSeeder`'s
 * (plan_seeder.ts).
 *
 * @module
 */
import { InvalidRecordError, SplitleaseError, StoreUnavailableError } from "../../errors.ts";
import { decodeRecord, encodeRecord, PlanRecordSchema, type PlanRecord } from "../../records.ts";
import { keys } from "../../store/keys.ts";
import { causedBy, type Core } from "../core.ts";
import type { Span } from "@opentelemetry/api";
import { failSpan, within } from "../../tracing/spans.ts";
import type { LeaderRole } from "./role.ts";
import { addPageTerms } from "./plan_pages.ts";
import { retireRecords } from "./rerun_records.ts";
import type { Planner } from "../types.ts";
import { checkPlanResult } from "./plan_result.ts";
import type { Versioned } from "../versioned.ts";
import { readAtLeast } from "../fresh_read.ts";
import { PlanSeeder } from "./plan_seeder.ts";

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
  /** Writes and deals each run's splits (the pages this term wrote are its). */
  readonly #seeder: PlanSeeder;
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
    this.#seeder = new PlanSeeder(core, role);
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
      const { created, pages, ids } = await this.#seeder.seed(core, splits, term, signal, plan.pages ?? 0, run, plan.epochBase ?? 0);
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
}
