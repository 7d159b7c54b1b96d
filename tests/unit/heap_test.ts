// The max-heap under the leader's dealing order (src/util/heap.ts): its entries are columns, not
// objects (issue 39: a million splits not dealt yet), so the order it pops and lists must be
// exactly a stable sort's — by key, larger first, then by tie, lower first.
import assert from "node:assert/strict";
import fc from "fast-check";
import { MaxHeap } from "../../src/util/heap.ts";

type Op = { push: [number, number] } | { pop: true };
const sorted = (xs: { item: number; key: number; tie: number }[]) => [...xs].sort((a, b) => b.key - a.key || a.tie - b.tie);

Deno.test("MaxHeap: pushes and pops in any order give a sort's order (larger key first, then lower tie), across growth", () => {
  const op: fc.Arbitrary<Op> = fc.oneof(
    { weight: 3, arbitrary: fc.tuple(fc.integer({ min: -5, max: 5 }), fc.integer({ min: 0, max: 50 })).map((p) => ({ push: p as [number, number] })) },
    { weight: 1, arbitrary: fc.constant({ pop: true as const }) },
  );
  fc.assert(fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
    const h = new MaxHeap<number>();
    const model: { item: number; key: number; tie: number }[] = [];
    let n = 0;
    for (const o of ops) {
      if ("push" in o) {
        const [key, tie] = o.push;
        h.push(n, key, tie);
        model.push({ item: n++, key, tie });
      } else {
        const want = sorted(model)[0];
        const got = h.pop();
        if (!want) assert.equal(got, undefined);
        else {
          // Equal (key, tie) pairs may come in either order: compare what the order is decided on.
          const e = model.findIndex((m) => m.item === got);
          assert.ok(e >= 0);
          assert.deepEqual([model[e].key, model[e].tie], [want.key, want.tie]);
          model.splice(e, 1);
        }
      }
      assert.equal(h.size, model.length);
      const top = h.peek();
      const best = sorted(model)[0];
      assert.deepEqual(top && [top.key, top.tie], best && [best.key, best.tie]);
    }
    const listed = [...h.ordered()].map((e) => [e.key, e.tie]);
    assert.deepEqual(listed, sorted(model).map((m) => [m.key, m.tie]));
  }));
});

Deno.test("MaxHeap: the default tie is insertion order; clear empties it and it fills again", () => {
  const h = new MaxHeap<string>();
  for (const [item, key] of [["a", 1], ["b", 2], ["c", 1], ["d", 2]] as const) h.push(item, key);
  assert.deepEqual([h.pop(), h.pop(), h.pop(), h.pop(), h.pop()], ["b", "d", "a", "c", undefined]);
  for (let i = 0; i < 40; i++) h.push(`x${i}`, i % 3);
  h.clear();
  assert.equal(h.size, 0);
  assert.equal(h.peek(), undefined);
  h.push("y", 0);
  assert.equal(h.pop(), "y");
});
