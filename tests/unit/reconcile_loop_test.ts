// The pass loop (src/coordinator/reconcile_loop.ts): requests in one burst
// share a pass, and a busy loop gathers what arrives in the next moment
// into one pass instead of running one per event (the leader of tiny
// splits made 1.5 passes per split, 0.04 once gathered: the peers bench).
import assert from "node:assert/strict";
import { ManualClock } from "../../testing.ts";
import { GATHER_MS, ReconcileLoop } from "../../src/coordinator/reconcile_loop.ts";

const tick = () => new Promise<void>((r) => setTimeout(r, 0));

Deno.test("reconcile loop: one pass per burst; requests right after a pass are gathered into one pass a moment later", async () => {
  const clock = new ManualClock();
  let passes = 0;
  const loop = new ReconcileLoop(clock, () => (passes++, Infinity), () => 50, () => true);
  loop.schedule();
  loop.schedule();
  await tick();
  assert.equal(passes, 1, "a burst gets one pass");
  // Events keep coming at the same moment: gathered, not a pass each.
  for (let i = 0; i < 10; i++) {
    loop.schedule();
    await tick();
  }
  assert.equal(passes, 1, "nothing runs before the gather window ends");
  await clock.advance(GATHER_MS);
  await tick();
  assert.equal(passes, 2, "ten requests, one gathered pass");
  // Quiet again: a request long after the last pass runs at once.
  await clock.advance(100);
  loop.schedule();
  await tick();
  assert.equal(passes, 3);
  loop.stop();
});

Deno.test("reconcile loop: stop clears a gathered pass's timer", async () => {
  const clock = new ManualClock();
  let passes = 0;
  const loop = new ReconcileLoop(clock, () => (passes++, Infinity), () => 50, () => true);
  loop.schedule();
  await tick();
  loop.schedule(); // gathered
  loop.stop();
  await clock.advance(10);
  await tick();
  assert.equal(passes, 1, "no pass after stop");
});
