// The assignment record (src/coordinator/leader/assign_build.ts): its offers
// are listed in dealing order — heaviest first, then the planner's order —
// whatever order they were dealt in, because a member that claims its
// spares without a leader claims them in the order listed (spares are dealt
// from the tail of the order, latest first).
import assert from "node:assert/strict";
import { LeaderView } from "../../src/coordinator/leader/leader_view.ts";
import { type AssignListing, buildAssignRecord } from "../../src/coordinator/leader/assign_build.ts";
import type { SplitRecord } from "../../admin.ts";
import { encodeRecord } from "../../src/records.ts";

Deno.test("assign record: offers are listed in dealing order, not in the order they were dealt", () => {
  const view = new LeaderView(() => {}, () => {});
  const revs = new Map<string, number>();
  const weights: Record<string, number> = { s1: 1, s2: 1, s3: 5, s4: 1, s5: 1 };
  let rev = 0;
  for (const [id, weight] of Object.entries(weights)) {
    const rec: SplitRecord = { v: 2, epoch: 0, status: "runnable", owner: null, attempts: 0, weight, progress: null };
    revs.set(id, ++rev);
    view.rank(id); // the planner's order
    view.put(`split.${id}`, encodeRecord(rec), rev);
  }
  // Dealt as spares are, from the tail: s5, then s4, then the lane's s2, then the heavy s3.
  const dealt = ["s5", "s4", "s2", "s3"];
  const listing: AssignListing = {
    session: "a-session",
    seq: 1,
    revokes: new Map(),
    grants: new Map(),
    offers: new Map(dealt.map((id) => [id, revs.get(id)!])),
    spares: new Set(["s5", "s4"]),
    asks: new Map(),
  };
  const { record, unlisted } = buildAssignRecord(listing, view, 1, [], []);
  assert.equal(unlisted, false);
  assert.deepEqual(record.offers.map((o) => o.id), ["s3", "s2", "s4", "s5"], "heaviest first, then the planner's order");
  assert.deepEqual(record.offers.filter((o) => o.spare).map((o) => o.id), ["s4", "s5"], "a member without a leader claims s4 first");
});
