// The gateway for split records (src/coordinator/split_records.ts): its
// CAS-and-reread loop writes again only over a record that is still ours,
// gives up after its attempts, and every landed write reaches the `landed`
// subscribers after the writer's own same-tick bookkeeping.
import assert from "node:assert/strict";
import { type LandedSplit, SplitRecords } from "../../src/coordinator/split_records.ts";
import type { SplitRecord } from "../../admin.ts";
import { encodeRecord } from "../../src/records.ts";
import { MemoryStore, SplitleaseError, StoreUnavailableError } from "../../mod.ts";

const me = { instance: "a", session: "s1" };
const rec = (epoch: number, owner: typeof me | null, progress: number | null = null): SplitRecord => ({
  v: 2,
  epoch,
  status: "runnable",
  owner,
  attempts: 0,
  weight: 1,
  progress: progress === null ? null : { watermark: String(progress) },
});
const ours = (r: SplitRecord) => r.owner?.instance === me.instance && r.owner.session === me.session && r.epoch === 3;

async function seeded(record: SplitRecord) {
  const store = new MemoryStore({ yieldToTimers: false });
  const r = await store.create("split.x", encodeRecord(record));
  assert.ok(r.ok);
  const splits = new SplitRecords(store);
  const landed: LandedSplit[] = [];
  splits.onLanded((w) => landed.push(w));
  return { store, splits, landed, revision: r.revision };
}

Deno.test("split records: a CAS lands, tells the writer first and then every subscriber", async () => {
  const { splits, landed, revision } = await seeded(rec(3, me));
  const order: string[] = [];
  const stop = splits.onLanded(() => order.push("subscriber"));
  const r = await splits.cas("x", { record: rec(3, me), revision }, (cur) => ({ ...cur, progress: { watermark: "7" } }), {
    kind: "tenancy",
    keep: ours,
    onLanded: () => order.push("writer"),
  });
  assert.ok(r.ok);
  assert.deepEqual(order, ["writer", "subscriber"]);
  assert.deepEqual(landed.map((w) => [w.id, w.kind, w.revision, w.record.progress]), [["x", "tenancy", r.revision, { watermark: "7" }]]);
  stop();
  assert.deepEqual((await splits.read("x"))?.record.progress, { watermark: "7" });
});

Deno.test("split records: after a conflict it goes again over a record that is still ours, at its revision", async () => {
  const { store, splits, landed, revision } = await seeded(rec(3, me));
  // Our own late write landed meanwhile (same owner and epoch, newer progress).
  const late = await store.update("split.x", encodeRecord(rec(3, me, 5)), revision);
  assert.ok(late.ok);
  const seen: (number | null)[] = [];
  const r = await splits.cas("x", { record: rec(3, me), revision }, (cur, rev) => {
    seen.push(rev);
    return { ...cur, progress: { watermark: "9" } };
  }, { kind: "tenancy", keep: ours });
  assert.ok(r.ok);
  assert.deepEqual(seen, [revision, late.revision]);
  assert.equal(landed.length, 1);
});

Deno.test("split records: a record that moved on is never written over; the outcome carries it", async () => {
  const { store, splits, landed, revision } = await seeded(rec(3, me));
  const moved = rec(4, { instance: "b", session: "s9" });
  assert.ok((await store.update("split.x", encodeRecord(moved), revision)).ok);
  const r = await splits.cas("x", { record: rec(3, me), revision }, (cur) => ({ ...cur, progress: { watermark: "1" } }), {
    kind: "tenancy",
    keep: ours,
  });
  assert.equal(r.ok, false);
  assert.ok(!r.ok && !("exhausted" in r) && r.current?.record.owner?.instance === "b");
  assert.deepEqual((await splits.read("x"))?.record, moved);
  assert.equal(landed.length, 0);
  // Gone altogether: no current record.
  await store.delete("split.x");
  const gone = await splits.cas("x", { record: rec(3, me), revision }, (cur) => cur, { kind: "tenancy", keep: ours });
  assert.ok(!gone.ok && gone.current === undefined);
});

Deno.test("split records: every attempt conflicting gives up after `attempts`, and `check` can stop a write", async () => {
  const { store, splits, revision } = await seeded(rec(3, me));
  let writes = 0;
  let rev = revision;
  const r = await splits.cas("x", { record: rec(3, me), revision }, (cur) => {
    writes++;
    return cur;
  }, {
    kind: "tenancy",
    keep: ours,
    attempts: 3,
    // A racing write of ours lands before each attempt reads back.
    check: () => {
      void store.update("split.x", encodeRecord(rec(3, me, writes)), rev).then((w) => w.ok && (rev = w.revision));
    },
  });
  assert.ok(!r.ok && "exhausted" in r, JSON.stringify(r));
  assert.equal(writes, 3);
  await assert.rejects(
    splits.cas("x", { record: rec(3, me), revision: rev }, (cur) => cur, {
      kind: "tenancy",
      keep: ours,
      check: () => {
        throw new Error("no longer wanted");
      },
    }),
    /no longer wanted/,
  );
});

/** A MemoryStore with `updateInTransaction`: `work` runs, then the CAS; `lose` drops the answer of the next landed write. */
class TxMemory extends MemoryStore {
  runs = 0;
  lose = false;
  async updateInTransaction(key: string, value: string, revision: number, work: (tx: unknown) => Promise<void>) {
    this.runs++;
    await work("tx-handle");
    const r = await this.update(key, value, revision);
    if (r.ok && this.lose) {
      this.lose = false;
      throw new StoreUnavailableError("update", 100, { detail: "answer lost" });
    }
    return r;
  }
}

Deno.test("split records: a write with a transaction goes through updateInTransaction, and a store without one refuses it by name", async () => {
  const { splits, revision } = await seeded(rec(3, me));
  await assert.rejects(
    splits.cas("x", { record: rec(3, me), revision }, (cur) => ({ ...cur, progress: { watermark: "1" } }), {
      kind: "tenancy",
      keep: ours,
      transaction: () => Promise.resolve(),
    }),
    (e) => e instanceof SplitleaseError && e.code === "INVALID_CONFIG" && /PostgresStore/.test(e.message),
  );
  const store = new TxMemory({ yieldToTimers: false });
  const c = await store.create("split.x", encodeRecord(rec(3, me)));
  assert.ok(c.ok);
  const handles: unknown[] = [];
  const r = await new SplitRecords(store).cas("x", { record: rec(3, me), revision: c.revision }, (cur) => ({ ...cur, progress: { watermark: "1" } }), {
    kind: "tenancy",
    keep: ours,
    transaction: (tx) => Promise.resolve(void handles.push(tx)),
  });
  assert.ok(r.ok);
  assert.deepEqual(handles, ["tx-handle"]);
});

Deno.test("split records: a transactional write retried after its answer was lost finds its progress landed and does not run the work again", async () => {
  const store = new TxMemory({ yieldToTimers: false });
  const c = await store.create("split.x", encodeRecord(rec(3, me)));
  assert.ok(c.ok);
  const splits = new SplitRecords(store);
  const make = (cur: SplitRecord) => ({ ...cur, progress: { watermark: "8" } });
  const opts = { kind: "tenancy" as const, keep: ours, transaction: () => Promise.resolve() };
  store.lose = true;
  await assert.rejects(splits.cas("x", { record: rec(3, me), revision: c.revision }, make, opts), StoreUnavailableError);
  // The caller retries at the revision it knew: a conflict, and the re-read holds our progress.
  const r = await splits.cas("x", { record: rec(3, me), revision: c.revision }, make, opts);
  assert.ok(r.ok);
  assert.equal(store.runs, 2, "the retry's conflicting attempt ran, and nothing after it");
  assert.deepEqual((await splits.read("x"))?.record.progress, { watermark: "8" });
  // A different progress after the conflict is written (in a new transaction).
  const next = await splits.cas("x", { record: rec(3, me), revision: c.revision }, (cur) => ({ ...cur, progress: { watermark: "9" } }), opts);
  assert.ok(next.ok);
  assert.equal(store.runs, 4);
});
