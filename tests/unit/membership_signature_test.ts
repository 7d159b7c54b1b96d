import assert from "node:assert/strict";
import type { MemberState } from "../../src/coordinator/leader/member_state.ts";
import { AssignmentTracker } from "../../src/coordinator/leader/assignment_tracker.ts";
import { LeaderView } from "../../src/coordinator/leader/leader_view.ts";
import { MembershipSignature } from "../../src/coordinator/leader/signature.ts";

function states(...ms: MemberState[]): Map<string, MemberState> {
  return new Map(ms.map((m) => [m.instance, m]));
}

Deno.test("membership signature: the sorted claimers and the generation; draining members and standbys are left out", () => {
  const sig = new MembershipSignature();
  const tracker = new AssignmentTracker(new LeaderView(() => {}, () => {}), new Map());
  const a = tracker.member("a", "s1", 4, false, false);
  const b = tracker.member("b", "s2", 4, false, false);
  const standby = tracker.member("c", "s3", 0, false, false);
  assert.equal(sig.of(states(b, a, standby), 3), "a:s1,b:s2#3");
  assert.equal(sig.of(states(a, b), 3), "a:s1,b:s2#3", "the same claimers in another order");
  assert.equal(sig.of(states(a, b), 4), "a:s1,b:s2#4", "a new generation");
  b.draining = true;
  assert.equal(sig.of(states(a, b), 4), "a:s1#4", "a draining member takes no work");
  assert.equal(sig.of(states(a, tracker.member("b", "s9", 4, false, false)), 4), "a:s1,b:s9#4", "a restarted member (new session)");
  assert.equal(sig.of(new Map(), 4), "#4");
});
