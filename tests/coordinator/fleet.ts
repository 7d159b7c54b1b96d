// Test harness: many coordinators over one store with a manual clock, each
// with its events collected, and a worker loop that processes gained splits.
import { ManualClock } from "../../src/coordinator/clock.ts";
import { type JoinOptions, SplitCoordinator } from "../../src/coordinator/coordinator.ts";
import type { CoordinationEvent, PlannedSplit, Planner } from "../../src/coordinator/types.ts";
import { MemoryStore } from "../../src/store/memory_store.ts";
import type { Store } from "../../src/store/store.ts";

export const FAST = {
  leaseMs: 1000,
  opTimeoutMs: 200,
  drainDeadlineMs: 300,
  replanIntervalMs: 1000,
  claimStaggerMs: 2,
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

export class Fleet implements AsyncDisposable {
  clock = new ManualClock();
  members: Member[] = [];
  seq = 0;
  constructor(public store: Store = new MemoryStore()) {}

  async join(opts: Partial<JoinOptions> & { instance: string }): Promise<Member> {
    return (await this.joinAll([opts]))[0];
  }

  /** Joins several workers at the same instant. */
  async joinAll(all: (Partial<JoinOptions> & { instance: string })[]): Promise<Member[]> {
    const ps = all.map((opts) => this.#start(opts));
    let settled = false;
    const all_ = Promise.all(ps);
    all_.finally(() => (settled = true)).catch(() => {});
    // Registration may wait on the clock (twin check): keep time moving.
    while (!settled) await this.clock.advance(10);
    const ms = (await all_).map((c) => new Member(c));
    this.members.push(...ms);
    return ms;
  }

  #start(opts: Partial<JoinOptions> & { instance: string }): Promise<SplitCoordinator> {
    return SplitCoordinator.join({
      store: this.store,
      job: "job1",
      clock: this.clock,
      random: mulberry(++this.seq),
      ...FAST,
      ...opts,
    } as JoinOptions);
  }

  advance(ms: number): Promise<void> {
    return this.clock.advance(ms);
  }

  until(cond: () => boolean, maxMs = 10_000, step = 10): Promise<boolean> {
    return this.clock.advanceUntil(cond, maxMs, step);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    for (const m of this.members) await m.c.abandon();
    await this.store.close();
  }
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
