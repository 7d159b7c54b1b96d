// The leader's hold on its own releases is capped (issue 40, item 11): a
// leader handing its own splits over holds each successor's next assignment
// write while more of its releases keep coming, so one write carries many
// (src/coordinator/leader/release_hold.ts), but never longer than
// `opTimeoutMs` in all. A planted bug that dropped the cap survived: every
// hand-over in the suites released its splits in one burst, so the hold
// ended with the burst. Here the releases keep coming, one every 40 ms
// (under the hold's 50 ms), for well past `opTimeoutMs`.
import assert from "node:assert/strict";
import { keys } from "../../admin.ts";
import { FAST, finalPlanner, Fleet, splits } from "./fleet.ts";
import { RELEASE_HOLD_MS } from "../../src/coordinator/leader/release_hold.ts";
import { splitRecord } from "./scenarios.ts";

Deno.test({
  name: "release hold: a leader releasing its own splits one by one still writes its successor's grants within opTimeoutMs",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    await using f = new Fleet();
    // A drain deadline past the whole trickle of releases: none of them is forced.
    f.timings = { ...FAST, leaseMs: 3000, drainDeadlineMs: 2000, replanIntervalMs: 3000 };
    const N = 12, GAP = 40;
    assert.ok(GAP < RELEASE_HOLD_MS, "each release comes within the hold of the one before");
    const a = await f.join({ instance: "a", planner: finalPlanner(splits(N)), maxInFlight: N });
    assert.ok(await f.until(() => a.held.length === N, 3000), `a holds all ${N}`);
    const b = await f.join({ instance: "b", maxInFlight: N });
    assert.ok(await f.until(() => a.c.status().liveMembers.includes("b"), 3000), "the leader sees b");
    await f.advance(f.timings.leaseMs / 2); // b's record settled: no write left over from its join

    // b's assignment record as written from here on, with the time each write arrived.
    const writes: { at: number; grants: number }[] = [];
    let ready = false;
    const watch = f.store.watch(keys.assign("b"));
    const reading = (async () => {
      for await (const e of watch) {
        if (e.type === "ready") ready = true;
        else if (e.type === "put" && ready) writes.push({ at: f.now(), grants: JSON.parse(e.value).grants.length });
      }
    })();
    assert.ok(await f.until(() => ready, 1000));

    // The leader drains: it names b the successor of every split, and its source releases them one at a time.
    const drained = a.c.drain();
    assert.ok(await f.until(() => a.events.filter((e) => e.type === "revokeRequested").length === N, 1000, 1), "every split revoked");
    const ids = [...a.held].sort();
    const t0 = f.now();
    let released = 0;
    const releasedAt: number[] = [];
    for (const id of ids) {
      await a.c.release([id]);
      releasedAt.push(f.now());
      released++;
      if (released < N) await f.advance(GAP);
    }
    await drained;
    assert.ok(await f.until(() => b.held.length === N, f.timings.leaseMs), `b holds ${b.held.length} of ${N}`);
    await watch.stop();
    await reading;

    const last = releasedAt[N - 1];
    assert.ok(last - t0 >= 2 * FAST.opTimeoutMs, `the releases kept coming for ${last - t0} ms, past opTimeoutMs (${FAST.opTimeoutMs})`);
    const first = writes.find((w) => w.grants > 0);
    const why = `writes of assign.b (ms after the first release, grants): ${writes.map((w) => `${w.at - t0}:${w.grants}`).join(" ")}`;
    assert.ok(first, why);
    // Held at most opTimeoutMs from when the hold began (at or after the first release), plus a pass's tick.
    assert.ok(first.at - t0 <= FAST.opTimeoutMs + 20, `the first grant went out ${first.at - t0} ms after the first release; ${why}`);
    assert.ok(first.at < last, `and while the releases were still coming; ${why}`);
    assert.ok(first.grants > 1, `it carries the releases so far, not one; ${why}`);
    for (const id of ids) assert.equal((await splitRecord(f.store, id)).attempts, 0, `${id}: handed over, no attempt charged`);
    assert.deepEqual(b.gained().map((g) => g.kind), Array(N).fill("handoff"), "every split started on the leader's grant");
  },
});
