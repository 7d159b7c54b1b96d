// The leader's view (src/coordinator/leader/leader_view.ts) applies watch
// events and direct reads by revision: a late delivery never undoes what a
// newer read brought in.
import assert from "node:assert/strict";
import { LeaderView } from "../../src/coordinator/leader/leader_view.ts";
import type { MemberRecord } from "../../admin.ts";
import { encodeRecord } from "../../src/records.ts";

const member = (session: string, beat: number): string =>
  encodeRecord({ v: 2, session, maxInFlight: 4, runtime: "deno", version: "test", beat } satisfies MemberRecord);

Deno.test("leader view: a lagging watch's old delete of a member does not remove the successor a read brought in", () => {
  const changes: string[] = [];
  const view = new LeaderView(() => {}, (instance, prev, next) => changes.push(`${instance}:${prev?.session ?? "-"}->${next?.record.session ?? "-"}`));
  view.apply("member.", { type: "put", key: "member.a", value: member("old", 1), revision: 5 });
  // The member left (delete at 6) and restarted (create at 7); a re-read brought in the restart first.
  view.put("member.a", member("new", 0), 7);
  view.apply("member.", { type: "delete", key: "member.a", revision: 6 });
  view.apply("member.", { type: "put", key: "member.a", value: member("new", 0), revision: 7 });
  assert.equal(view.members.get("a")?.record.session, "new", "the successor stays in the view");
  assert.deepEqual(changes, ["a:-->old", "a:old->new"]);
  // A delete newer than what the view holds still removes it.
  view.apply("member.", { type: "delete", key: "member.a", revision: 8 });
  assert.equal(view.members.has("a"), false);
  assert.deepEqual(changes.at(-1), "a:new->-");
});

Deno.test("leader view: what a split record's change changed is decided once (splitChange), and a change of nothing a decision reads moves no index", async () => {
  const { splitChange } = await import("../../src/coordinator/leader/split_change.ts");
  const base = { v: 2 as const, epoch: 2, status: "runnable" as const, owner: { instance: "a", session: "s" }, attempts: 0, weight: 4, progress: null };
  assert.equal(splitChange(undefined, base), "added");
  assert.equal(splitChange(base, undefined), "removed");
  assert.equal(splitChange(base, { ...base, epoch: 3 }), "ownership");
  assert.equal(splitChange(base, { ...base, owner: { instance: "a", session: "t" } }), "ownership");
  assert.equal(splitChange(base, { ...base, owner: null, status: "completed" }), "ownership");
  assert.equal(splitChange(base, { ...base, status: "quarantined" }), "status");
  assert.equal(splitChange(base, { ...base, attempts: 1 }), "status");
  assert.equal(splitChange(base, { ...base, weight: 2, cuts: 1 }), "shape");
  assert.equal(splitChange(base, { ...base, progress: { watermark: 3 }, tenancies: [] }), "detail");
  const seen: string[] = [];
  const view = new LeaderView((_id, _prev, _next, change) => seen.push(change), () => {});
  view.put("split.x", JSON.stringify(base), 1);
  view.put("split.x", JSON.stringify({ ...base, lastFailure: "hand edit" }), 2);
  view.put("split.x", JSON.stringify({ ...base, owner: null }), 3);
  assert.deepEqual(seen, ["added", "detail", "ownership"]);
  assert.equal(view.heldByKey("a s"), 0);
  assert.ok(view.free.has("x"));
});

Deno.test("leader view: a new snapshot (reset … ready) removes what it did not bring, keeps planned splits and what it brought, and marks survive a record's change", () => {
  const rec = (epoch: number) => JSON.stringify({ v: 2, epoch, status: "runnable", owner: null, attempts: 0, weight: 1, progress: null });
  const view = new LeaderView(() => {}, () => {});
  for (const [id, rev] of [["a", 1], ["b", 2], ["c", 3], ["d", 4]] as const) view.put(`split.${id}`, rec(1), rev);
  view.plan("p", { v: 2, epoch: 0, status: "runnable", owner: null, attempts: 0, weight: 1, progress: null }, 0);
  view.apply("split.", { type: "reset", reason: "test" });
  view.apply("split.", { type: "put", key: "split.a", value: rec(1), revision: 1 }); // as held
  view.apply("split.", { type: "put", key: "split.c", value: rec(2), revision: 9 }); // changed meanwhile
  view.put("split.c", rec(3), 10); // and changed again by a read (its mark stays)
  view.put("split.e", rec(1), 11); // read in, not in the snapshot: the snapshot is older than it, so it goes
  view.apply("split.", { type: "put", key: "split.f", value: rec(1), revision: 12 }); // new in the snapshot
  view.apply("split.", { type: "delete", key: "split.d", revision: 13 }); // gone before the ready
  view.apply("split.", { type: "ready" });
  assert.deepEqual([...view.splits.keys()].sort(), ["a", "c", "f", "p"]);
  assert.equal(view.splits.revision("c"), 10);
  assert.equal(view.splits.revision("p"), 0, "a planned split not dealt yet has no record to see: it stays");
  // A second snapshot starts from no marks: what the first brought must be brought again.
  view.apply("split.", { type: "reset", reason: "again" });
  view.apply("split.", { type: "put", key: "split.f", value: rec(1), revision: 12 });
  view.apply("split.", { type: "ready" });
  assert.deepEqual([...view.splits.keys()].sort(), ["f", "p"]);
  // A freed slot taken by a new split carries no mark of the split that held it.
  view.apply("split.", { type: "reset", reason: "third" });
  view.apply("split.", { type: "put", key: "split.f", value: rec(1), revision: 12 });
  view.apply("split.", { type: "delete", key: "split.f", revision: 14 });
  view.put("split.g", rec(1), 15); // reuses f's slot
  view.apply("split.", { type: "ready" });
  assert.deepEqual([...view.splits.keys()].sort(), ["p"]);
});
