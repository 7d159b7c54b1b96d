// The leader's assignment record for a member always fits the store's value
// limit (src/coordinator/leader/assign_writer.ts): a member owed thousands of
// grants, or splits with large progress states, gets them over several
// writes instead of a write the store refuses (and retries forever).
import assert from "node:assert/strict";
import type { Core } from "../../src/coordinator/core.ts";
import { LeaderView } from "../../src/coordinator/leader/leader_view.ts";
import { AssignmentTracker } from "../../src/coordinator/leader/assignment_tracker.ts";
import { newStats } from "../../src/coordinator/stats.ts";
import type { SplitRecord } from "../../admin.ts";
import { decodeRecord, encodeRecord, AssignRecordSchema } from "../../src/records.ts";
import { MemoryStore } from "../../mod.ts";
import { MAX_VALUE_BYTES } from "../../store.ts";

Deno.test("assignment record: thousands of grants with large progress go out in records that fit, every grant listed", async () => {
  const store = new MemoryStore({ yieldToTimers: false });
  const logs: string[] = [];
  const core = {
    store,
    stats: newStats(),
    log: (level: string, msg: string) => logs.push(`${level} ${msg}`),
    replaced: { note: () => {} },
  } as unknown as Core;
  const view = new LeaderView(() => {}, () => {});
  const tracker = new AssignmentTracker(view, new Map());
  const m = tracker.member("m", "sess", 4096, false, false);
  const N = 4000;
  const state = "p".repeat(2000); // a large progress state per split
  for (let i = 0; i < N; i++) {
    const id = `split-${String(i).padStart(58, "0")}`; // 64 characters, like splitIdFrom's
    const rec: SplitRecord = {
      v: 2,
      epoch: 1,
      status: "runnable",
      owner: { instance: "m", session: "sess" },
      attempts: 0,
      weight: 1,
      progress: { watermark: "w", state },
    };
    view.put(`split.${id}`, encodeRecord(rec), i + 1);
    tracker.edit((d) => d.grant(m, id, { epoch: 1 }));
  }
  const w = tracker.writer(m);
  const listed = new Set<string>();
  let writes = 0;
  while (w.dirty && writes < 10) {
    assert.equal(await w.flush(core, view, 1, () => assert.fail("not deposed")), true);
    writes++;
    const e = (await store.get("assign.m"))!;
    assert.ok(e.value.length <= MAX_VALUE_BYTES, `record ${writes} is ${e.value.length} bytes`);
    const rec = decodeRecord(e.key, e.value, AssignRecordSchema);
    for (const g of rec.grants) listed.add(g.id);
  }
  assert.equal(listed.size, N, `every grant was listed (${listed.size} of ${N} in ${writes} writes)`);
  assert.ok(writes >= 2 && writes < 10, `${writes} writes`);
  assert.deepEqual(logs.filter((l) => l.startsWith("error")), []);
});

/** A member's assignment state over a MemoryStore and a leader's view of the splits. */
function harness() {
  const store = new MemoryStore({ yieldToTimers: false });
  const logs: string[] = [];
  const core = {
    store,
    stats: newStats(),
    log: (level: string, msg: string) => logs.push(`${level} ${msg}`),
    replaced: { note: () => {} },
  } as unknown as Core;
  const view = new LeaderView(() => {}, () => {});
  const tracker = new AssignmentTracker(view, new Map());
  const m = tracker.member("m", "sess", 64, false, false);
  const split = (id: string, epoch: number, revision: number, extra: Partial<SplitRecord> = {}) =>
    view.put(`split.${id}`, encodeRecord({ v: 2, epoch, status: "runnable", owner: null, attempts: 0, weight: 1, progress: null, ...extra }), revision);
  /** Writes the record now (as the leader's loop does after a change); answers what it wrote. */
  const write = async (term = 1) => {
    tracker.edit((d) => d.touch(m));
    assert.equal(await tracker.writer(m).flush(core, view, term, () => assert.fail("not deposed")), true);
    const e = (await store.get("assign.m"))!;
    return { revision: e.revision, record: decodeRecord(e.key, e.value, AssignRecordSchema), bytes: e.value.length };
  };
  return { store, core, view, m, tracker, split, write, logs };
}

Deno.test("assignment record: a grant stays listed until the member's heartbeat says it applied a version that listed it", async () => {
  const { m, tracker, split, write } = harness();
  const grants = tracker.of(m).grants;
  const acknowledge = (seen: number) => tracker.edit((d) => d.acknowledge(m, seen));
  split("g", 2, 5, { owner: { instance: "m", session: "sess" } });
  tracker.edit((d) => d.grant(m, "g", { epoch: 2 }));
  // A heartbeat that reports any version at all, before a record listing the grant was written: still owed.
  acknowledge(1_000_000);
  assert.ok(grants.has("g"), "a grant no record has listed yet was dropped by a member's seen");
  const first = await write();
  assert.deepEqual(first.record.grants.map((g) => g.id), ["g"]);
  // The member's heartbeat says it applied an older version (seen < the record that listed the grant): still owed.
  acknowledge(first.revision - 1);
  assert.ok(grants.has("g"), "a grant was dropped before the member saw a record listing it");
  assert.deepEqual((await write()).record.grants.map((g) => g.id), ["g"], "listed again");
  // Seen: acknowledged, and the next record goes without it.
  acknowledge(first.revision);
  assert.ok(!grants.has("g"));
  assert.deepEqual((await write()).record.grants, []);
});

Deno.test("assignment record: a grant the split's epoch has moved past and an offer at an older revision are not sent", async () => {
  const { m, tracker, split, write } = harness();
  split("moved", 3, 10, { owner: { instance: "other", session: "o" } });
  split("stale", 1, 12);
  split("fresh", 1, 13);
  tracker.edit((d) => {
    d.grant(m, "moved", { epoch: 2 }); // opened for m at epoch 2; the record is at epoch 3 now
    d.offer(m, "stale", 11, 1); // reserved at revision 11; the split moved to 12 since
    d.offer(m, "fresh", 13, 1);
  });
  const { record } = await write();
  assert.deepEqual(record.grants, [], "a grant of an epoch the split no longer has");
  assert.deepEqual(record.offers.map((o) => [o.id, o.rev]), [["fresh", 13]], "only the offer at the split's revision");
});

Deno.test("assignment record: split records go inline only while the 48 KiB budget lasts", async () => {
  const { m, tracker, split, write } = harness();
  const state = "p".repeat(20_000); // three records are over the budget, two are not
  for (let i = 0; i < 10; i++) {
    const id = `s${String(i).padStart(3, "0")}`;
    split(id, 1, i + 1, { progress: { watermark: i, state } });
    tracker.edit((d) => d.offer(m, id, i + 1, 1));
  }
  const { record } = await write();
  assert.equal(record.offers.length, 10, "every offer listed");
  const inline = record.offers.filter((o) => o.rec !== undefined);
  const inlineBytes = inline.reduce((n, o) => n + JSON.stringify(o.rec).length, 0);
  assert.equal(inline.length, 2, `${inline.length} of 10 inline`);
  assert.ok(inlineBytes <= 48 * 1024, `${inlineBytes} bytes of split records inline`);
});

Deno.test("assignment record: a leader finding a record of a newer term stands down and writes nothing", async () => {
  const { store, core, view, m, tracker } = harness();
  const newer = encodeRecord({ v: 2, term: 7, session: "sess", seq: 3, offers: [], grants: [], revokes: [], drops: [] });
  const created = await store.create("assign.m", newer);
  assert.ok(created.ok);
  tracker.edit((d) => d.touch(m));
  let deposed = 0;
  assert.equal(await tracker.writer(m).flush(core, view, 5, () => deposed++), false);
  assert.equal(deposed, 1, "told it is deposed");
  const e = (await store.get("assign.m"))!;
  assert.deepEqual([e.revision, e.value], [created.revision, newer], "the newer leader's record is untouched");
});

Deno.test("assignment record: revokes count against the size bound like everything else (thousands to long-named successors)", async () => {
  const { m, tracker, write, logs } = harness();
  const to = { instance: "i".repeat(128), session: "s".repeat(64) };
  tracker.edit((d) => {
    for (let i = 0; i < 2000; i++) d.revoke(m, `split-${String(i).padStart(58, "0")}`, { epoch: 1, to, since: 0, steal: false });
  });
  const { record, bytes } = await write();
  assert.ok(bytes <= MAX_VALUE_BYTES, `the record is ${bytes} bytes`);
  assert.ok(record.revokes.length > 0 && record.revokes.length < 2000, `${record.revokes.length} revokes listed`);
  assert.deepEqual(record.revokes.map((r) => r.id), [...tracker.of(m).revokes.keys()].slice(0, record.revokes.length), "the first ones, in order");
  assert.deepEqual(logs.filter((l) => l.startsWith("error")), []);
});
