/**
 * Tenancies that ended while the store still names this worker (a
 * self-fence, a release or forced release lost to an outage, a grant that
 * arrived while it took no work or from before its last self-fence): once a
 * heartbeat lands each is resumed by CAS (epoch + 1, no attempt) or, when
 * the worker no longer takes work, released — unless it moved on meanwhile.
 *
 * @module
 */
import { SplitleaseError } from "../../errors.ts";
import type { Core } from "../core.ts";
import { specOf } from "../cuts.ts";
import type { Tenancies } from "./tenancies.ts";
import type { Dormant, Tenancy } from "./tenancy.ts";
import { heldBy, openRecord, releaseRecord } from "../../records/transitions.ts";

/** The dormant tenancies of one worker. */
export class DormantTenancies {
  readonly #core: Core;
  readonly #tenancies: Tenancies;
  readonly #mayClaim: () => boolean;
  readonly #lanesFree: () => number;
  readonly #start: (id: string, t: Omit<Tenancy, "prog">, kind: string) => Promise<boolean>;
  #entries = new Map<string, Dormant>();
  /** Entries whose resume (or release) write is out: they still take a lane until it returns. */
  readonly #resuming = new Set<string>();
  #pass: Promise<void> | undefined;

  /**
   * `mayClaim` says whether new work may be taken (running, not draining,
   * not fenced); `lanesFree` how many lanes the splits not dormant leave;
   * `start` starts a tenancy it resumed (`ClaimRecovery.start`: its
   * progress record fenced first).
   */
  constructor(
    core: Core,
    tenancies: Tenancies,
    mayClaim: () => boolean,
    lanesFree: () => number,
    start: (id: string, t: Omit<Tenancy, "prog">, kind: string) => Promise<boolean>,
  ) {
    this.#core = core;
    this.#tenancies = tenancies;
    this.#mayClaim = mayClaim;
    this.#lanesFree = lanesFree;
    this.#start = start;
  }

  /**
   * Remembers a tenancy that ended while the store still names us (a
   * self-fence, a release or forced release lost to an outage): once
   * heartbeats land again it is resumed (or released, if we no longer take
   * work), unless it moved on meanwhile.
   */
  remember(id: string, d: Dormant): void {
    this.#entries.set(id, d);
  }

  /** How many tenancies wait to be resumed or released, or are being resumed now. */
  get size(): number {
    return this.#entries.size + this.#resuming.size;
  }

  /** Whether `id` waits to be resumed, or is being resumed now. */
  has(id: string): boolean {
    return this.#entries.has(id) || this.#resuming.has(id);
  }

  /** Forgets `id` (the leader dropped it). */
  delete(id: string): void {
    this.#entries.delete(id);
  }

  /**
   * Resumes remembered tenancies (epoch + 1, no attempt) — or releases them
   * when we no longer take work — unless they moved on. Entries that meet an
   * outage stay for the next heartbeat.
   */
  async resume(): Promise<void> {
    // A caller (close(), after its releases) waits for the pass in flight and
    // then runs one of its own: a resume that lands while we leave must be
    // handed back, not left running past the leave.
    while (this.#pass) await this.#pass;
    if (this.#entries.size === 0) return;
    this.#pass = this.#resumeAll().finally(() => (this.#pass = undefined));
    return this.#pass;
  }

  async #resumeAll(): Promise<void> {
    const { splits, me, config, stats, log } = this.#core;
    // Tenancies that ran before (they have progress) first: a grant that came
    // while we took no work may not fit the lanes they leave, and is handed
    // back (released, no attempt) rather than run past maxInFlight.
    const all = [...this.#entries].sort(([, a], [, b]) => (a.ran || a.record.progress ? 0 : 1) - (b.ran || b.record.progress ? 0 : 1));
    this.#entries.clear();
    let room = this.#lanesFree();
    const lane = new Map(all.map(([id]) => [id, room-- > 0]));
    await Promise.all(all.map(async ([id, d]) => {
      if (this.#tenancies.held.has(id)) return;
      let { record, revision } = d;
      this.#resuming.add(id);
      try {
        let keep = false;
        const r = await splits.cas(id, d, (rec, rev) => {
          // Our own late write landed: go again at its revision.
          record = rec;
          revision = rev;
          keep = !d.release && this.#mayClaim() && lane.get(id) === true;
          const at = this.#core.clock.wallNow();
          if (keep) stats.claimAttempts++;
          return keep ? openRecord(rec, me, false, config.maxAttempts, at) : releaseRecord(rec, null, at);
        }, { kind: "resume", attempts: 4, keep: (rec) => heldBy(rec, me, d.epoch) }); // moved on meanwhile: nothing to do
        if (!r.ok) return;
        const next = r.record;
        if (!keep || next.status !== "runnable") return;
        if (this.#tenancies.held.has(id)) return;
        if (!this.#mayClaim()) {
          // Fenced or leaving while the CAS was out: the next pass resumes or releases it.
          this.#entries.set(id, { epoch: next.epoch, revision: r.revision, record: next, spec: specOf(d.spec, next) });
          return;
        }
        const t = { epoch: next.epoch, revision: r.revision, record: next, spec: specOf(d.spec, next), draining: false, to: null };
        try {
          await this.#start(id, t, "resume");
        } catch (e) {
          // Resumed in the store, not started (its fence met an outage): tried again at the next heartbeat.
          if (!(e instanceof SplitleaseError && e.code === "STORE_UNAVAILABLE")) throw e;
          this.#entries.set(id, { epoch: next.epoch, revision: r.revision, record: next, spec: t.spec, ran: d.ran });
        }
      } catch (e) {
        if (e instanceof SplitleaseError && e.code === "STORE_UNAVAILABLE") {
          this.#entries.set(id, { ...d, record, revision });
        } else if (e instanceof SplitleaseError && e.code === "INVALID_RECORD") {
          // Unreadable (garbage written over it): nobody else can reassign it
          // either. Tried again at every beat until it is repaired; then
          // resumed if it still names us, forgotten if it moved on.
          if (!d.unreadable) log("warn", "Split record unreadable; the split is resumed once it is repaired", { split: id, error: String(e) });
          this.#entries.set(id, { ...d, record, revision, unreadable: true });
        } else log("warn", "Could not resume a split; the leader reassigns it", { split: id, error: String(e) });
      } finally {
        this.#resuming.delete(id);
      }
    }));
  }
}
