// The records of members that died are removed only once the job has an
// outcome, only past their lease, and each at the revision read
// (src/fleet/gone_members.ts; docs/DESIGN.md, "Liveness": while the job
// runs, the takeover of a dead member's splits charges their attempts
// through its record).
import assert from "node:assert/strict";
import { MemoryStore } from "../../mod.ts";
import type { Store } from "../../mod.ts";
import { removeGoneMembers } from "../../src/fleet/gone_members.ts";

const NOW = 1_764_668_000_000;
const member = (session: string, at: number, lease = 2000) =>
  JSON.stringify({ v: 2, session, maxInFlight: 2, runtime: "deno", version: "0.2.0", beat: 3, at, lease });
const plan = (outcome?: unknown) => JSON.stringify({ v: 2, term: 1, finality: "final", generation: 1, planned: 2, ...(outcome ? { outcome } : {}) });

async function fleet(outcome?: unknown): Promise<MemoryStore> {
  const store = new MemoryStore();
  await store.create("plan", plan(outcome));
  await store.create("member.dead", member("sd", NOW - 60_000));
  await store.create("assign.dead", JSON.stringify({ v: 2, term: 1, session: "sd", seq: 1 }));
  await store.create("member.live", member("sl", NOW - 500));
  await store.create("member.me", member("sm", NOW - 60_000));
  await store.create("member.old", JSON.stringify({ v: 2, session: "so", maxInFlight: 2, runtime: "deno", version: "0.1.0", beat: 3 }));
  return store;
}
const instances = async (s: Store) => (await s.list("member.")).map((e) => e.key.slice("member.".length));

Deno.test("gone members: nothing is removed while the job runs, nor after a failed plan (splits may still name them)", async () => {
  for (const outcome of [undefined, { kind: "planFailed", error: "x", attempts: 5, term: 1 }]) {
    const store = await fleet(outcome);
    assert.deepEqual(await removeGoneMembers(store, NOW, "me"), [], JSON.stringify(outcome));
    assert.deepEqual(await instances(store), ["dead", "live", "me", "old"]);
    await store.close();
  }
  assert.deepEqual(await removeGoneMembers(new MemoryStore(), NOW), [], "no plan at all");
});

Deno.test("gone members: after allComplete or stalled, those past their lease go (their assignment records too); the live, the caller and the unjudgeable stay", async () => {
  for (const outcome of [{ kind: "allComplete", completed: 2 }, { kind: "stalled", completed: 1, quarantined: 1 }]) {
    const store = await fleet(outcome);
    assert.deepEqual(await removeGoneMembers(store, NOW, "me"), ["dead"], outcome.kind);
    assert.deepEqual(await instances(store), ["live", "me", "old"], "a record with no time is not judged");
    assert.equal(await store.get("assign.dead"), undefined);
    await store.close();
  }
});

Deno.test("gone members: a member that beats between the read and the delete keeps its record (a delete at the revision read)", async () => {
  const store = await fleet({ kind: "allComplete", completed: 2 });
  // The member's beat lands right before our delete: the revision we read is no longer the record's.
  const racing: Store = new Proxy(store, {
    get: (t, p) => {
      if (p === "delete") {
        return async (key: string, revision?: number) => {
          if (key === "member.dead") {
            const cur = (await t.get(key))!;
            await t.update(key, member("sd", NOW), cur.revision);
          }
          return await t.delete(key, revision);
        };
      }
      const v = Reflect.get(t, p);
      return typeof v === "function" ? v.bind(t) : v;
    },
  });
  assert.deepEqual(await removeGoneMembers(racing, NOW, "me"), []);
  assert.ok(await store.get("member.dead"), "it beat: its record stays");
  assert.ok(await store.get("assign.dead"), "and its directives");
  await store.close();
});
