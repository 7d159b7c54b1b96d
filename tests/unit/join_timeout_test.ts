// A store whose watch never finishes its snapshot fails the join with a
// clear error instead of hanging it.
import assert from "node:assert/strict";
import { ManualClock } from "../../testing.ts";
import { SplitCoordinator, StoreUnavailableError, MemoryStore } from "../../mod.ts";
import type { Watch, WatchEvent } from "../../store.ts";

class SilentWatchStore extends MemoryStore {
  constructor() {
    super({ yieldToTimers: false });
  }
  override watch(_filter: string): Watch {
    const never = new Promise<IteratorResult<WatchEvent>>(() => {});
    const stop = () => Promise.resolve();
    return { stop, [Symbol.asyncDispose]: stop, [Symbol.asyncIterator]: () => ({ next: () => never }) };
  }
}

Deno.test("join: a snapshot that never completes fails with StoreUnavailableError after 2 × leaseMs (at least 30 s)", async () => {
  const clock = new ManualClock();
  const box: { error?: unknown } = {};
  const joining = SplitCoordinator.join({ store: new SilentWatchStore(), job: "j", clock, leaseMs: 1000, opTimeoutMs: 200 })
    .catch((e) => (box.error = e));
  await clock.advance(29_000);
  assert.equal(box.error, undefined, "still waiting before the limit");
  await clock.advance(1_100);
  await joining;
  const error = box.error as unknown;
  assert.ok(error instanceof StoreUnavailableError, String(error));
  assert.match(error.message, /watch.*30000 ms.*snapshot never completed/);
});

class FirstWatchStuckStore extends MemoryStore {
  constructor() {
    super({ yieldToTimers: false });
  }
  #seen = new Set<string>();
  override watch(filter: string): Watch {
    if (this.#seen.has(filter)) return super.watch(filter);
    this.#seen.add(filter);
    const never = new Promise<IteratorResult<WatchEvent>>(() => {});
    const stop = () => Promise.resolve();
    return { stop, [Symbol.asyncDispose]: stop, [Symbol.asyncIterator]: () => ({ next: () => never }) };
  }
}

Deno.test("join: a snapshot stuck once is started over with a fresh watch, and the join completes", async () => {
  const clock = new ManualClock();
  const store = new FirstWatchStuckStore();
  await store.create("plan", JSON.stringify({ v: 2, term: 1, finality: "final", generation: 1, planned: 3 }));
  const box: { c?: SplitCoordinator; error?: unknown } = {};
  const joining = SplitCoordinator.join({ store, job: "j", clock, leaseMs: 1000, opTimeoutMs: 200 })
    .then((c) => (box.c = c), (e) => (box.error = e));
  await clock.advance(2_100);
  await joining;
  assert.equal(box.error, undefined);
  assert.ok(box.c);
  assert.equal(box.c.status().plan?.planned, 3, "the fresh snapshot was applied");
  await box.c.close();
});
