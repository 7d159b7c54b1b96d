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
