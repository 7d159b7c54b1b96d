/**
 * What every member watches and does on its own (docs/DESIGN.md, "Who
 * watches what"): the `leader` record (for elections), the `plan` record
 * (plan state and the job outcome) and its own `assign.<instance>` record,
 * whose directives it follows — claim offers into free lanes, start grants,
 * answer revokes, stop drops — plus resuming its own splits after a
 * self-fence.
 *
 * @module
 */
import {
  type AssignRecord,
  AssignRecordSchema,
  type JobOutcome,
  type LeaderRecord,
  LeaderRecordSchema,
  type PlanRecord,
  PlanRecordSchema,
  safeDecodeRecord,
} from "../../records.ts";
import { keys } from "../../store/keys.ts";
import type { StoreEntry, WatchEvent } from "../../store/store.ts";
import type { Core } from "../core.ts";
import type { Versioned } from "../versioned.ts";
import { DormantTenancies } from "./dormant.ts";
import { LivenessTracker } from "../liveness.ts";
import { SpecReader } from "./spec_reader.ts";
import { ClaimRecovery } from "./claim_recovery.ts";
import { Claims } from "./claims.ts";
import type { Tenancies } from "./tenancies.ts";
import type { Dormant } from "./tenancy.ts";
import { WatchSet } from "../watch_set.ts";

/** The member side of a coordinator. */
export class Follower {
  readonly #core: Core;
  readonly #tenancies: Tenancies;
  readonly #mayClaim: () => boolean;
  readonly #watches: WatchSet;
  /** The leader record and this member's judgement of its liveness. */
  leader: Versioned<LeaderRecord> | undefined;
  readonly leaderLiveness: LivenessTracker = new LivenessTracker();
  /** The plan record. */
  plan: Versioned<PlanRecord> | undefined;
  /** The last assignment record addressed to this session. */
  assign: Versioned<AssignRecord> | undefined;
  /** Unreadable records seen by this member: key → message. */
  readonly invalid: Map<string, string> = new Map();
  /** Highest leader term seen anywhere (older assignment records are ignored). */
  maxTerm = 0;
  /** Outcome announced (once). */
  outcome: "allComplete" | "stalled" | "planFailed" | null = null;
  /**
   * The job is paused (its plan record says so): this member claims
   * nothing and hands back what it runs (see {@linkcode Follower.paused}'s
   * handling in `#checkPause`).
   */
  paused = false;
  /** The plan's outcome record behind an announced `allComplete` or `stalled`. */
  #announced: JobOutcome | undefined;
  /** Revisions of control records (`leader`, `plan`, our `member.`/`assign.`) that are unreadable: they are replaced by CAS. */
  readonly unreadable: Map<string, number> = new Map();
  readonly #dormant: DormantTenancies;
  readonly #recovery: ClaimRecovery;
  readonly #claims: Claims;
  /** The last ask to cut each split told to our lanes. */
  readonly #asked = new Map<string, number>();

  /** `mayClaim` says whether new work may be taken (running, not draining, not fenced). */
  constructor(core: Core, tenancies: Tenancies, mayClaim: () => boolean) {
    this.#core = core;
    this.#tenancies = tenancies;
    this.#mayClaim = mayClaim;
    this.#dormant = new DormantTenancies(
      core,
      tenancies,
      mayClaim,
      () => core.lanes() - this.#claims.busyLanes() + this.#dormant.size,
      (id, t, kind) => this.#recovery.start(id, t, kind),
    );
    const specs = new SpecReader(core);
    this.#recovery = new ClaimRecovery(core, tenancies, specs, mayClaim, (id) => {
      this.#claims.retry(this.assign?.record.offers.find((x) => x.id === id), id);
      this.#core.schedule();
    }, (id) => this.#claims.busyLanes(id) >= core.lanes());
    this.#claims = new Claims(core, tenancies, mayClaim, this.#dormant, specs, this.#recovery);
    this.#watches = new WatchSet(core, (f, ev, live) => this.#apply(f, ev, live));
  }

  /** Opens the three watches; resolves once their snapshots are in. */
  open(): Promise<void> {
    return this.#watches.open([keys.leader, keys.plan, keys.assign(this.#core.me.instance)]);
  }

  /** Stops watching. */
  stop(): Promise<void> {
    this.#recovery.stop();
    return this.#watches.stop();
  }

  /** Splits being claimed now (count and weight). */
  /** Lanes taken now: held, being claimed or started, dormant, recovering (see `Claims.busyLanes`). */
  busyLanes(): number {
    return this.#claims.busyLanes();
  }

  get claiming(): ReadonlyMap<string, number> {
    return this.#claims.claiming;
  }

  /** Offers not yet claimed. */
  get offered(): number {
    return this.#claims.offered;
  }

  /**
   * Notes the revision of the member-record write that ended our last
   * self-fence: grants at older split revisions are resumed by CAS.
   */
  restored(revision: number): void {
    this.#claims.restoredAt = revision;
  }

  /** Claims offers into free lanes; returns when to look again (see {@linkcode Claims.pump}). */
  pump(): number {
    // An ask that came before its tenancy (a claim whose reply is still on its way) is told once it starts.
    const a = this.assign?.record;
    if (a?.cuts?.length) this.#onCuts(a.cuts, a.term);
    return this.#claims.pump();
  }

  // --- watch events -------------------------------------------------------------

  #apply(filter: string, ev: WatchEvent, live: boolean): void {
    if (ev.type === "ready") return;
    if (ev.type === "reset") return; // single keys: the snapshot that follows rewrites them
    const { clock } = this.#core;
    // One key per watch: an older revision than the one applied is a late
    // delivery, never news (and applying it would forget newer directives).
    const held = filter === keys.leader ? this.leader : filter === keys.plan ? this.plan : this.assign;
    if (held && held.revision >= ev.revision) return;
    if (ev.type === "delete") {
      this.invalid.delete(ev.key);
      this.unreadable.delete(ev.key);
      if (ev.key === keys.leader) {
        this.leader = undefined;
        this.leaderLiveness.forget(keys.leader);
      } else if (ev.key === keys.plan) this.plan = undefined;
      else this.assign = undefined;
      this.#core.schedule();
      return;
    }
    if (filter === keys.leader) {
      const r = this.#decode(ev.key, ev.value, LeaderRecordSchema, ev.revision);
      if (!r) return;
      this.leader = { record: r, revision: ev.revision };
      this.leaderLiveness.observe(keys.leader, ev.revision, clock.now());
      this.#seeTerm(r.term);
    } else if (filter === keys.plan) {
      const r = this.#decode(ev.key, ev.value, PlanRecordSchema, ev.revision);
      if (!r) return;
      this.plan = { record: r, revision: ev.revision };
      this.#seeTerm(r.term);
      this.#checkOutcome(live);
      this.#checkPause();
    } else {
      const r = this.#decode(ev.key, ev.value, AssignRecordSchema, ev.revision);
      if (!r) return;
      this.#onAssign(r, ev.revision);
    }
    this.#core.schedule();
  }

  /**
   * Applies a record read directly (after a lost CAS on it) as if the watch
   * had delivered it: our view may lag the store, and deciding again on the
   * lagging view would retry the same losing write at once.
   */
  applyRead(filter: string, entry: StoreEntry): void {
    this.#apply(filter, { type: "put", key: entry.key, value: entry.value, revision: entry.revision }, true);
  }

  #decode<T>(key: string, value: string, schema: Parameters<typeof safeDecodeRecord<T>>[2], revision: number): T | undefined {
    const r = safeDecodeRecord(key, value, schema);
    if (r.ok) {
      this.invalid.delete(key);
      this.unreadable.delete(key);
      return r.value;
    }
    this.invalid.set(key, r.error.message);
    this.unreadable.set(key, revision);
    this.#core.log("error", "Unreadable record: it is replaced by the next write of its writer", { key, error: r.error.message });
    this.#core.schedule();
    return undefined;
  }

  #seeTerm(term: number): void {
    if (term > this.maxTerm) this.maxTerm = term;
  }

  /**
   * Announces the job outcome once. A failed plan counts only when it fails
   * while we watch, in the term that decided it: a member that joins a
   * failed job waits for the next leader, which plans again (a restart
   * retries). An announced `allComplete` or `stalled` that the plan record
   * no longer carries (cleared after a requeue or cancel, or replaced by
   * another outcome, counts included) is withdrawn with `reopened`, and the
   * next outcome is announced again: a plan watch that lagged may deliver
   * only the new outcome, never the record that cleared the old one.
   */
  #checkOutcome(live: boolean): void {
    const plan = this.plan?.record;
    const o = plan?.outcome;
    const was = this.outcome;
    if (plan && (was === "allComplete" || was === "stalled") && !sameOutcome(o, this.#announced)) {
      this.outcome = null;
      this.#core.events.push({ type: "reopened", was });
      this.#core.log("warn", "Job outcome withdrawn: the job runs again", { event: "reopened", was });
    }
    if (!o || this.outcome) return;
    const { events, log } = this.#core;
    if (o.kind !== "planFailed") this.#announced = o;
    // What the job skipped rides on the event and the line: "done except 1 cancelled" is not "all done".
    const skipped = { ...(o.kind !== "planFailed" && o.cancelled ? { cancelled: o.cancelled } : {}) };
    if (o.kind === "allComplete") {
      this.outcome = "allComplete";
      events.push({ type: "allComplete", completed: o.completed, ...skipped });
      log("info", "Job complete", { event: "allComplete", completed: o.completed, ...skipped });
    } else if (o.kind === "stalled") {
      this.outcome = "stalled";
      const counts = { completed: o.completed, quarantined: o.quarantined, ...skipped, ...(o.permanent ? { permanent: o.permanent } : {}) };
      events.push({ type: "stalled", ...counts });
      log("error", "Job stalled on quarantined splits", { event: "stalled", ...counts });
    } else if (live && o.term === plan!.term) {
      this.outcome = "planFailed";
      events.push({ type: "planFailed", error: o.error, attempts: o.attempts });
      log("error", "Job failed: planning failed", { event: "planFailed", error: o.error, attempts: o.attempts });
    }
  }

  /**
   * A pause, or its end, seen on the plan record. Paused, this member hands
   * back every split it runs: each lane is asked to revoke (the source
   * commits its tail and returns; forced after `drainDeadlineMs`) and
   * released to nobody — no attempt charged, the epoch kept, so the split
   * resumes from its last commit — and it claims nothing meanwhile (the
   * coordinator's `mayClaim` reads `paused`): offers are not claimed,
   * grants are released at the next beat. Resumed, it takes work again
   * from the leader's next offers. The member decides this from its own
   * plan watch, so a fleet without a leader pauses too.
   */
  #checkPause(): void {
    const plan = this.plan?.record;
    const paused = plan?.paused !== undefined && plan.outcome === undefined;
    if (paused === this.paused) return;
    this.paused = paused;
    const { events, log } = this.#core;
    if (paused) {
      const held = [...this.#tenancies.held.keys()];
      events.push({ type: "paused", handingBack: held.length });
      log("warn", "Job paused: handing back the splits held, claiming nothing", {
        event: "paused",
        handingBack: held.length,
        ...(plan?.paused?.by ? { by: plan.paused.by } : {}),
        ...(plan?.paused?.reason ? { reason: plan.paused.reason } : {}),
      });
      for (const id of held) {
        const t = this.#tenancies.held.get(id);
        // A lane already revoked (a steal, a drain) hands back to nobody now: a thief would only hand it back again.
        if (t?.draining && !t.cancelled) this.#tenancies.unnameSuccessor(id);
        else this.#tenancies.requestRevoke(id, null, false, true);
      }
    } else {
      events.push({ type: "resumed" });
      log("info", "Job resumed: taking work again", { event: "resumed" });
    }
    this.#core.schedule();
  }

  // --- directives -------------------------------------------------------------------

  #onAssign(a: AssignRecord, revision: number): void {
    const { me } = this.#core;
    if (a.session !== me.session) return; // addressed to a predecessor (or a twin): not ours
    if (a.term < this.maxTerm) return; // a deposed leader's late write
    this.#seeTerm(a.term);
    this.assign = { record: a, revision };
    const held = this.#tenancies.held;
    for (const d of a.drops) {
      this.#dormant.delete(d.id);
      if (held.get(d.id)?.epoch === d.epoch) this.#tenancies.lose(d.id, d.reason === "cancelled" ? "fenced" : d.reason);
    }
    const revoked = new Set<string>();
    for (const r of a.revokes) {
      if (held.get(r.id)?.epoch !== r.epoch) continue;
      revoked.add(r.id);
      this.#tenancies.requestRevoke(r.id, r.to ?? null, true);
    }
    // A forced release still being written goes to whom this record names (nobody, if it lists no revoke).
    for (const [id, t] of this.#tenancies.releasing) {
      const r = a.revokes.find((x) => x.id === id && x.epoch === t.epoch);
      this.#tenancies.renameReleasing(id, t.epoch, r?.to ?? null);
    }
    for (const [id, t] of held) {
      if (!t.draining || t.cancelled || revoked.has(id)) continue;
      // A revoke missing while a terminal write of ours is in flight may have
      // been answered by it (not withdrawn): keep the revocation, but no later
      // write (a retry, the forced release at the deadline) goes to that successor.
      if ((t.ending ?? 0) > 0) {
        this.#tenancies.unnameSuccessor(id);
        continue;
      }
      // Withdrawn; but while paused the hand-back goes on (to nobody, at the drain deadline if need be).
      if (t.byLeader && !this.paused) this.#tenancies.cancelRevoke(id);
      else this.#tenancies.unnameSuccessor(id); // our own drain goes on; the leader no longer names a successor
    }
    for (const g of a.grants) void this.#claims.grant(g);
    this.#claims.setOffers(a.offers);
    this.#onCuts(a.cuts ?? [], a.term);
  }

  /**
   * Asks to cut a held split's remaining work: told to the lane's owner
   * once per ask (`splitRequested`), never for a split being revoked or
   * with a cut of ours still being written. Not answering declines.
   */
  #onCuts(cuts: NonNullable<AssignRecord["cuts"]>, term: number): void {
    const held = this.#tenancies.held;
    for (const c of cuts) {
      const t = held.get(c.id);
      if (!t || t.epoch !== c.epoch || t.draining || (t.cut && !t.cut.landed)) continue;
      const n = term * 2 ** 20 + c.ask; // a new leader numbers its asks afresh
      if ((this.#asked.get(c.id) ?? -1) >= n) continue;
      this.#asked.set(c.id, n);
      this.#core.events.push({ type: "splitRequested", splitId: c.id, epoch: c.epoch, parts: c.parts });
    }
    if (this.#asked.size > 2 * (cuts.length + 64)) {
      const live = new Set(cuts.map((c) => c.id));
      for (const id of this.#asked.keys()) if (!live.has(id)) this.#asked.delete(id);
    }
  }

  // --- tenancies that ended without a write of ours (dormant.ts) ----------------------

  /** Remembers a tenancy that ended while the store still names us (see {@linkcode DormantTenancies}). */
  remember(id: string, d: Dormant): void {
    this.#dormant.remember(id, d);
  }

  /** How many tenancies wait to be resumed or released. */
  get dormant(): number {
    return this.#dormant.size;
  }

  /** Resumes (or releases) the dormant tenancies; waits for a pass in flight first. */
  resume(): Promise<void> {
    return this.#dormant.resume();
  }
}

/** Whether two job outcomes are the same decision (kind and counts). */
function sameOutcome(a: JobOutcome | undefined, b: JobOutcome | undefined): boolean {
  if (!a || !b || a.kind !== b.kind) return false;
  if (a.kind === "planFailed" || b.kind === "planFailed") return a.kind === b.kind;
  return a.completed === b.completed && (a.cancelled ?? 0) === (b.cancelled ?? 0) &&
    (a.kind === "stalled" ? a.quarantined : 0) === (b.kind === "stalled" ? b.quarantined : 0) &&
    (a.kind === "stalled" ? a.permanent ?? 0 : 0) === (b.kind === "stalled" ? b.permanent ?? 0 : 0);
}
