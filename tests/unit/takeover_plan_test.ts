// The leader's takeover decision (src/coordinator/leader/takeovers.ts,
// planTakeover): pure, so its rules are checked over random fleets.
import assert from "node:assert/strict";
import fc from "fast-check";
import type { MemberState } from "../../src/coordinator/leader/member_state.ts";
import { AssignmentTracker } from "../../src/coordinator/leader/assignment_tracker.ts";
import { LeaderView } from "../../src/coordinator/leader/leader_view.ts";
import { planTakeover } from "../../src/coordinator/leader/takeovers.ts";

const FC_SEED = Number(Deno.env.get("FC_SEED") ?? Date.now() % 2 ** 31);

const fleet = fc.array(fc.record({ free: fc.nat(4), load: fc.nat(20), plain: fc.nat(2) }), { minLength: 1, maxLength: 6 });

Deno.test("planTakeover: the heir first while it has lanes, then the least loaded with a lane beyond its offers, never the gone session, never past free lanes", () => {
  fc.assert(
    fc.property(fleet, fc.nat(12), fc.boolean(), fc.boolean(), (spec, n, withHeir, goneIsMember) => {
      const tracker = new AssignmentTracker(new LeaderView(() => {}, () => {}), new Map());
      const members = spec.map((s, i) => {
        const m = tracker.member(`m${i}`, `s${i}`, 8, false, false);
        tracker.edit((d) => {
          for (let k = 0; k < s.plain; k++) d.offer(m, `o${i}-${k}`, 1, 1);
        });
        return { m, ...s };
      });
      const gone = goneIsMember ? members[0].m.owner : { instance: "gone", session: "old" };
      const heir = withHeir ? tracker.member("gone", "new", 8, false, false) : undefined;
      const heirFree = 2;
      const free = (m: MemberState) => m === heir ? heirFree : members.find((x) => x.m === m)!.free;
      const load = (m: MemberState) => m === heir ? 0 : members.find((x) => x.m === m)!.load;
      const ids = Array.from({ length: n }, (_, i) => `x${i}`);
      const plain = (m: MemberState) => tracker.of(m).plain;
      const moves = planTakeover(ids, gone, heir, members.map((x) => x.m), free, load, plain);
      assert.deepEqual(moves.map((m) => m.id), ids, "every split once, in order");
      const got = new Map<MemberState, number>();
      for (const { to } of moves) if (to) got.set(to, (got.get(to) ?? 0) + 1);
      for (const [m, k] of got) {
        assert.ok(!(m.instance === gone.instance && m.session === gone.session), "never the gone session");
        const lanes = m === heir ? heirFree : free(m) - plain(m);
        assert.ok(k <= lanes, `${m.instance} got ${k} with ${lanes} lanes`);
      }
      if (heir) {
        // The heir fills first: nobody else gets one before the heir's lanes are used.
        const firstOther = moves.findIndex((x) => x.to !== undefined && x.to !== heir);
        if (firstOther >= 0) assert.equal(got.get(heir) ?? 0, Math.min(heirFree, n));
      }
      // Nobody (freed) only when no member had a lane left.
      const freed = moves.findIndex((x) => x.to === undefined);
      if (freed >= 0) {
        for (const x of members) {
          if (x.m.instance === gone.instance && x.m.session === gone.session) continue;
          assert.ok((got.get(x.m) ?? 0) >= x.free - x.plain, `x${freed} freed while ${x.m.instance} had a lane`);
        }
      }
    }),
    { seed: FC_SEED, numRuns: 400 },
  );
});
