import assert from "node:assert/strict";
import { MemoryStore } from "../../mod.ts";

Deno.test("MemoryStore: create after delete succeeds and revisions are bucket-wide", async () => {
  await using store = new MemoryStore();
  const a = await store.create("a", "1");
  const b = await store.create("b", "1");
  assert.ok(a.ok && b.ok);
  assert.ok(b.revision > a.revision);
  assert.deepEqual(await store.delete("a"), { ok: true });
  const again = await store.create("a", "2");
  assert.ok(again.ok && again.revision > b.revision);
});
