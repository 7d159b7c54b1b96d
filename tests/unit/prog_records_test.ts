// The gateway for progress records (src/coordinator/prog_records.ts) and the
// transitions around them (src/records/transitions.ts): the fence carries the
// last committed position over and refuses a newer epoch; a commit writes over
// its own earlier write only, and finds a newer epoch (or an older one that
// wrote after it started) fenced; the holder writes over garbage, a starting
// tenancy does not; `closed` says which tenancy may start without a fence.
import assert from "node:assert/strict";
import { type ProgHold, ProgRecords } from "../../src/coordinator/prog_records.ts";
import { decodeRecord, encodeRecord, liveSplitRecord, type ProgRecord, ProgRecordSchema } from "../../src/records.ts";
import { failRecord, mustFence, openRecord, releaseRecord, seedRecord } from "../../src/records/transitions.ts";
import { residualRecord } from "../../src/coordinator/cuts.ts";
import { MemoryStore } from "../../mod.ts";
import { InvalidRecordError } from "../../src/errors.ts";

const a = { instance: "a", session: "s1" };
const b = { instance: "b", session: "s2" };
const hold = (owner: typeof a, epoch: number, over: Partial<ProgHold> = {}): ProgHold => ({
  epoch,
  owner,
  rev: undefined,
  progress: null,
  records: 0,
  ...over,
});
const prog = (owner: typeof a | null, epoch: number, watermark: number, records = watermark): ProgRecord => ({
  v: 2,
  epoch,
  owner,
  progress: { watermark },
  records,
});

async function store() {
  const s = new MemoryStore({ yieldToTimers: false });
  return { s, progs: new ProgRecords(s, 500) };
}
const read = async (s: MemoryStore, id = "x") => decodeRecord("prog." + id, (await s.get("prog." + id))!.value, ProgRecordSchema);

Deno.test("prog records: a tenancy's first commit creates the record, later ones write over it at the revision they wrote", async () => {
  const { s, progs } = await store();
  const h = hold(a, 1);
  assert.deepEqual(await progs.commit("x", h, { watermark: 5 }, { records: 5 }), { ok: true, revision: 1 });
  assert.deepEqual(await progs.commit("x", h, { watermark: 9, state: { at: 9 } }, { records: 4 }), { ok: true, revision: 2 });
  assert.deepEqual(await read(s), { v: 2, epoch: 1, owner: a, progress: { watermark: 9, state: { at: 9 } }, records: 9 });
  assert.deepEqual([h.rev, h.records, h.progress?.watermark], [2, 9, 9]);
  await assert.rejects(() => progs.commit("x", h, { watermark: 3 }), /regress from 9 to 3/);
});

Deno.test("prog records: a fence carries the last committed position over; the zombie's next commit is refused, one that landed first is carried", async () => {
  const { s, progs } = await store();
  const zombie = hold(a, 3);
  await progs.commit("x", zombie, { watermark: 10 }, { records: 10 });
  // The zombie's commit lands after the new owner read but before its fence: the fence re-reads and carries it.
  const landedFirst = hold(a, 3, { rev: zombie.rev, progress: zombie.progress, records: zombie.records });
  const fresh = hold(b, 4, { progress: { watermark: 2 }, records: 2 }); // what the split record said (older)
  await progs.commit("x", landedFirst, { watermark: 12 }, { records: 2 });
  assert.deepEqual(await progs.fence("x", fresh), { ok: true, revision: 3 });
  assert.deepEqual([fresh.progress?.watermark, fresh.records], [12, 12], "the new owner starts where the last commit left it");
  assert.deepEqual(await progs.commit("x", landedFirst, { watermark: 13 }), { ok: false, epoch: 4 }, "the zombie is fenced");
  assert.equal((await read(s)).epoch, 4);
  // Its own fence again (a retried start) is a no-op; an older tenancy's fence finds it moved on.
  assert.deepEqual(await progs.fence("x", hold(b, 4)), { ok: true, revision: 3 });
  assert.deepEqual(await progs.fence("x", hold(a, 3)), { ok: false, epoch: 4 });
  assert.deepEqual(await progs.fence("x", hold(a, 4)), { ok: false, epoch: 4 }, "another owner at the same epoch is not ours");
});

Deno.test("prog records: a commit after a conflict with its own earlier write goes again over it; a record deleted under its holder is created again", async () => {
  const { s, progs } = await store();
  const h = hold(a, 2);
  await progs.commit("x", h, { watermark: 1 });
  // Our write whose reply was lost: the record moved on to our own newer value.
  const cur = (await s.get("prog.x"))!;
  await s.update("prog.x", encodeRecord(prog(a, 2, 4, 4)), cur.revision);
  assert.equal((await progs.commit("x", h, { watermark: 6 }, { records: 2 })).ok, true);
  assert.deepEqual((await read(s)).progress, { watermark: 6 });
  assert.equal((await read(s)).records, 6, "counted over the write that landed");
  await s.delete("prog.x");
  assert.equal((await progs.commit("x", h, { watermark: 7 })).ok, true);
  assert.deepEqual((await read(s)).progress, { watermark: 7 });
});

Deno.test("prog records: a tenancy that started without a fence reads the record at its first commit; an older epoch's write after that is refused", async () => {
  const { s, progs } = await store();
  await s.create("prog.x", encodeRecord(prog(a, 1, 5)));
  const h = hold(b, 2, { progress: { watermark: 5 }, records: 5 });
  assert.equal((await progs.commit("x", h, { watermark: 8 }, { records: 3 })).ok, true);
  assert.deepEqual([(await read(s)).epoch, (await read(s)).records], [2, 8]);
  const newer = (await s.get("prog.x"))!;
  await s.update("prog.x", encodeRecord(prog(a, 1, 20)), newer.revision); // cannot happen by the protocol: refused, not written over
  assert.deepEqual(await progs.commit("x", h, { watermark: 9 }), { ok: false, epoch: 1 });
  // A stale revision hint (the split record's `prog`): the record of the last tenancy is written over after one conflict.
  const { s: s2, progs: p2 } = await store();
  await s2.create("prog.y", encodeRecord(prog(a, 1, 5)));
  const hinted = hold(b, 2, { rev: 0, progress: { watermark: 5 }, records: 5 });
  assert.equal((await p2.commit("y", hinted, { watermark: 6 }, { records: 1 })).ok, true);
  assert.deepEqual([(await read(s2, "y")).epoch, (await read(s2, "y")).records], [2, 6]);
});

Deno.test("prog records: garbage is written over by its holder (it knows what it held), never by a tenancy that starts", async () => {
  const { s, progs } = await store();
  const h = hold(a, 1);
  await progs.commit("x", h, { watermark: 3 });
  const cur = (await s.get("prog.x"))!;
  await s.update("prog.x", "{garbage", cur.revision);
  assert.equal((await progs.commit("x", h, { watermark: 4 })).ok, true);
  assert.deepEqual((await read(s)).progress, { watermark: 4 });
  const again = (await s.get("prog.x"))!;
  await s.update("prog.x", "{garbage", again.revision);
  await assert.rejects(() => progs.fence("x", hold(b, 2)), InvalidRecordError);
});

Deno.test("closed: nobody held a seed or a residual below its first epoch; a settled end closes the record to the next tenancy, any other write keeps it", () => {
  const seed = seedRecord(1, { n: 1 });
  assert.equal(mustFence(seed, 1), false, "a seed's first claim");
  const granted = openRecord(seed, a, false, 3, 0);
  assert.equal(mustFence(granted, granted.epoch), false, "a seed granted to an idle lane");
  const residual = residualRecord("p", undefined, { id: "p-1", descriptor: { n: 2 }, weight: 1, epoch: 7 });
  assert.equal(mustFence(residual, 8), false, "a residual's first claim");
  // A takeover keeps `closed`: the new owner fences.
  const taken = openRecord(granted, b, true, 3, 0);
  assert.equal(mustFence(taken, taken.epoch), true);
  // A settled release closes it past its tenancy, carrying its last position; an unsettled one does not.
  const settled = releaseRecord(taken, null, 0, { progress: { watermark: 9 }, records: 9 });
  assert.deepEqual([settled.closed, settled.progress, settled.records], [taken.epoch + 1, { watermark: 9 }, 9]);
  assert.equal(mustFence(openRecord(settled, a, false, 3, 0), taken.epoch + 1), false);
  assert.equal(releaseRecord(taken, null, 0).closed, taken.closed, "a release with a write in flight keeps it");
  const handedOn = releaseRecord(taken, a, 0, { progress: { watermark: 9 } });
  assert.equal(mustFence(handedOn, handedOn.epoch), false, "a settled release to a successor: it starts without a fence");
  assert.equal(failRecord(taken, "x", 3, "b", 0, undefined, { progress: null }).closed, taken.epoch + 1);
});

Deno.test("liveSplitRecord: a running split shows its progress record's position; a completed one its own; an estimate from before a cut is dropped", () => {
  const running = { ...openRecord(seedRecord(10, {}), a, false, 3, 0), progress: { watermark: 1 }, cuts: 1 };
  const p: ProgRecord = { v: 2, epoch: 1, owner: a, progress: { watermark: 7, estimate: { left: 3, total: 10, unit: "ids" } }, records: 7 };
  assert.deepEqual(liveSplitRecord(running, p).progress, { watermark: 7 }, "estimated before the cut");
  assert.deepEqual(liveSplitRecord(running, { ...p, cuts: 1 }).progress, p.progress);
  assert.equal(liveSplitRecord(running, p).records, 7);
  const done = { ...running, status: "completed" as const, owner: null, progress: { watermark: 10 } };
  assert.deepEqual(liveSplitRecord(done, p).progress, { watermark: 10 });
  assert.equal(liveSplitRecord(running, undefined), running);
});
