/**
 * A member of a sharded job (docs/DESIGN.md, "Sharded jobs"): one
 * {@linkcode SplitCoordinator} per shard, each over the shard's own store
 * (its own leader, assignment records, plan and stream), behind one
 * {@linkcode Coordinator} — what a worker runs. The shards share the
 * member's lanes (`maxInFlight` counts lanes across them: each shard's
 * member takes only what the others leave, and tells its leader so) and one
 * outcome (complete when every shard is). Nothing of the protocol changes
 * inside a shard: every safety rule holds per shard, by the shard's own
 * epochs and compare-and-swaps.
 *
 * @module
 */
import { SplitleaseError } from "../errors.ts";
import type { Store } from "../store/store.ts";
import { Channel } from "../util/channel.ts";
import type { CoordinatorStats } from "./coordinator_stats.ts";
import { SplitCoordinator } from "./coordinator.ts";
import type { JoinOptions, ShardSeat } from "./join_options.ts";
import { checkShards, shardJob, shardOf } from "./shard.ts";
import { jobOutcomeOfShards, type ShardOutcome } from "./shard_outcome.ts";
import { shardedStatus, sumStats } from "./shard_status.ts";
import type { SplitProgress } from "../records.ts";
import type { CommitOptions, CoordinationEvent, Coordinator, CoordinatorStatus, CutAnswer, FailOptions } from "./types.ts";

/**
 * Options of {@linkcode ShardedCoordinator.join}: those of
 * `SplitCoordinator.join`, with `shards` and a store per shard in place of
 * the one store.
 *
 * @example
 * ```ts
 * import { MemoryStore, ShardedCoordinator } from "@splitlease/splitlease";
 * import type { ShardedJoinOptions } from "@splitlease/splitlease/admin";
 * const stores = [new MemoryStore(), new MemoryStore()];
 * const options: ShardedJoinOptions = { job: "backfill", shards: 2, stores: ({ index }) => stores[index] };
 * const c = await ShardedCoordinator.join(options);
 * await c.close();
 * ```
 */
export interface ShardedJoinOptions extends Omit<JoinOptions, "store" | "shard"> {
  /** The job's shard count (every member of the job joins with the same; 1 to 64). */
  shards: number;
  /**
   * The store of each shard, bound to job `shardJob(job, index)` (a NATS
   * bucket, a PostgreSQL job, a Redis hash tag of its own): a function the
   * coordinator calls once per shard (and closes what it opened when it
   * stops), or the stores in shard order (kept open: the caller owns them).
   */
  stores: readonly Store[] | ((shard: { index: number; job: string }) => Store | Promise<Store>);
}

/**
 * One member of a sharded job over its shards' coordinators (see the module
 * doc): a {@linkcode Coordinator} like `SplitCoordinator`'s, so a worker runs
 * on it unchanged.
 *
 * @example
 * ```ts
 * import { MemoryStore, ShardedCoordinator, startWorker, type SplitSource } from "@splitlease/splitlease";
 * declare const source: SplitSource;
 * const stores = [new MemoryStore(), new MemoryStore(), new MemoryStore(), new MemoryStore()];
 * const coordinator = await ShardedCoordinator.join({
 *   job: "backfill",
 *   shards: 4,
 *   stores: ({ index }: { index: number }) => stores[index],
 *   fingerprint: source.fingerprint(),
 *   planner: (ctx) => source.plan(ctx),
 *   maxInFlight: 8,
 * });
 * const worker = startWorker({ coordinator, source, maxInFlight: 8 });
 * await worker.done;
 * ```
 */
export class ShardedCoordinator implements Coordinator {
  readonly #job: string;
  readonly #shards: SplitCoordinator[];
  readonly #owned: Store[];
  readonly #events = new Channel<CoordinationEvent>();
  /** The shard of each split this member gained (a residual lives in its parent's shard, not where `shardOf` routes its id). */
  readonly #where = new Map<string, number>();
  readonly #outcomes: (ShardOutcome | undefined)[];
  #announced: CoordinationEvent["type"] | undefined;
  #paused = 0;
  readonly #listeners: Set<() => void>[];
  #closing: Promise<void> | undefined;

  private constructor(job: string, shards: SplitCoordinator[], owned: Store[], listeners: Set<() => void>[]) {
    this.#job = job;
    this.#shards = shards;
    this.#owned = owned;
    this.#listeners = listeners;
    this.#outcomes = shards.map(() => undefined);
    let open = shards.length;
    shards.forEach((c, i) =>
      void this.#pump(c, i).finally(() => {
        if (--open === 0) this.#events.close();
      })
    );
  }

  /**
   * Joins every shard of the job (in parallel), as one instance (the same
   * `instance` in each; generated once when absent). A shard that cannot be
   * joined fails the join: the shards joined already are closed, and the
   * stores opened are closed.
   *
   * @throws {SplitleaseError} `INVALID_CONFIG` (a bad shard count, a store
   * bound to another shard's job), and whatever `SplitCoordinator.join`
   * throws for a shard.
   */
  static async join(options: ShardedJoinOptions): Promise<ShardedCoordinator> {
    const { shards: count, stores, ...rest } = options;
    const shards = checkShards(options.job, count);
    if (Array.isArray(stores) && stores.length !== shards) {
      throw new SplitleaseError("INVALID_CONFIG", `a job of ${shards} shards needs ${shards} stores (got ${stores.length})`);
    }
    if (typeof stores !== "function" && !Array.isArray(stores)) {
      throw new SplitleaseError("INVALID_CONFIG", "stores must be a function of the shard, or an array of one store per shard");
    }
    const instance = options.instance ?? "w-" + Math.floor((options.random ?? Math.random)() * 36 ** 8).toString(36).padStart(8, "0");
    const owned: Store[] = [];
    const listeners = Array.from({ length: shards }, () => new Set<() => void>());
    const joined: (SplitCoordinator | undefined)[] = [];
    const busy = (i: number) => joined[i]?.lanesBusy ?? 0;
    // No shard takes a lane before every shard is joined: the events of a shard joined first wait in its queue
    // until this join returns, so a split it claimed or accepted would be held — heartbeats and all — by a member
    // not running it, for as long as another shard's store is slow to answer (sharded simulation, seed 2590).
    // Until then every lane is "elsewhere", and the member records say so (`away`): no leader deals to it. Nor
    // does a shard stand in elections: a join failing in another shard would have cost this one a leader term.
    let seated = false;
    try {
      // Every shard's open and join is waited for, failed or not (`settled`): one still under way when
      // another failed would be left open — a coordinator heartbeating in its shard that nothing closes, whose
      // live member record refuses the instance's next join there (DUPLICATE_INSTANCE; sharded simulation,
      // seed 2120: restarts that won elections in the other shards, then failed, over and over).
      const list = Array.isArray(stores)
        ? stores
        : await settled(Array.from({ length: shards }, async (_, index) => {
          const s = await (stores as (shard: { index: number; job: string }) => Store | Promise<Store>)({ index, job: shardJob(options.job, index) });
          owned.push(s);
          return s;
        }));
      if (new Set(list).size !== list.length) throw new SplitleaseError("INVALID_CONFIG", "each shard needs a store of its own (the same store was given twice)");
      await settled(list.map(async (store, index) => {
        const seat: ShardSeat = {
          index,
          count: shards,
          lanesElsewhere: () => {
            if (!seated) return Number.MAX_SAFE_INTEGER;
            let n = 0;
            for (let j = 0; j < shards; j++) if (j !== index) n += busy(j);
            return n;
          },
          onChange: (l) => (listeners[index].add(l), () => listeners[index].delete(l)),
          joined: () => seated,
        };
        joined[index] = await SplitCoordinator.join({ ...rest, instance, store, job: shardJob(options.job, index), shard: seat });
      }));
    } catch (e) {
      await Promise.all(joined.map((c) => c?.close().catch(() => {})));
      await Promise.all(owned.map((s) => s.close().catch(() => {})));
      throw e;
    }
    const member = new ShardedCoordinator(options.job, joined as SplitCoordinator[], owned, listeners);
    // Every shard joined: its lanes are free now (each shard rewrites its member record early and claims).
    seated = true;
    for (const l of listeners) for (const f of l) f();
    return member;
  }

  /** The instance id, the same in every shard. */
  get instance(): string {
    return this.#shards[0].instance;
  }

  /** Lanes across every shard. */
  get maxInFlight(): number {
    return this.#shards[0].maxInFlight;
  }

  /** The worst state of the shards' coordinators (one failed: failed). */
  get state(): CoordinatorStatus["state"] {
    return this.status().state;
  }

  /** The shard count. */
  get shards(): number {
    return this.#shards.length;
  }

  /** Whether this member leads shard `index` (or any shard, without one). */
  isLeader(index?: number): boolean {
    return index === undefined ? this.#shards.some((c) => c.isLeader) : this.#shards[index]?.isLeader === true;
  }

  // --- events -------------------------------------------------------------------

  /** Feeds shard `i`'s events into ours: split events as they come, job events once the job's are decided. */
  async #pump(c: SplitCoordinator, i: number): Promise<void> {
    try {
      for (;;) {
        const ev = await c.poll();
        if (!ev) break;
        this.#on(i, ev);
        this.#lanesChanged(i);
      }
    } catch (e) {
      // A shard failed (a fatal error): the member cannot keep its lane budget or its outcome: it fails, and
      // stops the other shards as a dead process would, writing nothing more. A graceful close would release
      // and delete member records in them — after DUPLICATE_INSTANCE, records a twin of this instance is
      // taking over (the twin reclaims the splits, or each shard's leader moves them after a lease).
      this.#events.fail(e);
      void this.abandon();
    }
  }

  #on(i: number, ev: CoordinationEvent): void {
    switch (ev.type) {
      case "gained":
        this.#where.set(ev.split.id, i);
        return this.#events.push(ev);
      case "allComplete":
      case "stalled":
      case "planFailed":
        this.#outcomes[i] = ev;
        return this.#decide();
      case "reopened":
        this.#outcomes[i] = undefined;
        if (this.#announced === "allComplete" || this.#announced === "stalled") {
          this.#events.push({ type: "reopened", was: this.#announced });
          this.#announced = undefined;
        }
        return;
      case "paused":
        // One pause of the job (every shard's plan record): announced once, with what this member hands back in all of them.
        if (this.#paused++ === 0) this.#events.push({ type: "paused", handingBack: this.#shards.reduce((n, s) => n + s.status().held.length, 0) });
        return;
      case "resumed":
        if (this.#paused > 0 && --this.#paused === 0) this.#events.push(ev);
        return;
      default:
        return this.#events.push(ev);
    }
  }

  /** Announces the job's outcome once every shard has one (or one's planning failed). */
  #decide(): void {
    const o = jobOutcomeOfShards(this.#outcomes);
    if (!o || this.#announced === o.event.type) return;
    this.#announced = o.event.type;
    this.#events.push(o.event);
  }

  /** Lanes taken or freed in shard `i`: the others may deal differently now. */
  #lanesChanged(i: number): void {
    for (let j = 0; j < this.#listeners.length; j++) if (j !== i) for (const l of this.#listeners[j]) l();
  }

  /** Waits for the next event; `undefined` once every shard stopped. */
  async poll(): Promise<CoordinationEvent | undefined> {
    const r = await this.#events.next();
    return r.done ? undefined : r.value;
  }

  /** The next queued event without waiting. */
  tryPoll(): CoordinationEvent | undefined {
    return this.#events.tryTake();
  }

  /** Iterates events until every shard stopped. */
  [Symbol.asyncIterator](): AsyncIterator<CoordinationEvent> {
    return { next: () => this.#events.next() };
  }

  // --- what a lane does: routed to the shard that holds its split ---------------

  #shardOf(splitId: string): SplitCoordinator {
    return this.#shards[this.#where.get(splitId) ?? shardOf(splitId, this.#shards.length)];
  }

  /** A lane's op on its split's shard; the other shards hear that lanes may have moved. */
  async #op<T>(splitId: string, f: (c: SplitCoordinator) => Promise<T>): Promise<T> {
    const i = this.#where.get(splitId) ?? shardOf(splitId, this.#shards.length);
    try {
      return await f(this.#shards[i]);
    } finally {
      this.#lanesChanged(i);
    }
  }

  /** Fenced progress commit, on the split's shard. */
  commit(splitId: string, epoch: number, progress: SplitProgress, options?: CommitOptions): Promise<void> {
    return this.#op(splitId, (c) => c.commit(splitId, epoch, progress, options));
  }

  /** Graceful release, each split on its shard. */
  async release(splitIds: readonly string[]): Promise<void> {
    const by = new Map<SplitCoordinator, string[]>();
    for (const id of splitIds) {
      const c = this.#shardOf(id);
      by.set(c, [...(by.get(c) ?? []), id]);
    }
    await Promise.all([...by].map(([c, ids]) => c.release(ids)));
    this.#shards.forEach((_, i) => this.#lanesChanged(i));
  }

  /** Reports a poison split, on its shard. */
  fail(splitId: string, epoch: number, reason: string, options?: FailOptions): Promise<void> {
    return this.#op(splitId, (c) => c.fail(splitId, epoch, reason, options));
  }

  /** Cuts a held split's remaining work; its residuals are splits of the same shard. */
  async split(splitId: string, epoch: number, cut: CutAnswer): Promise<string[]> {
    const i = this.#where.get(splitId) ?? shardOf(splitId, this.#shards.length);
    const ids = await this.#shards[i].split(splitId, epoch, cut);
    for (const id of ids) this.#where.set(id, i);
    return ids;
  }

  /** Forced release of a split under revocation, on its shard. */
  declineRevocation(splitId: string): Promise<void> {
    return this.#op(splitId, (c) => c.declineRevocation(splitId));
  }

  /** Drains every shard. */
  async drain(): Promise<void> {
    await Promise.all(this.#shards.map((c) => c.drain()));
  }

  /** Releases everything, leaves every shard, stops; closes the stores it opened. */
  close(): Promise<void> {
    return this.#closeAll();
  }

  #closeAll(): Promise<void> {
    return this.#closing ??= (async () => {
      await Promise.all(this.#shards.map((c) => c.close().catch(() => {})));
      await Promise.all(this.#owned.map((s) => s.close().catch(() => {})));
    })();
  }

  /**
   * Stops every shard at once without releasing or leaving, as if the
   * process died (each shard's leader moves its splits after a lease). For
   * tests and fatal paths.
   */
  async abandon(): Promise<void> {
    this.#closing ??= (async () => {
      await Promise.all(this.#shards.map((c) => c.abandon().catch(() => {})));
      await Promise.all(this.#owned.map((s) => s.close().catch(() => {})));
    })();
    await this.#closing;
  }

  /** Closes (for `await using`). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** The member's status: its shards' combined, each shard's line in `shards`. */
  status(): CoordinatorStatus {
    const o = jobOutcomeOfShards(this.#outcomes);
    const outcome = o ? o.event.type : null;
    return shardedStatus(this.#job, this.#shards.map((c) => c.status()), outcome);
  }

  /** Counters for metrics: the shards' summed (a snapshot). */
  stats(): CoordinatorStats {
    return sumStats(this.#shards.map((c) => c.stats()));
  }
}

/** `Promise.all` that settles every promise before it rejects (with the first failure). */
async function settled<T>(ps: readonly Promise<T>[]): Promise<T[]> {
  const rs = await Promise.allSettled(ps);
  const failed = rs.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
  return rs.map((r) => (r as PromiseFulfilledResult<T>).value);
}
