// Test harness: many coordinators over one store, each with its events
// collected, driven by a manual clock (MemoryStore) or by real time (NATS).
import { ManualClock, systemClock } from "../../testing.ts";
import { type JoinOptions, SplitCoordinator, MemoryStore } from "../../mod.ts";
import type { CoordinationEvent, PlannedSplit, Planner, Store } from "../../mod.ts";
import type { Clock } from "../../testing.ts";

/** Timings for tests on the manual clock. */
export const FAST = {
  leaseMs: 1000,
  opTimeoutMs: 200,
  drainDeadlineMs: 300,
  replanIntervalMs: 1000,
  retryBackoffMs: 50,
  retryBackoffMaxMs: 400,
} as const;

export function splits(n: number, weight = 1, prefix = "s"): PlannedSplit[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `${prefix}${String(i).padStart(3, "0")}`,
    descriptor: { n: i },
    weight,
  }));
}

export function finalPlanner(list: PlannedSplit[]): Planner {
  return () => Promise.resolve({ splits: list, finality: "final" });
}

/** Moves time: by hand (ManualClock) or by sleeping (real clock). */
export interface TimeDriver {
  clock: Clock;
  /** Extra tolerance for timing assertions, in ms. */
  slack: number;
  now(): number;
  advance(ms: number): Promise<void>;
  until(cond: () => boolean, maxMs: number, step?: number): Promise<boolean>;
}

export class ManualDriver implements TimeDriver {
  clock: ManualClock = new ManualClock();
  slack = 0;
  now(): number {
    return this.clock.now();
  }
  advance(ms: number): Promise<void> {
    return this.clock.advance(ms);
  }
  until(cond: () => boolean, maxMs: number, step = 10): Promise<boolean> {
    return this.clock.advanceUntil(cond, maxMs, step);
  }
}

/**
 * Real time. `slack` is the tolerance of timing assertions; `until` waits
 * up to `maxMs` plus `waitSlack` (at least `slack`): its bounds catch a
 * hang, and a loaded machine (CI on two busy cores) runs every timer late,
 * while a condition that holds returns at once, so the extra wait costs a
 * passing test nothing.
 */
export class RealDriver implements TimeDriver {
  clock: Clock = systemClock;
  constructor(public slack = 400, public waitSlack = 2000) {}
  now(): number {
    return this.clock.now();
  }
  advance(ms: number): Promise<void> {
    return new Promise((r) => setTimeout(r, ms));
  }
  async until(cond: () => boolean, maxMs: number, step = 10): Promise<boolean> {
    const end = this.now() + maxMs + Math.max(this.slack, this.waitSlack);
    while (!cond()) {
      if (this.now() >= end) return false;
      await this.advance(Math.max(step, 5));
    }
    return true;
  }
}

export class Member {
  events: CoordinationEvent[] = [];
  done: Promise<void>;
  error: unknown;
  constructor(readonly c: SplitCoordinator) {
    this.done = (async () => {
      try {
        for await (const ev of c) this.events.push(ev);
      } catch (e) {
        this.error = e;
      }
    })();
  }
  get held(): string[] {
    return this.c.status().held.map((h) => h.id);
  }
  has(type: CoordinationEvent["type"]): boolean {
    return this.events.some((e) => e.type === type);
  }
  gained(): Extract<CoordinationEvent, { type: "gained" }>[] {
    return this.events.filter((e) => e.type === "gained") as Extract<CoordinationEvent, { type: "gained" }>[];
  }
  lost(): Extract<CoordinationEvent, { type: "lost" }>[] {
    return this.events.filter((e) => e.type === "lost") as Extract<CoordinationEvent, { type: "lost" }>[];
  }
  /** Completes every held split with a final commit at the given watermark. */
  async completeAll(watermark = 100): Promise<void> {
    for (const h of this.c.status().held) {
      await this.c.commit(h.id, h.epoch, { watermark }, { final: true });
    }
  }
}

/** Timings every test of a fleet uses (FAST on the manual clock). */
export type Timings = typeof FAST | {
  leaseMs: number;
  opTimeoutMs: number;
  drainDeadlineMs: number;
  replanIntervalMs: number;
  retryBackoffMs: number;
  retryBackoffMaxMs: number;
};

export class Fleet implements AsyncDisposable {
  members: Member[] = [];
  seq = 0;
  job = "job1";
  timings: Timings = FAST;
  onDispose: (() => Promise<void>)[] = [];
  constructor(public store: Store = new MemoryStore({ yieldToTimers: false }), public time: TimeDriver = new ManualDriver()) {}

  get clock(): Clock {
    return this.time.clock;
  }

  now(): number {
    return this.time.now();
  }

  async join(opts: Partial<JoinOptions> & { instance: string }): Promise<Member> {
    return (await this.joinAll([opts]))[0];
  }

  /** Joins several workers at the same instant. */
  async joinAll(all: (Partial<JoinOptions> & { instance: string })[]): Promise<Member[]> {
    const ps = all.map((opts) => this.start(opts));
    let settled = false;
    const all_ = Promise.all(ps);
    all_.finally(() => (settled = true)).catch(() => {});
    // Registration may wait on the clock (twin check): keep time moving, but
    // only so far (in the driver's time: simulated on the manual clock).
    const leaseMs = Math.max(this.timings.leaseMs, ...all.map((o) => o.leaseMs ?? 0));
    const limitMs = Math.max(30_000, 30 * leaseMs);
    const t0 = this.time.now();
    while (!settled) {
      if (this.time.now() - t0 >= limitMs) {
        throw new Error(
          `timed out after ${limitMs} ms of ${this.time instanceof ManualDriver ? "manual-clock" : "real"} time waiting for ` +
            `${all.map((o) => o.instance).join(", ")} to join job "${this.job}"`,
        );
      }
      await this.time.advance(10);
    }
    const ms = (await all_).map((c) => new Member(c));
    this.members.push(...ms);
    return ms;
  }

  start(opts: Partial<JoinOptions> & { instance: string }): Promise<SplitCoordinator> {
    return SplitCoordinator.join({
      store: this.store,
      job: this.job,
      clock: this.clock,
      random: mulberry(++this.seq),
      ...this.timings,
      ...opts,
    } as JoinOptions);
  }

  advance(ms: number): Promise<void> {
    return this.time.advance(ms);
  }

  until(cond: () => boolean, maxMs = 10_000, step = 10): Promise<boolean> {
    return this.time.until(cond, maxMs, step);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    for (const m of this.members) await m.c.abandon();
    for (const f of this.onDispose) await f();
    await this.store.close();
  }
}

/** Where a scenario runs: a fresh fleet per test. */
export interface Backend {
  name: string;
  /** A fresh fleet; `wrap` may put a fault layer in front of the shared store. */
  fleet(wrap?: (s: Store) => Store): Promise<Fleet>;
  /** A second store handle on the same job (another process's connection). */
  extraStore(f: Fleet): Promise<Store>;
  /** Whether time is real (slow: scale long scenarios down). */
  realtime: boolean;
  /** A store of job `job` on the backend's server (real backends: the sharded scenarios open one per shard). */
  connect?: (job: string) => Promise<Store>;
}

export const memoryBackend: Backend = {
  name: "memory",
  realtime: false,
  fleet(wrap) {
    const mem = new MemoryStore({ yieldToTimers: false });
    const f = new Fleet(wrap ? wrap(mem) : mem);
    (f as Fleet & { raw: Store }).raw = mem;
    return Promise.resolve(f);
  },
  extraStore(f) {
    return Promise.resolve((f as Fleet & { raw: Store }).raw);
  },
};

/** The unwrapped store of a fleet (what other processes see). */
export function rawStore(f: Fleet): Store {
  return (f as Fleet & { raw?: Store }).raw ?? f.store;
}

export function mulberry(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
