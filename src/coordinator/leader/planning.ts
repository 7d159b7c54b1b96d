/**
 * Planning on the leader (docs/DESIGN.md, "Plans"): runs the planner off the
 * heartbeat path, streams its splits into the store — ids checked as they
 * come, one create-if-absent per split (two when the descriptor goes to
 * `spec.`), pipelined up to `seedConcurrency` — counts `planned` from what was
 * seeded, and publishes by CAS at the revision read before planning, so a
 * deposed leader's publish loses. Failed runs are retried with backoff.
 *
 * @module
 */
import { InvalidRecordError, SplitleaseError, StoreUnavailableError, ValueTooLargeError } from "../../errors.ts";
import {
  decodeRecord,
  encodeRecord,
  INLINE_DESCRIPTOR_BYTES,
  type Json,
  PlanRecordSchema,
  type PlanRecord,
  safeDecodeRecord,
  type SpecRecord,
  SpecRecordSchema,
  type SplitRecord,
} from "../../records.ts";
import { assertValidId, keys } from "../../store/keys.ts";
import { MAX_VALUE_BYTES } from "../../store/store.ts";
import { causedBy, type Core } from "../core.ts";
import type { Span } from "@opentelemetry/api";
import { failSpan, within } from "../../tracing/spans.ts";
import type { LeaderRole } from "./role.ts";
import { openRecord, rerunRecord, seedRecord } from "../../records/transitions.ts";
import type { SplitRecords } from "../split_records.ts";
import type { PlannedSplit, Planner } from "../types.ts";

const encoder = new TextEncoder();

/** The planner side of one leader term. */
export class Planning {
  readonly #core: Core;
  readonly #planner: Planner;
  readonly #role: LeaderRole;
  readonly #leading: () => boolean;
  #timer: unknown;
  #running = false;
  #abort = new AbortController();
  /** Consecutive failed runs. */
  failures = 0;
  /** The last failure, for status. */
  lastError: string | undefined;

  constructor(core: Core, planner: Planner, role: LeaderRole, leading: () => boolean) {
    this.#core = core;
    this.#planner = planner;
    this.#role = role;
    this.#leading = leading;
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
      const cur = await store.get(keys.plan);
      if (!cur) throw new InvalidRecordError(keys.plan, `the record vanished during term ${term}`, []);
      const plan = decodeRecord(keys.plan, cur.value, PlanRecordSchema);
      if (plan.term !== term) {
        log("warn", "Leader deposed before planning", { term, planTerm: plan.term });
        this.#core.schedule(); // the leader's pass sees the newer term and steps down
        return;
      }
      if (plan.finality === "final" && plan.generation > 0) return; // planned once
      if (plan.outcome) return; // failed for good in this term (a new leader clears it and plans again)
      const planner = () => this.#planner({ cursor: plan.cursor, term, signal });
      const result = await (span ? within(span, planner) : planner());
      if (signal.aborted || !this.#leading()) return;
      const run = plan.run ?? 1;
      const { created, ids } = await this.#seed(core, result.splits, term, signal, run, plan.epochBase ?? 0);
      if (signal.aborted || !this.#leading()) return;
      // A rerun's first publish: the records of the runs before that this run did not plan again go first (see #retire).
      if (run > 1 && plan.generation === 0) await this.#retire(core, run, ids);
      if (signal.aborted || !this.#leading()) return;
      // Splits of earlier planner runs count; residuals cut from running splits do not (they are no plan's), nor records of earlier job runs.
      for (const [id, e] of this.#role.view.splits) if (e.record.parent === undefined && (e.record.run ?? 1) >= run) ids.add(id);
      const next: PlanRecord = {
        ...plan,
        finality: result.finality,
        generation: plan.generation + 1,
        planned: ids.size,
        publishedAt: clock.wallNow(),
      };
      delete next.outcome;
      if (result.cursor !== undefined) next.cursor = result.cursor;
      // Publish at the revision read before planning: a newer term wins.
      const r = await store.update(keys.plan, encodeRecord(next), cur.revision);
      if (!r.ok) {
        // A newer term (we are deposed: the leader's pass steps down), or the
        // record moved under our own term (then plan again from what it holds).
        const now = await store.get(keys.plan);
        const t = now ? decodeRecord(keys.plan, now.value, PlanRecordSchema).term : term;
        log("warn", "Plan publish lost its CAS", { term, planTerm: t });
        if (t === term && this.#leading()) this.schedule(0);
        this.#core.schedule();
        return;
      }
      this.failures = 0;
      this.lastError = undefined;
      const published = { term, generation: next.generation, finality: next.finality, planned: next.planned, seeded: created };
      log("info", "Plan published", published);
      core.trace.decision("plan.published", published);
      this.#core.schedule();
      if (next.finality === "open") this.schedule(config.replanIntervalMs);
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

  /**
   * The first publish of a rerun removes the split records of the runs
   * before that this run did not plan again — residuals cut from old
   * splits, splits the planner no longer returns — so that they count in
   * no outcome of this run and none is dealt; their totals are in the plan
   * record's history. Records that list residuals go first: a residual
   * whose record vanishes while a record still lists it would be created
   * again. Each delete is guarded by the revision the view holds (a record
   * that changed meanwhile is read and judged again); epochs stay safe,
   * since every record of this run starts above `epochBase`.
   */
  async #retire(core: Core, run: number, planned: ReadonlySet<string>): Promise<void> {
    const old = [...this.#role.view.splits].filter(([id, e]) => (e.record.run ?? 1) < run && !planned.has(id));
    old.sort(([, a], [, b]) => (b.record.residuals?.length ?? 0) - (a.record.residuals?.length ?? 0));
    let removed = 0;
    for (const [id, e] of old) {
      let revision = e.revision, spec = e.record.spec === true;
      for (let i = 0; i < 4; i++) {
        if ((await core.store.delete(keys.split(id), revision)).ok) {
          removed++;
          if (spec) await core.store.delete(keys.spec(id)).catch(() => {});
          break;
        }
        const cur = await core.splits.read(id).catch(() => undefined);
        if (!cur || (cur.record.run ?? 1) >= run) break;
        revision = cur.revision;
        spec = cur.record.spec === true;
      }
    }
    if (old.length > 0) core.log("info", "Rerun: removed the split records of earlier runs this run does not plan", { run, removed, found: old.length });
  }

  /** Publishes the terminal outcome `planFailed` (CAS, at our term). */
  async #fail(store: Core["store"], term: number): Promise<void> {
    for (let i = 0; i < 4; i++) {
      const cur = await store.get(keys.plan);
      if (!cur) return;
      const plan = decodeRecord(keys.plan, cur.value, PlanRecordSchema);
      if (plan.term !== term) return; // deposed
      const next: PlanRecord = {
        ...plan,
        outcome: { kind: "planFailed", error: (this.lastError ?? "unknown").slice(0, 2000), attempts: this.failures, term },
      };
      if ((await store.update(keys.plan, encodeRecord(next), cur.revision)).ok) return;
    }
  }

  /**
   * Reads the planner's whole result, validated as it comes (a duplicate id
   * refuses the plan, naming every duplicate, before anything is seeded),
   * then seeds it heaviest first (equal weights in the planner's order)
   * create-if-absent with up to `seedConcurrency` writes in flight, each
   * landed seed applied to the leader's view so it is dealt at once.
   */
  async #seed(
    core: Core,
    splits: Iterable<PlannedSplit> | AsyncIterable<PlannedSplit>,
    term: number,
    signal: AbortSignal,
    run: number,
    epochBase: number,
  ): Promise<{ created: number; ids: Set<string> }> {
    const { store, splits: records, config } = core;
    const view = this.#role.view;
    const ids = new Set<string>();
    const duplicates: string[] = [];
    let created = 0;
    let failure: unknown;
    const inflight = new Set<Promise<void>>();
    const one = async (id: string, weight: number, descriptor: Json, n: number) => {
      const text = JSON.stringify(descriptor);
      const inline = text.length <= INLINE_DESCRIPTOR_BYTES && encoder.encode(text).byteLength <= INLINE_DESCRIPTOR_BYTES;
      if (!inline) {
        const spec: SpecRecord = { v: 2, descriptor, weight, term };
        // A rerun's planner may describe a split anew: its spec (immutable within a run) is replaced.
        if (!(await store.create(keys.spec(id), encodeRecord(spec))).ok && run > 1) await replaceSpec(store, id, spec);
      }
      // A member with idle lanes gets the split in its seed (epoch 1, a
      // grant): one write less than seeding it free and having it claimed.
      const heir = this.#role.reserveIdle(n, planned.length);
      const at = this.#core.clock.wallNow();
      // In a rerun (run > 1), above every epoch of the runs before, carrying what the split did in them.
      const make = (prev: SplitRecord | undefined) => {
        const free = run > 1 ? rerunRecord(prev, weight, inline ? descriptor : undefined, run, epochBase) : seedRecord(weight, inline ? descriptor : undefined);
        return heir ? openRecord(free, heir.member.owner, false, Infinity, at) : free; // epoch + 1, its first tenancy
      };
      try {
        // Landed, the role's view has it at once (the role hears every landed split write).
        if ((await records.create(id, make(undefined), "seed")).ok) created++;
        else if (run > 1 && (await reseed(records, id, run, make))) created++;
      } finally {
        if (heir) this.#role.unreserve(heir.lane);
      }
    };
    // The whole result first: a plan is dealt heaviest first from its first
    // grant, so nothing is seeded (and granted to an idle lane, or offered)
    // before every weight is known. Equal weights keep the planner's order.
    const planned: { id: string; weight: number; descriptor: Json }[] = [];
    for await (const s of splits) {
      if (signal.aborted) break;
      assertValidId(s.id, "split id");
      if (ids.has(s.id)) {
        if (duplicates.length < 20) duplicates.push(s.id);
        continue;
      }
      ids.add(s.id);
      const weight = s.weight ?? 1;
      if (!(typeof weight === "number" && weight > 0 && Number.isFinite(weight))) {
        throw new SplitleaseError("INVALID_ARGUMENT", `Split "${s.id}" has an invalid weight: ${weight}`);
      }
      const descriptor = s.descriptor === undefined ? null : s.descriptor;
      const size = encoder.encode(JSON.stringify(descriptor)).byteLength;
      if (size > MAX_VALUE_BYTES - 1024) throw descriptorTooLarge(s.id, size, MAX_VALUE_BYTES - 1024);
      if (duplicates.length === 0) planned.push({ id: s.id, weight, descriptor });
    }
    if (duplicates.length > 0) {
      throw new SplitleaseError(
        "INVALID_ARGUMENT",
        `The planner returned duplicate split ids: ${duplicates.map((d) => JSON.stringify(d)).join(", ")}${
          duplicates.length >= 20 ? " (and more)" : ""
        }; the plan was not published`,
      );
    }
    planned.sort((a, b) => b.weight - a.weight); // stable: equal weights in the planner's order
    for (const p of planned) view.rank(p.id); // the dealing order among equal weights
    let seeded = 0;
    for (const p of planned) {
      if (signal.aborted || failure) break;
      const s = one(p.id, p.weight, p.descriptor, seeded++).catch((e) => {
        failure ??= e;
      }).finally(() => inflight.delete(s));
      inflight.add(s);
      if (inflight.size >= config.seedConcurrency) await Promise.race(inflight);
    }
    await Promise.all(inflight);
    if (failure) throw failure;
    return { created, ids };
  }
}

/**
 * Rewrites a split record of an earlier run of the job as this run's seed
 * (`make(old)`), by CAS at the revision read; one of this run already (a
 * planner run before, another leader's) is left as it is. An unreadable
 * record is never written over (it may hold progress; it blocks
 * completion until repaired). Whether it was rewritten.
 */
async function reseed(records: SplitRecords, id: string, run: number, make: (prev: SplitRecord | undefined) => SplitRecord): Promise<boolean> {
  for (let i = 0; i < 4; i++) {
    const cur = await records.read(id).catch((e) => {
      if (e instanceof InvalidRecordError) return null;
      throw e;
    });
    if (cur === null) return false;
    if (!cur) {
      if ((await records.create(id, make(undefined), "seed")).ok) return true;
      continue;
    }
    if ((cur.record.run ?? 1) >= run) return false;
    if ((await records.write(id, make(cur.record), cur.revision, "seed")).ok) return true;
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

/**
 * A planned descriptor too large for the store, named by its split with
 * what to do: a descriptor says where the work is, not the work itself.
 */
function descriptorTooLarge(id: string, size: number, limit: number): ValueTooLargeError {
  const kib = (n: number) => `${(n / 1024).toFixed(n < 10 * 1024 ? 1 : 0)} KiB`;
  return new ValueTooLargeError(
    keys.spec(id),
    size,
    limit,
    `The descriptor of split "${id}" is ${kib(size)} of JSON (${size} bytes); a descriptor may be at most ${kib(limit)}. ` +
      "Keep the data out of the plan: store it elsewhere (an object store, a table, a file) and put a reference in the " +
      "descriptor (its object key, URL or row range), which the split's run() reads",
  );
}
