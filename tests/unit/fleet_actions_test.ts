// Operator actions on MemoryStore: each a fenced CAS with an answer for
// every state and race, never a throw.
import assert from "node:assert/strict";
import { cancelSplit, drainMember, requeueQuarantined, requeueSplit, readFleet, type SplitRecord } from "../../admin.ts";
import { failRecord, seedRecord } from "../../src/records/transitions.ts";
import { decodeRecord, MemberRecordSchema, SplitRecordSchema } from "../../src/records.ts";
import { MemoryStore } from "../../mod.ts";
import type { Store } from "../../mod.ts";
import type { StoreEntry, WriteResult } from "../../store.ts";
import { InvalidKeyError } from "../../store.ts";

const owner = { instance: "w1", session: "s1" };

function poisoned(): SplitRecord {
  let r = seedRecord(1, { file: "bad" });
  for (let i = 0; i < 4; i++) r = failRecord({ ...r, owner, epoch: r.epoch + 1 }, `boom ${i}`, 4, "w1", i);
  return r;
}

async function put(store: Store, key: string, rec: object): Promise<number> {
  const r = await store.create(key, JSON.stringify(rec));
  assert.ok(r.ok);
  return r.revision;
}

async function split(store: Store, id: string): Promise<SplitRecord> {
  const e = await store.get(`split.${id}`);
  return decodeRecord(e!.key, e!.value, SplitRecordSchema);
}

Deno.test("requeue: a quarantined split becomes runnable, attempts 0, epoch + 1, history kept", async () => {
  await using store = new MemoryStore();
  const q = poisoned();
  assert.equal(q.status, "quarantined");
  await put(store, "split.q", q);
  const r = await requeueSplit(store, "q");
  assert.deepEqual(r, {
    id: "q",
    outcome: "requeued",
    epoch: q.epoch + 1,
    reopened: false,
    message: `Split "q" requeued at epoch ${q.epoch + 1}`,
  });
  const after = await split(store, "q");
  assert.equal(after.status, "runnable");
  assert.equal(after.attempts, 0);
  assert.equal(after.owner, null);
  assert.equal(after.epoch, q.epoch + 1);
  assert.deepEqual(after.failures, q.failures);
  assert.equal(after.lastFailure, "boom 3");
  // Again: it is no longer quarantined, and says what it is.
  const again = await requeueSplit(store, "q");
  assert.equal(again.outcome, "notQuarantined");
  assert.equal(again.outcome === "notQuarantined" && again.status, "runnable");
  assert.equal((await requeueSplit(store, "nope")).outcome, "notFound");
  await store.create("split.junk", "{");
  assert.equal((await requeueSplit(store, "junk")).outcome, "unreadable");
  await assert.rejects(() => requeueSplit(store, "../x"), InvalidKeyError);
});

Deno.test("requeue all: every quarantined split, nothing else", async () => {
  await using store = new MemoryStore();
  for (let i = 0; i < 40; i++) await put(store, `split.q${i}`, poisoned());
  await put(store, "split.ok", seedRecord(1, null));
  await put(store, "split.done", { ...seedRecord(1, null), status: "completed" });
  const r = await requeueQuarantined(store);
  assert.equal(r.found, 40);
  assert.equal(r.requeued, 40);
  assert.ok(r.results.every((x) => x.outcome === "requeued"));
  const view = await readFleet(store);
  assert.equal(view.counts.quarantined, 0);
  assert.equal(view.counts.runnable, 41);
  assert.deepEqual(await requeueQuarantined(store), { found: 0, requeued: 0, reopened: false, results: [] });
});

Deno.test("cancel: terminal, owner none, epoch + 1; completed and cancelled splits answer so", async () => {
  await using store = new MemoryStore();
  await put(store, "split.held", { ...seedRecord(1, null), owner, epoch: 3 });
  await put(store, "split.done", { ...seedRecord(1, null), status: "completed", epoch: 2 });
  await put(store, "split.q", poisoned());
  const r = await cancelSplit(store, "held");
  assert.equal(r.outcome, "cancelled");
  assert.ok(r.outcome === "cancelled" && r.previous === "runnable" && r.previousOwner === "w1" && r.epoch === 4);
  assert.match(r.message, /cancelled \(was runnable, held by w1\)/);
  const after = await split(store, "held");
  assert.deepEqual([after.status, after.owner, after.epoch], ["cancelled", null, 4]);
  assert.equal((await cancelSplit(store, "held")).outcome, "alreadyCancelled");
  assert.equal((await cancelSplit(store, "done")).outcome, "alreadyCompleted");
  assert.equal((await cancelSplit(store, "q")).outcome, "cancelled");
  assert.equal((await cancelSplit(store, "none")).outcome, "notFound");
  assert.equal((await requeueSplit(store, "q")).outcome, "notQuarantined");
  const view = await readFleet(store);
  assert.deepEqual([view.counts.cancelled, view.counts.completed], [2, 1]);
});

/** A store whose every split update first lets `racer` write (an owner committing). */
function racing(inner: MemoryStore, racer: (key: string, cur: StoreEntry) => Promise<void>, times = Infinity): Store {
  let left = times;
  return new Proxy(inner, {
    get(t, p) {
      if (p === "update") {
        return async (key: string, value: string, revision: number): Promise<WriteResult> => {
          if (left-- > 0) await racer(key, (await t.get(key))!);
          return t.update(key, value, revision);
        };
      }
      const v = Reflect.get(t, p);
      return typeof v === "function" ? v.bind(t) : v;
    },
  });
}

Deno.test("cancel racing an owner's commits: retried on the fresh record, then a conflict value after 5 tries", async () => {
  await using inner = new MemoryStore();
  await put(inner, "split.busy", { ...seedRecord(1, null), owner, epoch: 1, progress: { watermark: 0 } });
  const commit = async (key: string, cur: StoreEntry) => {
    const rec = decodeRecord(key, cur.value, SplitRecordSchema);
    const wm = Number(rec.progress?.watermark ?? 0) + 1;
    assert.ok((await inner.update(key, JSON.stringify({ ...rec, progress: { watermark: wm } }), cur.revision)).ok);
  };
  // Two commits slip in: the third try lands, on top of the latest progress.
  const r = await cancelSplit(racing(inner, commit, 2), "busy");
  assert.equal(r.outcome, "cancelled");
  const after = await split(inner, "busy");
  assert.deepEqual([after.status, after.epoch, after.progress?.watermark], ["cancelled", 2, 2]);
  // An owner that always wins: a conflict answer, nothing written.
  await put(inner, "split.hot", { ...seedRecord(1, null), owner, epoch: 1, progress: { watermark: 0 } });
  let tries = 0;
  const c = await cancelSplit(racing(inner, (key, cur) => (tries++, commit(key, cur))), "hot");
  assert.equal(tries, 5, "five CAS tries, each after a fresh read");
  assert.equal(c.outcome, "conflict");
  assert.match(c.message, /kept changing while being cancelled \(5 tries/);
  assert.equal((await split(inner, "hot")).status, "runnable");
  // A requeue that loses to another operator's requeue says what it found.
  await put(inner, "split.q", poisoned());
  const other = async (key: string, cur: StoreEntry) => {
    const rec = decodeRecord(key, cur.value, SplitRecordSchema);
    await inner.update(key, JSON.stringify({ ...rec, status: "runnable", attempts: 0, epoch: rec.epoch + 1 }), cur.revision);
  };
  const q = await requeueSplit(racing(inner, other, 1), "q");
  assert.equal(q.outcome, "notQuarantined");
});

Deno.test("drain member: draining written by CAS at its revision with its own session; a racing beat is retried", async () => {
  await using inner = new MemoryStore();
  const m = { v: 2, session: "s1", maxInFlight: 4, runtime: "deno", version: "0.2.0", beat: 5 };
  await put(inner, "member.w1", m);
  const beat = async (key: string, cur: StoreEntry) => {
    const rec = decodeRecord(key, cur.value, MemberRecordSchema);
    await inner.update(key, JSON.stringify({ ...rec, beat: rec.beat + 1 }), cur.revision);
  };
  const r = await drainMember(racing(inner, beat, 1), "w1");
  assert.deepEqual(r, {
    instance: "w1",
    outcome: "draining",
    session: "s1",
    message: 'Member "w1" asked to drain; it starts at its next heartbeat and exits when its splits are handed over',
  });
  const e = await inner.get("member.w1");
  const rec = decodeRecord(e!.key, e!.value, MemberRecordSchema);
  assert.deepEqual([rec.draining, rec.session, rec.beat], [true, "s1", 6]);
  assert.equal((await drainMember(inner, "w1")).outcome, "alreadyDraining");
  assert.equal((await drainMember(inner, "w9")).outcome, "notFound");
});

Deno.test("requeue and cancel reopen a stalled job: the outcome is cleared so restarted workers run it", async () => {
  await using store = new MemoryStore();
  const stalled = { v: 2, term: 4, finality: "final", generation: 1, planned: 3, outcome: { kind: "stalled", completed: 1, quarantined: 2 } };
  await put(store, "plan", stalled);
  await put(store, "split.q1", poisoned());
  await put(store, "split.q2", poisoned());
  const plan = async () => JSON.parse((await store.get("plan"))!.value);
  const r = await requeueSplit(store, "q1");
  assert.ok(r.outcome === "requeued" && r.reopened);
  const { outcome: _, ...rest } = stalled;
  assert.deepEqual(await plan(), rest, "only the outcome is gone: term, plan and count kept");
  // Not stalled any more: nothing to reopen.
  await store.update("plan", JSON.stringify(stalled), (await store.get("plan"))!.revision);
  const c = await cancelSplit(store, "q2");
  assert.ok(c.outcome === "cancelled" && c.reopened);
  assert.equal((await plan()).outcome, undefined);
  await store.update("plan", JSON.stringify({ ...rest, outcome: { kind: "allComplete", completed: 3 } }), (await store.get("plan"))!.revision);
  await put(store, "split.q3", poisoned());
  const all = await requeueQuarantined(store);
  assert.deepEqual([all.requeued, all.reopened], [1, false], "an allComplete outcome is left alone");
});

Deno.test("requeue all reopens a stalled job once it requeued a split, and leaves it stalled when it requeued none", async () => {
  await using store = new MemoryStore();
  const stalled = { v: 2, term: 4, finality: "final", generation: 1, planned: 3, outcome: { kind: "stalled", completed: 1, quarantined: 2 } };
  await put(store, "plan", stalled);
  const plan = async () => JSON.parse((await store.get("plan"))!.value);
  // Nothing quarantined: nothing requeued, the stalled outcome stays.
  assert.deepEqual(await requeueQuarantined(store), { found: 0, requeued: 0, reopened: false, results: [] });
  assert.deepEqual((await plan()).outcome, stalled.outcome);
  await put(store, "split.q1", poisoned());
  await put(store, "split.q2", poisoned());
  const all = await requeueQuarantined(store);
  assert.deepEqual([all.found, all.requeued, all.reopened], [2, 2, true]);
  const { outcome: _, ...rest } = stalled;
  assert.deepEqual(await plan(), rest, "only the outcome is gone");
});

Deno.test("operator actions write at the revision they decided on: a completion that lands after the decision is never overwritten by it", async () => {
  await using inner = new MemoryStore();
  await put(inner, "split.x", { ...seedRecord(1, null), owner, epoch: 3 });
  // The owner completes the split as soon as anyone reads it a second time.
  let reads = 0, completed = false;
  const store = new Proxy(inner, {
    get(t, p) {
      if (p === "get") {
        return async (key: string) => {
          if (key === "split.x" && ++reads === 2) {
            const cur = (await t.get(key))!;
            const rec = decodeRecord(key, cur.value, SplitRecordSchema);
            completed = (await t.update(key, JSON.stringify({ ...rec, status: "completed", owner: null }), cur.revision)).ok;
          }
          return t.get(key);
        };
      }
      const v = Reflect.get(t, p);
      return typeof v === "function" ? v.bind(t) : v;
    },
  });
  const r = await cancelSplit(store, "x");
  const after = await split(inner, "x");
  if (completed) {
    assert.equal(after.status, "completed", "a cancel decided on the running split was written over its completion");
    assert.equal(r.outcome, "alreadyCompleted");
  } else {
    assert.equal(r.outcome, "cancelled");
  }
});
