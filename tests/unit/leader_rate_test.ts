// What a leader's beat carries for readers of a large job that do not read
// its split records (issue 39, item 3): split weights and the completion
// rate by the times in the records (src/coordinator/leader/completion_window.ts),
// and the first quarantined ids without sorting them all (src/util/smallest.ts).
import assert from "node:assert/strict";
import fc from "fast-check";
import { COMPLETION_WINDOW_MS, CompletionWindow } from "../../src/coordinator/leader/completion_window.ts";
import { LeaderView } from "../../src/coordinator/leader/leader_view.ts";
import { encodeRecord, LeaderRecordSchema, safeDecodeRecord, type SplitRecord } from "../../src/records.ts";
import { smallest } from "../../src/util/smallest.ts";
import { finalPlanner, Fleet, splits } from "../coordinator/fleet.ts";

const done = (at: number, weight = 1, from = at - 1000): SplitRecord => ({
  v: 2,
  epoch: 1,
  status: "completed",
  owner: null,
  attempts: 0,
  weight,
  progress: null,
  tenancies: [{ epoch: 1, owner: "a", from, to: at, end: "completed" }],
});

Deno.test("completion window: counts the completions of the last five minutes by their records' times, over the job's age when shorter", () => {
  const now = 10 * 60_000;
  const w = new CompletionWindow();
  assert.deepEqual(w.rate(now), { at: now, ms: 0, n: 0, w: 0, since: null }, "nothing seen: no window");
  w.saw(done(now - 6 * 60_000, 5, now - 7 * 60_000)); // outside the window
  w.saw(done(now - 60_000, 2));
  w.saw(done(now - 1000, 3));
  w.saw({ ...done(now - 2000), status: "runnable", tenancies: [{ epoch: 1, owner: "a", from: now - 3000 }] }); // not completed
  assert.deepEqual(w.rate(now), { at: now, ms: COMPLETION_WINDOW_MS, n: 2, w: 5, since: now - 7 * 60_000 });
  // A young job: the window is its age.
  const young = new CompletionWindow();
  young.saw(done(now - 10_000, 1, now - 30_000));
  assert.deepEqual(young.rate(now), { at: now, ms: 30_000, n: 1, w: 1, since: now - 30_000 });
  // A record without tenancies (an older version's) counts nothing.
  young.saw({ ...done(now), tenancies: undefined });
  assert.equal(young.rate(now).n, 1);
});

Deno.test("completion window: equals a count of the completion times within five minutes, to the second, for any order of arrival", () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: 20 * 60 }), { maxLength: 200 }), fc.integer({ min: 6 * 60, max: 20 * 60 }), (seconds, nowS) => {
      const now = nowS * 1000 + 999; // the end of a second: bucket edges fall on whole seconds
      const w = new CompletionWindow();
      // Completers' clocks ahead of the leader's by up to ten seconds.
      seconds = seconds.filter((s) => s <= nowS + 9);
      for (const s of seconds) w.saw(done(s * 1000, 1, 0));
      const inWindow = seconds.filter((s) => s * 1000 >= Math.floor((now - COMPLETION_WINDOW_MS) / 1000) * 1000).length;
      const r = w.rate(now);
      assert.equal(r.n, inWindow);
      assert.equal(r.w, inWindow);
    }),
  );
});

Deno.test("leader view: weights by status follow every change of a split", () => {
  const view = new LeaderView(() => {}, () => {});
  const runnable = { v: 2 as const, epoch: 1, status: "runnable" as const, owner: null, attempts: 0, weight: 3, progress: null };
  view.put("split.a", encodeRecord(runnable), 1);
  view.put("split.b", encodeRecord({ ...runnable, weight: 2 }), 2);
  assert.deepEqual(view.weightBy, { runnable: 5, completed: 0, quarantined: 0, cancelled: 0 });
  view.put("split.a", encodeRecord(done(5000, 3)), 3);
  view.put("split.b", encodeRecord({ ...runnable, weight: 2, status: "quarantined", attempts: 3 }), 4);
  assert.deepEqual(view.weightBy, { runnable: 0, completed: 3, quarantined: 2, cancelled: 0 });
  view.apply("split.", { type: "delete", key: "split.b", revision: 5 });
  assert.deepEqual(view.weightBy, { runnable: 0, completed: 3, quarantined: 0, cancelled: 0 });
  assert.equal(view.completions.rate(6000).n, 1);
});

Deno.test("smallest: the k smallest of a collection, sorted, as sorting it all would give", () => {
  fc.assert(fc.property(fc.array(fc.string({ maxLength: 4 })), fc.integer({ min: 0, max: 30 }), (xs, k) => {
    assert.deepEqual(smallest(xs, k), [...xs].sort().slice(0, k));
  }));
});

Deno.test({
  name: "leader beat: it carries the job's weights and the completion rate, so a reader needs no split record",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    await using f = new Fleet();
    const [a] = await f.joinAll([{ instance: "a", planner: finalPlanner([...splits(3, 2), ...splits(2, 1, "t")]) }]);
    assert.ok(await f.until(() => a.held.length === 5, 2000));
    await f.advance(100);
    const held = a.c.status().held.filter((h) => h.id.startsWith("s"));
    for (const h of held) await a.c.commit(h.id, h.epoch, { watermark: 1 }, { final: true });
    // The next beats publish what the leader's view indexed.
    assert.ok(
      await f.until(() => {
        void readLeader(f).then((c) => (counts = c));
        return counts?.rate?.n === 3;
      }, f.timings.leaseMs * 2),
      JSON.stringify(counts) ?? "no counts",
    );
    assert.deepEqual(counts!.weight, { total: 8, completed: 6, runnable: 2, left: 2 });
    assert.equal(counts!.rate!.w, 6);
    assert.ok(counts!.rate!.ms > 0 && counts!.rate!.since !== null);
  },
});

let counts: NonNullable<ReturnType<typeof LeaderRecordSchema.parse>["counts"]> | undefined;
async function readLeader(f: Fleet) {
  const e = await f.store.get("leader");
  const r = e ? safeDecodeRecord(e.key, e.value, LeaderRecordSchema) : undefined;
  return r?.ok ? r.value.counts : undefined;
}

Deno.test("status: the leader's /status lists the first 1,000 quarantined ids, by id, not all of them", async () => {
  const { buildStatus, STATUS_QUARANTINED_LISTED } = await import("../../src/coordinator/status.ts");
  const quarantined = new Set(Array.from({ length: 5000 }, (_, i) => "q" + String(4999 - i).padStart(4, "0")));
  const role = {
    ready: true,
    counts: () => ({ members: 1, runnable: 0, unowned: 0, completed: 0, quarantined: quarantined.size, cancelled: 0 }),
    view: { quarantined, invalid: new Map() },
    states: new Map([["a", {}]]),
    retry: { waiting: new Map() },
  };
  const follower = { plan: undefined, leader: undefined, outcome: undefined, invalid: new Map(), paused: false };
  const st = buildStatus({
    me: { instance: "a", session: "s" },
    job: "j",
    state: "running",
    connected: true,
    follower: follower as never,
    leaderAlive: true,
    role: role as never,
    planning: undefined,
    held: new Map(),
    replaced: [],
    now: 0,
  });
  assert.equal(STATUS_QUARANTINED_LISTED, 1000);
  assert.equal(st.counts.quarantined, 5000);
  assert.deepEqual(st.quarantined, Array.from({ length: 1000 }, (_, i) => "q" + String(i).padStart(4, "0")));
});
