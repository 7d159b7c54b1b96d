/**
 * A scripted {@linkcode Coordinator} for runtime tests: the test pushes
 * events, the double records every call and keeps a faithful-enough model of
 * what is held (commit fencing by epoch, release, fail, drain, close).
 * @module
 */
import type { CoordinationEvent, Coordinator, CoordinatorStatus, SplitProgress } from "../../mod.ts";
import type { CommitOptions, SplitSpec } from "../../host.ts";
import type { CoordinatorStats, Histogram } from "../../admin.ts";
import { FencedError, StoreUnavailableError } from "../../mod.ts";
import { Channel } from "../../src/util/channel.ts";

export type Call =
  | { op: "commit"; splitId: string; epoch: number; progress: SplitProgress; final: boolean }
  | { op: "release"; splitIds: string[] }
  | { op: "fail"; splitId: string; epoch: number; reason: string }
  | { op: "declineRevocation"; splitId: string }
  | { op: "drain" }
  | { op: "close" };

interface Held {
  spec: SplitSpec;
  epoch: number;
  progress: SplitProgress | null;
  draining: boolean;
}

export function histogram(buckets: number[], values: number[]): Histogram {
  const counts = buckets.map(() => 0);
  let sum = 0;
  for (const v of values) {
    sum += v;
    const i = buckets.findIndex((b) => v <= b);
    if (i >= 0) counts[i]++;
  }
  return { buckets, counts, sum, count: values.length };
}

export class ScriptedCoordinator implements Coordinator {
  readonly instance: string;
  readonly calls: Call[] = [];
  readonly held = new Map<string, Held>();
  /** Durable progress per split (what a store would hold). */
  readonly durable = new Map<string, { epoch: number; progress: SplitProgress | null; status: string }>();
  #events = new Channel<CoordinationEvent>();
  state: CoordinatorStatus["state"] = "running";
  connected = true;
  isLeader = false;
  planGeneration = 0;
  /** Make the next N commits fail with an outage. */
  failNextCommits = 0;
  /** Fail attempts per split; quarantine at this cap (emits `quarantined`). */
  maxAttempts = 4;
  attempts = new Map<string, number>();
  /** When false, drain() only emits revokeRequested and waits (no forced release). */
  #drainWaiters: (() => void)[] = [];
  /** Emit `lost` for every held split on close (like a real close releasing them). */
  statsOverride: Partial<CoordinatorStats> = {};
  #closed = false;

  constructor(instance = "w1") {
    this.instance = instance;
  }

  // --- scripting ----------------------------------------------------------

  /** Gives the worker a split at `epoch`. */
  gain(id: string, epoch = 1, descriptor: SplitSpec["descriptor"] = { id }, progress?: SplitProgress): void {
    const spec = { id, descriptor, weight: 1 };
    const prev = this.durable.get(id);
    const resume = progress ?? prev?.progress ?? undefined;
    this.held.set(id, { spec, epoch, progress: resume ?? null, draining: false });
    this.durable.set(id, { epoch, progress: resume ?? null, status: "runnable" });
    this.#events.push({ type: "gained", split: spec, epoch, progress: resume });
  }

  /** Takes a split away (`lost`); when `steal` the store epoch moves on. */
  lose(id: string, reason: "fenced" | "expired" | "starved" | "revoked" = "expired", bumpEpoch = true): void {
    this.held.delete(id);
    const d = this.durable.get(id);
    if (d && bumpEpoch) d.epoch++;
    this.#events.push({ type: "lost", splitId: id, reason });
    this.#wake();
  }

  /** Moves the store epoch without telling the worker (a silent takeover). */
  bumpEpoch(id: string): void {
    const d = this.durable.get(id);
    if (d) d.epoch++;
  }

  emit(ev: CoordinationEvent): void {
    this.#events.push(ev);
  }

  // --- Coordinator --------------------------------------------------------

  poll(): Promise<CoordinationEvent | undefined> {
    return this.#events.next().then((r) => (r.done ? undefined : r.value));
  }

  tryPoll(): CoordinationEvent | undefined {
    return this.#events.tryTake();
  }

  [Symbol.asyncIterator](): AsyncIterator<CoordinationEvent> {
    return this.#events[Symbol.asyncIterator]();
  }

  async commit(splitId: string, epoch: number, progress: SplitProgress, options?: CommitOptions): Promise<void> {
    await Promise.resolve();
    this.calls.push({ op: "commit", splitId, epoch, progress, final: options?.final ?? false });
    if (this.failNextCommits > 0) {
      this.failNextCommits--;
      throw new StoreUnavailableError("update", 5000);
    }
    const d = this.durable.get(splitId);
    if (!d || d.epoch !== epoch) {
      if (this.held.delete(splitId)) {
        this.#events.push({ type: "lost", splitId, reason: "fenced" });
        this.#wake();
      }
      throw new FencedError(splitId, epoch, d?.epoch ?? -1);
    }
    d.progress = progress;
    const h = this.held.get(splitId);
    if (h) h.progress = progress;
    if (options?.final) {
      d.status = "completed";
      this.held.delete(splitId);
      this.#wake();
    }
  }

  async release(splitIds: readonly string[]): Promise<void> {
    await Promise.resolve();
    this.calls.push({ op: "release", splitIds: [...splitIds] });
    for (const id of splitIds) this.held.delete(id);
    this.#wake();
  }

  async fail(splitId: string, epoch: number, reason: string): Promise<void> {
    await Promise.resolve();
    this.calls.push({ op: "fail", splitId, epoch, reason });
    const d = this.durable.get(splitId);
    if (!d || d.epoch !== epoch) throw new FencedError(splitId, epoch, d?.epoch ?? -1);
    this.held.delete(splitId);
    const n = (this.attempts.get(splitId) ?? 0) + 1;
    this.attempts.set(splitId, n);
    if (n >= this.maxAttempts) {
      d.status = "quarantined";
      this.#events.push({ type: "quarantined", splitId, attempts: n });
    }
    this.#wake();
  }

  async declineRevocation(splitId: string): Promise<void> {
    await Promise.resolve();
    this.calls.push({ op: "declineRevocation", splitId });
    if (this.held.delete(splitId)) {
      const d = this.durable.get(splitId);
      if (d) d.epoch++; // a forced release ends the tenancy
      this.#events.push({ type: "lost", splitId, reason: "revoked" });
    }
    this.#wake();
  }

  async drain(): Promise<void> {
    this.calls.push({ op: "drain" });
    this.state = "draining";
    for (const [id, h] of this.held) {
      h.draining = true;
      this.#events.push({ type: "revokeRequested", splitId: id });
    }
    while (this.held.size > 0) await new Promise<void>((r) => this.#drainWaiters.push(r));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.resolve();
    this.calls.push({ op: "close" });
    this.held.clear();
    this.state = "stopped";
    this.#wake();
    this.#events.close();
  }

  /** Ends the event stream as if the coordinator crashed. */
  crash(error?: unknown): void {
    this.state = "failed";
    if (error) this.#events.fail(error);
    else this.#events.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  #wake(): void {
    for (const w of this.#drainWaiters.splice(0)) w();
  }

  /** How many times `status()` was called. */
  statusCalls = 0;

  status(): CoordinatorStatus {
    this.statusCalls++;
    const held = [...this.held.entries()].map(([id, h]) => ({
      id,
      epoch: h.epoch,
      weight: h.spec.weight,
      progress: h.progress,
      draining: h.draining,
    }));
    return {
      instance: this.instance,
      session: "sess-" + this.instance,
      job: "job1",
      state: this.state,
      connected: this.connected,
      isLeader: this.isLeader,
      leader: this.isLeader ? { instance: this.instance, term: 3, alive: true } : null,
      plan: this.planGeneration > 0
        ? { term: 3, finality: "final", generation: this.planGeneration, planned: 10 }
        : null,
      liveMembers: [this.instance, "w2"],
      members: 2,
      held,
      counts: { planned: 10, runnable: 7, unclaimed: 4, owned: 3, completed: 2, quarantined: 1, cancelled: 0 },
      quarantined: ['q"1'],
      outcome: null,
      invalidRecords: [],
    };
  }

  stats(): CoordinatorStats {
    return {
      acquisitions: { claim: 3, takeover: 1 },
      losses: { fenced: 1 },
      releases: 2,
      revocations: { requested: 1, drained: 1 },
      writes: { ok: 20, conflict: 2 },
      claimAttempts: 4,
      recordsReplaced: 0,
      planFailures: 0,
      selfFences: 0,
      leaderPasses: 0,
      storeOpSeconds: { update: histogram([0.005, 0.01, 0.1], [0.001, 0.007, 0.2]) },
      handoverSeconds: histogram([0.1, 1], [0.05]),
      ...this.statsOverride,
      cuts: { asked: 0, performed: 0 },
    };
  }
}
