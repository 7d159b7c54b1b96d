/**
 * The leader role (DESIGN §7): election by create (or CAS over a silent
 * leader), the term bump on `plan` as the leader fence, planning off the
 * heartbeat path, seeding with bounded concurrency, publishing by CAS.
 *
 * @module
 */
import { SplitleaseError } from "../errors.ts";
import {
  decodeRecord,
  encodeRecord,
  type LeaderRecord,
  PlanRecordSchema,
  type PlanRecord,
  type SpecRecord,
} from "../records.ts";
import { assertValidId, keys } from "../store/keys.ts";
import type { Store } from "../store/store.ts";
import type { CoordinatorConfig } from "./config.ts";
import type { LivenessTracker } from "./liveness.ts";
import { seedRecord } from "./transitions.ts";
import type { Owner } from "../records.ts";
import type { Clock, Logger, PlannedSplit, Planner } from "./types.ts";
import type { JobView } from "./view.ts";

/** What the leader role needs from its coordinator. */
export interface LeadershipContext {
  store: Store;
  view: JobView;
  liveness: LivenessTracker;
  config: CoordinatorConfig;
  clock: Clock;
  me: Owner;
  planner: Planner;
  logger: Logger;
  /** Whether the coordinator may act (running, not self-fenced). */
  active(): boolean;
  /** Asks the coordinator to reconcile soon. */
  poke(): void;
}

/** Leader state machine of one coordinator. */
export class Leadership {
  #ctx: LeadershipContext;
  #leading = false;
  #electing = false;
  #term = 0;
  #leaderRev = 0;
  #record: LeaderRecord | undefined;
  #abort: AbortController | undefined;
  #timer: unknown;
  #planning = false;

  /** Creates the role for a coordinator. */
  constructor(ctx: LeadershipContext) {
    this.#ctx = ctx;
  }

  /** Whether this instance currently leads. */
  get leading(): boolean {
    return this.#leading;
  }

  /** The term this instance leads in (0 when not leading). */
  get term(): number {
    return this.#leading ? this.#term : 0;
  }

  /** Runs an election when there is no live leader. Never throws. */
  async maybeElect(): Promise<void> {
    const c = this.#ctx;
    if (this.#leading || this.#electing || !c.active()) return;
    const l = c.view.leader;
    if (l && c.liveness.alive(keys.leader, c.clock.now(), c.config.leaseMs)) {
      return;
    }
    this.#electing = true;
    try {
      await this.#elect(l?.revision);
    } catch (e) {
      c.logger("warn", "Leader election failed", { error: String(e) });
    } finally {
      this.#electing = false;
    }
  }

  async #elect(seenRevision: number | undefined): Promise<void> {
    const c = this.#ctx;
    const record: LeaderRecord = { v: 1, instance: c.me.instance, session: c.me.session, term: 0, beat: 0 };
    let won;
    if (seenRevision === undefined) {
      won = await c.store.create(keys.leader, encodeRecord(record));
    } else {
      // Re-read before deposing a silent leader: if it moved, we were behind.
      const cur = await c.store.get(keys.leader);
      if (cur && cur.revision !== c.liveness.get(keys.leader)?.revision) {
        c.liveness.observe(keys.leader, cur.revision, c.clock.now());
        c.view.putRaw(cur.key, cur.value, cur.revision);
        return;
      }
      won = cur
        ? await c.store.update(keys.leader, encodeRecord(record), cur.revision)
        : await c.store.create(keys.leader, encodeRecord(record));
    }
    if (!won.ok || !c.active()) return;
    this.#leaderRev = won.revision;
    this.#record = record;
    this.#leading = true;
    let r;
    try {
      const term = await this.#bumpTerm();
      if (term === undefined) return this.stop();
      this.#term = term;
      this.#record = { ...record, term };
      r = await c.store.update(keys.leader, encodeRecord(this.#record), this.#leaderRev);
    } catch (e) {
      // Half-elected (no term, or the term not on the leader record): stop
      // leading, so our beats stop and the lease lapses into a new election.
      // Beating on would keep every peer from electing while nobody plans.
      this.stop();
      throw e;
    }
    if (!r.ok) return this.stop();
    const term = this.#term;
    this.#leaderRev = r.revision;
    c.logger("info", "Leader elected", { instance: c.me.instance, term });
    this.#schedulePlan(0);
  }

  /** Bumps `plan.term` (the leader fence); returns the new term. */
  async #bumpTerm(): Promise<number | undefined> {
    const c = this.#ctx;
    for (let i = 0; i < 8 && this.#leading; i++) {
      const cur = await c.store.get(keys.plan);
      const prev = cur ? decodeRecord(keys.plan, cur.value, PlanRecordSchema) : undefined;
      const next: PlanRecord = prev
        ? { ...prev, term: prev.term + 1 }
        : { v: 1, term: 1, finality: "open", generation: 0, planned: 0 };
      const r = cur
        ? await c.store.update(keys.plan, encodeRecord(next), cur.revision)
        : await c.store.create(keys.plan, encodeRecord(next));
      if (r.ok) return next.term;
    }
    return undefined;
  }

  /** Leader heartbeat: one CAS on `leader`. A conflict means we were deposed. */
  async beat(): Promise<void> {
    const c = this.#ctx;
    if (!this.#leading || !this.#record) return;
    const next = { ...this.#record, beat: this.#record.beat + 1 };
    try {
      const r = await c.store.update(keys.leader, encodeRecord(next), this.#leaderRev);
      if (!this.#leading) return;
      if (r.ok) {
        this.#leaderRev = r.revision;
        this.#record = next;
      } else {
        c.logger("warn", "Leader deposed", { instance: c.me.instance, term: this.#term });
        this.stop();
        c.poke();
      }
    } catch (e) {
      c.logger("warn", "Leader heartbeat failed", { error: String(e) });
    }
  }

  #schedulePlan(delay: number): void {
    const c = this.#ctx;
    if (this.#timer !== undefined) c.clock.clearTimeout(this.#timer);
    this.#timer = c.clock.setTimeout(() => {
      this.#timer = undefined;
      void this.#planOnce();
    }, delay);
  }

  async #planOnce(): Promise<void> {
    const c = this.#ctx;
    if (!this.#leading || this.#planning) return;
    this.#planning = true;
    const abort = (this.#abort = new AbortController());
    try {
      const cur = await c.store.get(keys.plan);
      if (!cur) throw new SplitleaseError("INVALID_RECORD", `Plan record "plan" vanished during term ${this.#term}`);
      const plan = decodeRecord(keys.plan, cur.value, PlanRecordSchema);
      if (plan.term !== this.#term) {
        c.logger("warn", "Leader deposed before planning", { term: this.#term, planTerm: plan.term });
        return this.stop();
      }
      if (plan.finality === "final" && plan.generation > 0) return; // planned once
      const result = await c.planner({ cursor: plan.cursor, term: this.#term, signal: abort.signal });
      if (abort.signal.aborted || !this.#leading) return;
      const seeded = await this.#seed(result.splits, abort.signal);
      if (abort.signal.aborted || !this.#leading) return;
      const planned = (await c.store.list(keys.splitPrefix)).length;
      const next: PlanRecord = {
        ...plan,
        finality: result.finality,
        generation: plan.generation + 1,
        planned,
        publishedAt: c.clock.wallNow(),
      };
      if (result.cursor !== undefined) next.cursor = result.cursor;
      // Publish at the revision read before planning: a newer term wins.
      const r = await c.store.update(keys.plan, encodeRecord(next), cur.revision);
      if (!r.ok) {
        c.logger("warn", "Plan publish lost its CAS: a newer leader took over", { term: this.#term });
        return this.stop();
      }
      c.logger("info", "Plan published", {
        term: this.#term,
        generation: next.generation,
        finality: next.finality,
        planned,
        seeded,
      });
      c.poke();
      if (next.finality === "open") this.#schedulePlan(c.config.replanIntervalMs);
    } catch (e) {
      c.logger("error", "Planning failed; retrying", { error: String(e), term: this.#term });
      if (this.#leading) this.#schedulePlan(Math.min(c.config.replanIntervalMs, c.config.leaseMs));
    } finally {
      this.#planning = false;
    }
  }

  /** Seeds spec then split records, create-if-absent, bounded concurrency. */
  async #seed(
    splits: Iterable<PlannedSplit> | AsyncIterable<PlannedSplit>,
    signal: AbortSignal,
  ): Promise<number> {
    const c = this.#ctx;
    let created = 0;
    const inflight = new Set<Promise<void>>();
    let failure: unknown;
    const one = async (s: PlannedSplit) => {
      assertValidId(s.id, "split id");
      const weight = s.weight ?? 1;
      if (!(typeof weight === "number" && weight > 0 && Number.isFinite(weight))) {
        throw new SplitleaseError("INVALID_ARGUMENT", `Split "${s.id}" has an invalid weight: ${weight}`);
      }
      const spec: SpecRecord = { v: 1, descriptor: s.descriptor ?? null, weight, term: this.#term };
      await c.store.create(keys.spec(s.id), encodeRecord(spec));
      const r = await c.store.create(keys.split(s.id), encodeRecord(seedRecord(weight)));
      if (r.ok) created++;
    };
    for await (const s of splits) {
      if (signal.aborted || failure) break;
      const p = one(s).catch((e) => {
        failure ??= e;
      }).finally(() => inflight.delete(p));
      inflight.add(p);
      if (inflight.size >= c.config.seedConcurrency) await Promise.race(inflight);
    }
    await Promise.all(inflight);
    if (failure) throw failure;
    return created;
  }

  /** Stops leading locally (no write): aborts the planner, cancels timers. */
  stop(): void {
    this.#leading = false;
    this.#abort?.abort();
    if (this.#timer !== undefined) this.#ctx.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Stops leading and deletes the leader record so a peer takes over at once. */
  async resign(): Promise<void> {
    const was = this.#leading;
    this.stop();
    if (was) {
      try {
        await this.#ctx.store.delete(keys.leader, this.#leaderRev);
      } catch (e) {
        this.#ctx.logger("warn", "Leader resignation failed", { error: String(e) });
      }
    }
  }
}
