// The leader's assignment record for a member always fits the store's value
// limit (src/coordinator/leader/member_state.ts): a member owed thousands of
// grants, or splits with large progress states, gets them over several
// writes instead of a write the store refuses (and retries forever).
import assert from "node:assert/strict";
import type { Core } from "../../src/coordinator/core.ts";
import { LeaderView } from "../../src/coordinator/leader/leader_view.ts";
import { MemberState } from "../../src/coordinator/leader/member_state.ts";
import { newStats } from "../../src/coordinator/stats.ts";
import { decodeRecord, encodeRecord, AssignRecordSchema, type SplitRecord } from "../../src/records.ts";
import { MemoryStore } from "../../src/store/memory_store.ts";
import { MAX_VALUE_BYTES } from "../../src/store/store.ts";

Deno.test("assignment record: thousands of grants with large progress go out in records that fit, every grant listed", async () => {
  const store = new MemoryStore({ yieldToTimers: false });
  const logs: string[] = [];
  const core = {
    store,
    stats: newStats(),
    log: (level: string, msg: string) => logs.push(`${level} ${msg}`),
    noteReplaced: () => {},
  } as unknown as Core;
  const view = new LeaderView(() => {}, () => {});
  const m = new MemberState("m", "sess", 4096, false, false);
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
    m.grants.set(id, { epoch: 1 });
  }
  m.touch();
  const listed = new Set<string>();
  let writes = 0;
  while (m.dirty && writes < 10) {
    assert.equal(await m.flush(core, view, 1, () => assert.fail("not deposed")), true);
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
