// readAtLeast and newer (src/coordinator/fresh_read.ts; docs/DESIGN.md, "Fresh reads").
import assert from "node:assert/strict";
import { ManualClock } from "../../testing.ts";
import { newer, readAtLeast } from "../../src/coordinator/fresh_read.ts";
import type { StoreEntry } from "../../store.ts";

const at = (revision: number): StoreEntry => ({ key: "k", value: String(revision), revision });

/** A read that gives `answers` in turn (then the last one again), counting the reads. */
function reads(...answers: (StoreEntry | undefined)[]): { read: () => Promise<StoreEntry | undefined>; count: () => number } {
  let n = 0;
  return { read: () => Promise.resolve(answers[Math.min(n++, answers.length - 1)]), count: () => n };
}

/** Runs `p` while moving the manual clock, as the coordinator's own timers would be. */
async function driven<T>(clock: ManualClock, p: Promise<T>): Promise<T> {
  let done = false;
  p.finally(() => (done = true)).catch(() => {});
  while (!done) await clock.advance(1);
  return p;
}

Deno.test("readAtLeast: an answer at or past the floor is taken at once; older ones are read again", async () => {
  const clock = new ManualClock();
  const fresh = reads(at(7));
  assert.deepEqual(await readAtLeast(fresh.read, 7, { clock, budgetMs: 200 }), { entry: at(7), fresh: true, reads: 1 });
  const late = reads(at(3), undefined, at(5), at(9));
  assert.deepEqual(await driven(clock, readAtLeast(late.read, 8, { clock, budgetMs: 200 })), { entry: at(9), fresh: true, reads: 4 });
});

Deno.test("readAtLeast: an answer that stays older is returned as not fresh once the budget is spent", async () => {
  const clock = new ManualClock();
  const old = reads(at(3));
  const t0 = clock.now();
  const r = await driven(clock, readAtLeast(old.read, 8, { clock, budgetMs: 200 }));
  assert.deepEqual({ entry: r.entry, fresh: r.fresh }, { entry: at(3), fresh: false });
  assert.ok(clock.now() - t0 <= 200 + 1, `spent ${clock.now() - t0} ms`);
  // Backed off (1, 2, 4, ... ms, at most 20): a bounded number of reads, more than a couple.
  assert.ok(old.count() > 5 && old.count() < 30, `${old.count()} reads`);
});

Deno.test("readAtLeast: 'absent' is fresh only when asked (a key that may be deleted) or when nothing is known", async () => {
  const clock = new ManualClock();
  assert.equal((await driven(clock, readAtLeast(reads(undefined).read, 4, { clock, budgetMs: 50 }))).fresh, false);
  assert.equal((await readAtLeast(reads(undefined).read, 4, { clock, budgetMs: 50 }, "fresh")).fresh, true);
  assert.equal((await readAtLeast(reads(undefined).read, 0, { clock, budgetMs: 50 })).fresh, true);
  assert.equal((await readAtLeast(reads(at(1)).read, 0, { clock, budgetMs: 50 })).reads, 1);
});

Deno.test("newer: the higher revision of two answers, either of which may be missing", () => {
  assert.equal(newer(at(3), at(5))?.revision, 5);
  assert.equal(newer(at(5), at(3))?.revision, 5);
  assert.equal(newer(undefined, at(3))?.revision, 3);
  assert.equal(newer(at(3), undefined)?.revision, 3);
  assert.equal(newer(undefined, undefined), undefined);
});
