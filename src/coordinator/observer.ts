/**
 * What this worker observes of the fleet: the five watches that feed the
 * local view, observer-judged liveness of members and the leader (DESIGN
 * §5), departures, and when the next expiry is due.
 *
 * @module
 */
import { StoreUnavailableError } from "../errors.ts";
import { keys } from "../store/keys.ts";
import type { Watch } from "../store/store.ts";
import type { Core } from "./core.ts";

/** Live peers: instance → session and lanes. */
export type LivePeers = Map<string, { session: string; maxInFlight: number }>;

const FILTERS = [keys.memberPrefix, keys.splitPrefix, keys.handoffPrefix, keys.leader, keys.plan];

/** Watches the bucket and judges liveness for one coordinator. */
export class Observer {
  readonly #core: Core;
  readonly #onChange: () => void;
  readonly #departedAt = new Map<string, number>();
  #watches: Watch[] = [];
  #stopped = false;

  /** `onChange` runs after every event once the initial snapshots are in. */
  constructor(core: Core, onChange: () => void) {
    this.#core = core;
    this.#onChange = onChange;
  }

  /**
   * Opens every watch; resolves once each delivered its snapshot. A store
   * that never finishes a snapshot fails the join (after `2 × leaseMs`, at
   * least 30 s, so a large bucket still has time) instead of hanging it.
   */
  async open(): Promise<void> {
    const { clock, config } = this.#core;
    const limitMs = Math.max(2 * config.leaseMs, 30_000);
    let timer: unknown;
    const timeout = new Promise<never>((_, reject) => {
      timer = clock.setTimeout(
        () => reject(new StoreUnavailableError("watch", limitMs, { detail: "the initial snapshot never completed" })),
        limitMs,
      );
    });
    try {
      await Promise.race([Promise.all(FILTERS.map((f) => this.#openWatch(f))), timeout]);
    } finally {
      clock.clearTimeout(timer);
    }
  }

  /** Stops every watch. */
  async stop(): Promise<void> {
    this.#stopped = true;
    await Promise.all(this.#watches.map((w) => w.stop()));
  }

  /**
   * Opens the watch over `filter` and resolves once its snapshot is in. A
   * snapshot that has not completed after `max(2 × opTimeoutMs, 2 s)` is
   * started over with a fresh watch (what it delivered so far is pruned by
   * the new snapshot), so one stuck replay does not stall the join.
   */
  async #openWatch(filter: string): Promise<void> {
    const { clock, config, log, view } = this.#core;
    const retryMs = Math.max(2 * config.opTimeoutMs, 2000);
    for (let attempt = 1; !this.#stopped; attempt++) {
      const w = this.#core.store.watch(filter);
      this.#watches.push(w);
      let timer: unknown;
      const stuck = new Promise<"stuck">((res) => (timer = clock.setTimeout(() => res("stuck"), retryMs)));
      const outcome = await Promise.race([this.#consume(filter, w), stuck]).finally(() => clock.clearTimeout(timer));
      if (outcome !== "stuck") return;
      log("warn", "Watch snapshot did not complete; starting it over", { filter, attempt, afterMs: retryMs });
      this.#watches.splice(this.#watches.indexOf(w), 1);
      await w.stop();
      view.apply(filter, { type: "reset", reason: "snapshot did not complete" });
    }
  }

  /** Applies the events of `w`; resolves at its first `ready`, rejects if it fails before. */
  #consume(filter: string, w: Watch): Promise<void> {
    const { view, clock, log } = this.#core;
    return new Promise<void>((ready, fail) => {
      let isReady = false;
      (async () => {
        for await (const ev of w) {
          const applied = view.apply(filter, ev);
          if (ev.type === "ready" && !isReady) {
            isReady = true;
            ready();
          }
          if (ev.type === "reset") log("warn", "Watch re-established", { filter, reason: ev.reason });
          if (applied) this.#observe(applied.key, applied.removed, ev.type === "put" ? ev.revision : 0, clock.now());
          if (isReady) this.#onChange();
        }
      })().catch((e) => {
        if (!isReady) fail(e);
        else if (!this.#stopped) log("error", "Watch failed", { filter, error: String(e) });
      });
    });
  }

  #observe(key: string, removed: boolean, revision: number, now: number): void {
    const { liveness, view, log } = this.#core;
    if (key === keys.leader || key.startsWith(keys.memberPrefix)) {
      const instance = key.slice(keys.memberPrefix.length);
      if (removed) {
        liveness.forget(key);
        if (key !== keys.leader) this.#departedAt.set(instance, now);
      } else {
        liveness.observe(key, revision, now);
        if (key !== keys.leader) this.#departedAt.delete(instance);
      }
    }
    const msg = view.invalid.get(key);
    if (msg) log("error", "Unreadable record skipped", { key, error: msg });
  }

  /** Live, non-draining members other than this one. */
  peers(now: number): LivePeers {
    const { view, liveness, me, config } = this.#core;
    const peers: LivePeers = new Map();
    for (const [instance, m] of view.members) {
      if (instance === me.instance || m.record.draining) continue;
      if (!liveness.alive(keys.member(instance), now, config.leaseMs)) continue;
      peers.set(instance, { session: m.record.session, maxInFlight: m.record.maxInFlight });
    }
    return peers;
  }

  /**
   * Whether `instance` at `session` is a live member, draining or not: a
   * draining member still owns its splits until it releases them.
   */
  ownerAlive(instance: string, session: string, now: number): boolean {
    const { view, liveness, me, config } = this.#core;
    if (instance === me.instance) return session === me.session;
    const m = view.members.get(instance);
    return m !== undefined && m.record.session === session &&
      liveness.alive(keys.member(instance), now, config.leaseMs);
  }

  /** Whether a dead or departed member's splits may be taken over now (rebalance delay). */
  takeable(instance: string, now: number): boolean {
    const { config, view, liveness } = this.#core;
    const delay = config.rebalanceDelayMs;
    if (delay === 0) return true;
    const deadSince = view.members.has(instance)
      ? (liveness.expiresAt(keys.member(instance), config.leaseMs) ?? now)
      : (this.#departedAt.get(instance) ?? -Infinity);
    return now >= deadSince + delay;
  }

  /** The next instant after `now` at which a member or the leader expires, or a rebalance delay ends. */
  nextExpiry(now: number): number {
    const { view, liveness, config, me } = this.#core;
    let at = Infinity;
    const consider = (t: number | undefined) => {
      if (t !== undefined && t > now) at = Math.min(at, t);
    };
    for (const [instance] of view.members) {
      if (instance === me.instance) continue;
      const exp = liveness.expiresAt(keys.member(instance), config.leaseMs);
      consider(exp);
      if (exp !== undefined && config.rebalanceDelayMs > 0) consider(exp + config.rebalanceDelayMs);
    }
    if (config.rebalanceDelayMs > 0) for (const d of this.#departedAt.values()) consider(d + config.rebalanceDelayMs);
    consider(liveness.expiresAt(keys.leader, config.leaseMs));
    return at;
  }
}
