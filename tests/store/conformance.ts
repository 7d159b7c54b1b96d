/**
 * The store conformance suite: one set of cases every `Store` backend must
 * pass with identical results (revisions included: a fresh store starts at 0).
 */
import assert from "node:assert/strict";
import {
  InvalidKeyError,
  MAX_VALUE_BYTES,
  SplitleaseError,
  type Store,
  ValueTooLargeError,
  type WatchEvent,
  type WriteResult,
} from "../../store.ts";

/** Makes a fresh, empty store. */
export type StoreFactory = () => Promise<Store>;

/** Reads `n` events from an iterator, failing after `ms`. */
export async function take(
  it: AsyncIterator<WatchEvent>,
  n: number,
  ms = 5000,
): Promise<WatchEvent[]> {
  const out: WatchEvent[] = [];
  const deadline = Date.now() + ms;
  while (out.length < n) {
    const left = deadline - Date.now();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const r = await Promise.race([
      it.next(),
      new Promise<"timeout">((res) => (timer = setTimeout(() => res("timeout"), Math.max(0, left)))),
    ]);
    clearTimeout(timer);
    if (r === "timeout") throw new Error(`timed out after ${out.length} of ${n} events: ${JSON.stringify(out)}`);
    if (r.done) throw new Error(`watch ended after ${out.length} of ${n} events: ${JSON.stringify(out)}`);
    out.push(r.value);
  }
  return out;
}

/** Asserts that no event arrives within `ms`. */
export async function assertQuiet(it: AsyncIterator<WatchEvent>, ms = 200): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const r = await Promise.race([
    it.next(),
    new Promise<"quiet">((res) => (timer = setTimeout(() => res("quiet"), ms))),
  ]);
  clearTimeout(timer);
  assert.equal(r, "quiet", `unexpected event ${JSON.stringify(r)}`);
}

const opts = { sanitizeOps: false, sanitizeResources: false };

/** Registers the conformance cases for one backend. */
export function conformance(name: string, factory: StoreFactory): void {
  const test = (title: string, fn: (store: Store) => Promise<void>) =>
    Deno.test({
      name: `${name}: ${title}`,
      ...opts,
      fn: async () => {
        const store = await factory();
        try {
          await fn(store);
        } finally {
          await store.close();
        }
      },
    });

  test("create, conflict on existing, get", async (s) => {
    assert.deepEqual(await s.create("a", "1"), { ok: true, revision: 1 });
    assert.deepEqual(await s.create("a", "2"), { ok: false, conflict: true });
    assert.deepEqual(await s.get("a"), { key: "a", value: "1", revision: 1 });
    assert.equal(await s.get("missing"), undefined);
  });

  test("update is a compare-and-swap", async (s) => {
    assert.deepEqual(await s.create("k", "v1"), { ok: true, revision: 1 });
    assert.deepEqual(await s.update("k", "v2", 1), { ok: true, revision: 2 });
    assert.deepEqual(await s.update("k", "v3", 1), { ok: false, conflict: true });
    assert.deepEqual(await s.update("nope", "x", 2), { ok: false, conflict: true });
    assert.deepEqual(await s.get("k"), { key: "k", value: "v2", revision: 2 });
    await assert.rejects(s.update("k", "x", 0), (e) => e instanceof SplitleaseError && e.code === "INVALID_ARGUMENT");
  });

  test("delete: guarded, vacuous when absent, create after delete", async (s) => {
    assert.deepEqual(await s.delete("none"), { ok: true });
    assert.deepEqual(await s.delete("none", 7), { ok: true });
    assert.deepEqual(await s.create("d", "1"), { ok: true, revision: 1 });
    assert.deepEqual(await s.delete("d", 5), { ok: false, conflict: true });
    assert.deepEqual(await s.get("d"), { key: "d", value: "1", revision: 1 });
    assert.deepEqual(await s.delete("d", 1), { ok: true });
    assert.equal(await s.get("d"), undefined);
    // Guarded delete of an already deleted key: vacuous success.
    assert.deepEqual(await s.delete("d", 1), { ok: true });
    assert.deepEqual(await s.delete("d"), { ok: true });
    // Create after delete gets a fresh revision above the marker (2).
    assert.deepEqual(await s.create("d", "2"), { ok: true, revision: 3 });
    assert.deepEqual(await s.delete("d"), { ok: true });
    assert.deepEqual(await s.create("e", "x"), { ok: true, revision: 5 });
  });

  test("revisions increase across the whole store", async (s) => {
    const revs: number[] = [];
    for (const k of ["x", "y", "z"]) {
      const r = await s.create(k, k);
      assert.ok(r.ok);
      revs.push(r.revision);
    }
    const u = await s.update("x", "x2", revs[0]);
    assert.ok(u.ok);
    assert.deepEqual([...revs, u.revision], [1, 2, 3, 4]);
  });

  test("list: live entries in key order, by prefix, exact key and all", async (s) => {
    await s.create("split.b", "B");
    await s.create("split.a", "A");
    await s.create("splitx", "X");
    await s.create("plan", "P");
    await s.create("split.c", "C");
    await s.delete("split.c");
    assert.deepEqual(await s.list("split."), [
      { key: "split.a", value: "A", revision: 2 },
      { key: "split.b", value: "B", revision: 1 },
    ]);
    assert.deepEqual(await s.list("plan"), [{ key: "plan", value: "P", revision: 4 }]);
    assert.deepEqual(await s.list("nothing."), []);
    assert.deepEqual((await s.list("")).map((e) => e.key), ["plan", "split.a", "split.b", "splitx"]);
  });

  test("watch: snapshot in revision order, ready, live puts and deletes", async (s) => {
    await s.create("split.b", "B");
    await s.create("split.a", "A");
    await s.create("other", "O");
    await s.create("split.gone", "G");
    await s.delete("split.gone");
    const w = s.watch("split.");
    const it = w[Symbol.asyncIterator]();
    assert.deepEqual(await take(it, 3), [
      { type: "put", key: "split.b", value: "B", revision: 1 },
      { type: "put", key: "split.a", value: "A", revision: 2 },
      { type: "ready" },
    ]);
    await s.update("split.a", "A2", 2);
    await s.create("other2", "no");
    await s.delete("split.b", 1);
    await s.create("split.c", "C");
    assert.deepEqual(await take(it, 3), [
      { type: "put", key: "split.a", value: "A2", revision: 6 },
      { type: "delete", key: "split.b", revision: 8 },
      { type: "put", key: "split.c", value: "C", revision: 9 },
    ]);
    await assertQuiet(it);
    await w.stop();
    assert.deepEqual(await it.next(), { value: undefined, done: true });
  });

  test("watch: exact key, empty prefix and all keys", async (s) => {
    await s.create("plan", "P");
    await s.create("leader", "L");
    const exact = s.watch("plan");
    const none = s.watch("split.");
    const all = s.watch("");
    const ei = exact[Symbol.asyncIterator]();
    const ni = none[Symbol.asyncIterator]();
    const ai = all[Symbol.asyncIterator]();
    assert.deepEqual(await take(ei, 2), [{ type: "put", key: "plan", value: "P", revision: 1 }, { type: "ready" }]);
    assert.deepEqual(await take(ni, 1), [{ type: "ready" }]);
    assert.deepEqual(await take(ai, 3), [
      { type: "put", key: "plan", value: "P", revision: 1 },
      { type: "put", key: "leader", value: "L", revision: 2 },
      { type: "ready" },
    ]);
    await s.update("leader", "L2", 2);
    await s.create("split.x", "X");
    assert.deepEqual(await take(ni, 1), [{ type: "put", key: "split.x", value: "X", revision: 4 }]);
    assert.deepEqual(await take(ai, 2), [
      { type: "put", key: "leader", value: "L2", revision: 3 },
      { type: "put", key: "split.x", value: "X", revision: 4 },
    ]);
    await assertQuiet(ei);
    await Promise.all([exact.stop(), none.stop(), all.stop()]);
  });

  test("an empty value is a put, not a delete: get, list and watch agree", async (s) => {
    const w = s.watch("k.");
    const it = w[Symbol.asyncIterator]();
    assert.deepEqual(await take(it, 1), [{ type: "ready" }]);
    assert.deepEqual(await s.create("k.a", ""), { ok: true, revision: 1 });
    assert.deepEqual(await s.create("k.b", "B"), { ok: true, revision: 2 });
    // Taken before the delete: a watch may leave out a change superseded
    // before it was delivered (see the coalescing case below).
    assert.deepEqual(await take(it, 2), [
      { type: "put", key: "k.a", value: "", revision: 1 },
      { type: "put", key: "k.b", value: "B", revision: 2 },
    ]);
    assert.deepEqual(await s.delete("k.b", 2), { ok: true });
    assert.deepEqual(await take(it, 1), [{ type: "delete", key: "k.b", revision: 3 }]);
    assert.equal((await s.get("k.a"))?.value, "");
    assert.equal(await s.get("k.b"), undefined);
    assert.deepEqual((await s.list("k.")).map((e) => [e.key, e.value]), [["k.a", ""]]);
    await w.stop();
  });

  test("a watch delivers each key's changes in revision order and always its last one", async (s) => {
    const w = s.watch("c.");
    const it = w[Symbol.asyncIterator]();
    assert.deepEqual(await take(it, 1), [{ type: "ready" }]);
    // Back to back, with no wait for the watch: NATS (one value per key) may
    // skip a change superseded before its consumer reached it.
    let rev = (await s.create("c.k", "0") as { revision: number }).revision;
    for (let i = 1; i <= 30; i++) rev = (await s.update("c.k", String(i), rev) as { revision: number }).revision;
    assert.deepEqual(await s.delete("c.k", rev), { ok: true });
    assert.deepEqual(await s.create("c.k", "again"), { ok: true, revision: rev + 2 });
    await s.create("c.end", "E");
    const seen: WatchEvent[] = [];
    while (!seen.some((e) => e.type === "put" && e.key === "c.end")) seen.push(...await take(it, 1));
    const revisions = seen.map((e) => (e as { revision: number }).revision);
    assert.deepEqual(revisions, [...revisions].sort((a, b) => a - b), "revision order");
    assert.ok(seen.every((e) => e.type === "put" || e.type === "delete"), JSON.stringify(seen));
    const lastOfKey = seen.filter((e) => (e.type === "put" || e.type === "delete") && e.key === "c.k").at(-1);
    assert.deepEqual(lastOfKey, { type: "put", key: "c.k", value: "again", revision: rev + 2 });
    for (const e of seen) {
      if (e.type === "put" && e.key === "c.k" && e.revision <= rev) assert.equal(e.value, String(e.revision - 1));
    }
    await assertQuiet(it);
    await w.stop();
  });

  test("values above the limit and invalid keys are rejected", async (s) => {
    const big = "x".repeat(MAX_VALUE_BYTES + 1);
    await assert.rejects(s.create("big", big), (e) => e instanceof ValueTooLargeError && e.key === "big");
    await assert.rejects(s.update("big", big, 1), ValueTooLargeError);
    // Multi-byte characters count in UTF-8 bytes.
    await assert.rejects(s.create("big", "é".repeat(MAX_VALUE_BYTES / 2 + 1)), ValueTooLargeError);
    const max = "y".repeat(MAX_VALUE_BYTES);
    assert.deepEqual(await s.create("max", max), { ok: true, revision: 1 });
    assert.equal((await s.get("max"))?.value.length, MAX_VALUE_BYTES);
    for (const bad of ["", "a..b", ".a", "a.", "a b", "a*", "a.>", "ä", "x".repeat(513)]) {
      await assert.rejects(s.create(bad, "1"), InvalidKeyError, `create ${JSON.stringify(bad)}`);
      await assert.rejects(s.get(bad), InvalidKeyError);
      await assert.rejects(s.delete(bad), InvalidKeyError);
    }
    assert.throws(() => s.watch("a..b"), InvalidKeyError);
    await assert.rejects(s.list("a b."), InvalidKeyError);
  });

  test("watch position: the last change under the filter, never a key outside it", async (s) => {
    // Regression (nats-server 2.9): the position came from the consumer's
    // delivered sequence, which a filtered consumer moves past other keys
    // written right after its last delivery; a leader whose watch had
    // delivered every split then waited an op timeout to confirm the end.
    const w = s.watch("split.");
    if (!w.position) return w.stop(); // optional: this backend cannot tell
    const it = w[Symbol.asyncIterator]();
    try {
      assert.deepEqual(await take(it, 1), [{ type: "ready" }]);
      assert.equal(await w.position(), 0, "nothing under the filter yet");
      let applied = 0;
      const behind: number[] = [];
      for (let round = 0; round < 10; round++) {
        const writes: Promise<WriteResult>[] = [];
        for (let i = 0; i < 20; i++) writes.push(s.create(`split.r${round}x${i}`, "1"));
        for (let i = 0; i < 3; i++) writes.push(s.create(`member.r${round}m${i}`, "x"));
        const rs = await Promise.all(writes);
        const lastSplit = Math.max(...rs.slice(0, 20).map((r) => (r.ok ? r.revision : 0)));
        for (const e of await take(it, 20)) if (e.type === "put") applied = Math.max(applied, e.revision);
        assert.equal(applied, lastSplit);
        const at = await w.position();
        assert.ok(at >= lastSplit, `position ${at} is below the last split write ${lastSplit}`);
        if (at > applied) behind.push(round);
      }
      assert.deepEqual(behind, [], "rounds in which a watch that had every split looked behind");
    } finally {
      await w.stop();
    }
  });

  Deno.test({
    name: `${name}: close ends every watch`,
    ...opts,
    fn: async () => {
      const s = await factory();
      await s.create("a", "1");
      const w = s.watch("");
      const it = w[Symbol.asyncIterator]();
      assert.equal((await take(it, 2))[1].type, "ready");
      const pending = it.next();
      await s.close();
      assert.deepEqual(await pending, { value: undefined, done: true });
      await assert.rejects(s.get("a"), (e) => e instanceof SplitleaseError && e.code === "CLOSED");
    },
  });
}
