import assert from "node:assert/strict";
import { Fleet, finalPlanner, splits } from "./fleet.ts";

Deno.test("1. two workers split 8 splits 4/4, hold them stably, complete, both see allComplete", async () => {
  await using f = new Fleet();
  const plan = finalPlanner(splits(8));
  const [a, b] = await f.joinAll([{ instance: "a", planner: plan }, { instance: "b", planner: plan }]);
  assert.ok(await f.until(() => a.held.length + b.held.length === 8, 2000));
  assert.equal(a.held.length, 4);
  assert.equal(b.held.length, 4);
  assert.equal(new Set([...a.held, ...b.held]).size, 8);
  const before = [a.held.join(), b.held.join()];
  await f.advance(2 * 1000);
  assert.deepEqual([a.held.join(), b.held.join()], before);
  assert.equal(a.lost().length + b.lost().length, 0);
  await a.completeAll();
  await b.completeAll();
  assert.ok(await f.until(() => a.has("allComplete") && b.has("allComplete"), 1000));
});
