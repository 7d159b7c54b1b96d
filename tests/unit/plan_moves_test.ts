// Property and example tests for the balancing function (docs/DESIGN.md, "Takeover, revocation and leader loss").
// Replay a failing property run with FC_SEED=<seed printed in the failure>.
import assert from "node:assert/strict";
import fc from "fast-check";
import { type BalanceSplit, type BalanceView, type Move, fairShare, hasClaimable, memberLoads, planMoves, hashStrings, rendezvousRank } from "../../testing.ts";

const FC_SEED = Deno.env.get("FC_SEED") !== undefined
  ? Number(Deno.env.get("FC_SEED"))
  : Math.floor(Math.random() * 0x7fffffff);

/** fc.assert with the run's seed in the failure message. */
function check<T>(name: string, prop: fc.IProperty<T>, numRuns: number): void {
  try {
    fc.assert(prop, { seed: FC_SEED, numRuns });
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    const cause = e instanceof Error && e.cause !== undefined ? `\nCause: ${e.cause instanceof Error ? e.cause.message : String(e.cause)}` : "";
    throw new Error(`${name}: property failed; replay with FC_SEED=${FC_SEED}\n${msg}${cause}`, { cause: e });
  }
}

// --- an independent oracle -------------------------------------------------

interface Oracle {
  load: Map<string, number>;
  count: Map<string, number>;
  max: Map<string, number>;
  share: number;
  claimable: boolean;
  busy: Set<string>;
  unknownHandoff: boolean;
}

function oracle(view: BalanceView): Oracle {
  const max = new Map(view.members.map((m) => [m.instance, m.maxInFlight]));
  const load = new Map(view.members.map((m) => [m.instance, 0]));
  const count = new Map(view.members.map((m) => [m.instance, 0]));
  const busy = new Set<string>();
  let unknownHandoff = false;
  let total = 0;
  const live = (id: string | null | undefined): id is string => typeof id === "string" && max.has(id);
  for (const s of view.splits) {
    if (s.status !== "runnable") continue;
    total += s.weight;
    if (!live(s.owner)) {
      if (live(s.reservedFor)) busy.add(s.reservedFor);
      continue;
    }
    load.set(s.owner, load.get(s.owner)! + s.weight);
    count.set(s.owner, count.get(s.owner)! + 1);
    if (s.draining || s.inHandoff) busy.add(s.owner);
    if (s.inHandoff) {
      if (typeof s.handoffTo === "string") {
        if (live(s.handoffTo)) busy.add(s.handoffTo);
      } else unknownHandoff = true;
    }
  }
  const hasLane = (id: string) => count.get(id)! < max.get(id)!;
  const claimable = view.splits.some((s) =>
    s.status === "runnable" && !live(s.owner) &&
    (live(s.reservedFor) ? hasLane(s.reservedFor) : view.members.some((m) => hasLane(m.instance)))
  );
  const share = view.members.length ? total / view.members.length : 0;
  return { load, count, max, share, claimable, busy, unknownHandoff };
}

const sumSq = (load: Map<string, number>) => [...load.values()].reduce((a, x) => a + x * x, 0);

/** Every safety property of one planning cycle. */
function assertCycle(view: BalanceView, moves: Move[]): void {
  const o = oracle(view);
  const byId = new Map(view.splits.map((s) => [s.id, s]));
  if (o.claimable || o.unknownHandoff) assert.deepEqual(moves, [], "no moves while something is claimable");
  const splitSeen = new Set<string>();
  const memberSeen = new Set<string>();
  const after = new Map(o.load);
  let before = sumSq(o.load);
  for (const m of moves) {
    const s = byId.get(m.splitId);
    assert.ok(s, `move of unknown split ${m.splitId}`);
    assert.ok(!splitSeen.has(m.splitId), `split ${m.splitId} moved twice`);
    splitSeen.add(m.splitId);
    assert.equal(s.status, "runnable");
    assert.equal(s.owner, m.from, "moves from the owner");
    assert.ok(o.max.has(m.from) && o.max.has(m.to) && m.from !== m.to, "between distinct live members");
    assert.ok(!s.draining && !s.inHandoff, "never a draining or in-handoff split");
    assert.equal(m.weight, s.weight);
    assert.ok(!memberSeen.has(m.from), `${m.from} in two moves`);
    assert.ok(!memberSeen.has(m.to), `${m.to} in two moves`);
    memberSeen.add(m.from);
    memberSeen.add(m.to);
    assert.ok(!o.busy.has(m.from) && !o.busy.has(m.to), "busy members are left alone");
    assert.notEqual(o.count.get(m.from), o.max.get(m.from), "a member running a split in every lane keeps them");
    assert.ok(o.load.get(m.from)! > o.load.get(m.to)! + m.weight, "admission rule");
    assert.ok(o.load.get(m.to)! < o.share, "thief below its share");
    assert.ok(o.count.get(m.to)! + 1 <= o.max.get(m.to)!, "thief has a free lane");
    after.set(m.from, after.get(m.from)! - m.weight);
    after.set(m.to, after.get(m.to)! + m.weight);
    const now = sumSq(after);
    assert.ok(now < before, "each move strictly lowers the sum of squared loads");
    before = now;
  }
  if (moves.length === 0 && !o.claimable && !o.unknownHandoff) {
    // A fixpoint is real: no single admissible move was left out.
    for (const [v, lv] of o.load) {
      if (o.busy.has(v) || o.count.get(v) === o.max.get(v)) continue;
      for (const [t, lt] of o.load) {
        if (t === v || o.busy.has(t) || !(lt < o.share) || !(o.count.get(t)! < o.max.get(t)!)) continue;
        const fits = view.splits.some((s) =>
          s.owner === v && s.status === "runnable" && !s.draining && !s.inHandoff && lv > lt + s.weight
        );
        assert.ok(!fits, `planMoves returned [] but ${v} -> ${t} was admissible`);
      }
    }
  }
}

function apply(view: BalanceView, moves: Move[]): BalanceView {
  const to = new Map(moves.map((m) => [m.splitId, m.to]));
  return { members: view.members, splits: view.splits.map((s) => (to.has(s.id) ? { ...s, owner: to.get(s.id)! } : s)) };
}

function shuffled<T>(xs: readonly T[], seed: number): T[] {
  const out = [...xs];
  let a = seed >>> 0;
  const rnd = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

// --- generators ------------------------------------------------------------

const rarely = (p: number) =>
  fc.oneof({ arbitrary: fc.constant(false), weight: 100 - p }, { arbitrary: fc.constant(true), weight: p });

const weightArb = fc.oneof(
  fc.constant(1),
  fc.integer({ min: 1, max: 20 }),
  fc.constantFrom(1, 2, 5, 100),
  // Fractional weights, exactly representable (quarters), so the oracle's sums
  // are exact in any order; arbitrary doubles have their own test below.
  fc.integer({ min: 1, max: 200 }).map((q) => q / 4),
);

/** Arbitrary views: free, dead-owned, reserved, draining, in-handoff, finished splits, tight lanes. */
const viewArb: fc.Arbitrary<BalanceView> = fc
  .tuple(
    fc.array(fc.integer({ min: 0, max: 12 }), { minLength: 1, maxLength: 8 }),
    fc.array(
      fc.record({
        weight: weightArb,
        owner: fc.oneof({ arbitrary: fc.nat(), weight: 20 }, { arbitrary: fc.constantFrom(-1, -2), weight: 1 }),
        status: fc.oneof(
          { arbitrary: fc.constant("runnable" as const), weight: 10 },
          { arbitrary: fc.constantFrom("completed" as const, "quarantined" as const), weight: 1 },
        ),
        draining: rarely(5),
        inHandoff: rarely(5),
        handoffTo: fc.oneof({ arbitrary: fc.nat(), weight: 5 }, { arbitrary: fc.constant(-1), weight: 1 }),
        reservedFor: fc.option(fc.nat(), { freq: 3 }),
      }),
      { maxLength: 40 },
    ),
  )
  .map(([lanes, raw]) => {
    const n = lanes.length;
    const name = (k: number) => `m${k % n}`;
    const members = lanes.map((max, k) => ({ instance: `m${k}`, maxInFlight: max }));
    const splits: BalanceSplit[] = raw.map((r, i) => {
      const owner = r.owner === -1 ? null : r.owner === -2 ? "dead" : name(r.owner);
      const s: BalanceSplit = { id: `s${i}`, weight: r.weight, owner, status: r.status };
      if (r.draining) s.draining = true;
      if (r.inHandoff) {
        s.inHandoff = true;
        if (r.handoffTo >= 0) s.handoffTo = name(r.handoffTo);
      }
      if (r.reservedFor !== null && owner === null) s.reservedFor = r.reservedFor % 3 === 0 ? "gone" : name(r.reservedFor);
      return s;
    });
    return { members, splits };
  });

/** Settled fleets: every split runnable and owned, no transfer in flight, skewed placement. */
const settledArb = (weights: fc.Arbitrary<number>, lanes: "enough" | "any"): fc.Arbitrary<BalanceView> =>
  fc
    .tuple(
      fc.integer({ min: 2, max: 10 }),
      fc.array(fc.tuple(weights, fc.nat({ max: 99 })), { maxLength: 60 }),
      fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 10, maxLength: 10 }),
    )
    .map(([n, raw, maxes]) => {
      // Skew: about half the splits land on m0.
      const splits: BalanceSplit[] = raw.map(([w, k], i) => ({
        id: `s${i}`,
        weight: w,
        owner: `m${k < 50 ? 0 : k % n}`,
        status: "runnable",
      }));
      const members = Array.from({ length: n }, (_, k) => ({
        instance: `m${k}`,
        maxInFlight: lanes === "enough" ? splits.length + 1 : Math.max(maxes[k], 1),
      }));
      // With lanes "any", a member may hold more than its lanes (it lowered maxInFlight); that is fine.
      return { members, splits };
    });

const m = (instance: string, maxInFlight = 8) => ({ instance, maxInFlight });
const r = (id: string, weight: number, owner: string | null, extra: Partial<BalanceSplit> = {}): BalanceSplit => ({
  id,
  weight,
  owner,
  status: "runnable",
  ...extra,
});

// --- properties ------------------------------------------------------------

Deno.test("planMoves: every cycle is safe (claim first, admission, one move per member, lanes, busy members)", () => {
  check("safety", fc.property(viewArb, fc.string({ maxLength: 6 }), (view, seed) => {
    assertCycle(view, planMoves(view, { seed }));
  }), 3000);
  check("safety (settled)", fc.property(settledArb(weightArb, "any"), fc.string({ maxLength: 6 }), (view, seed) => {
    assertCycle(view, planMoves(view, { seed }));
  }), 1000);
});

Deno.test("planMoves: deterministic and independent of input order", () => {
  const arb = fc.oneof(viewArb, settledArb(fc.constantFrom(1, 2, 3), "any"));
  check("determinism", fc.property(arb, fc.string({ maxLength: 6 }), fc.integer(), (view, seed, perm) => {
    const a = planMoves(view, { seed });
    assert.deepEqual(planMoves(view, { seed }), a);
    const permuted = { members: shuffled(view.members, perm), splits: shuffled(view.splits, perm + 1) };
    assert.deepEqual(planMoves(permuted, { seed }), a);
    assert.deepEqual(memberLoads(permuted), memberLoads(view));
    assert.equal(fairShare(permuted), fairShare(view));
  }), 1500);
});

Deno.test("planMoves: no moves while something is claimable", () => {
  check("claim first", fc.property(viewArb, (view) => {
    if (!oracle(view).claimable) return;
    assert.equal(hasClaimable(view), true);
    assert.deepEqual(planMoves(view, { seed: "j" }), []);
  }), 2000);
});

Deno.test("planMoves: unit weights and enough lanes converge to max − min ≤ 1 within S cycles, then a fixpoint", () => {
  // Bound asserted: at most S cycles for S splits. Each cycle moves at least one
  // split while max − min ≥ 2 (the heaviest member can always give to the
  // lightest, which is below the share). Proven: fewer than S + M cycles (the
  // excess above ceil(avg) falls by one per cycle, then the deficit below
  // floor(avg), which is < M); observed over 100k random fleets: ≤ S − 1, the
  // worst being every split on one member of many.
  check("convergence", fc.property(settledArb(fc.constant(1), "enough"), fc.string({ maxLength: 4 }), (view, seed) => {
    let v = view;
    const s = view.splits.length;
    for (let cycle = 0;; cycle++) {
      const moves = planMoves(v, { seed });
      assertCycle(v, moves);
      const loads = [...memberLoads(v).values()].map((x) => x.load);
      const spread = Math.max(...loads) - Math.min(...loads);
      if (moves.length === 0) {
        assert.ok(spread <= 1, `fixpoint with max − min = ${spread}`);
        assert.deepEqual(planMoves(v, { seed }), [], "fixpoint is stable");
        break;
      }
      assert.ok(spread >= 2, "no moves once balanced to ±1");
      assert.ok(cycle < Math.max(1, s), `did not converge within ${s} cycles`);
      v = apply(v, moves);
    }
  }), 500);
});

Deno.test("planMoves: arbitrary weights and lanes reach a fixpoint with no admissible move left", () => {
  check("weighted fixpoint", fc.property(settledArb(weightArb, "any"), fc.string({ maxLength: 4 }), (view, seed) => {
    let v = view;
    // The sum of squared loads strictly falls each cycle over a finite state space;
    // in practice it settles quickly, 4·S is a generous bound.
    for (let cycle = 0;; cycle++) {
      const moves = planMoves(v, { seed });
      assertCycle(v, moves); // asserts, on [], that no admissible move was left
      if (moves.length === 0) break;
      assert.ok(cycle < 4 * view.splits.length, "did not settle");
      v = apply(v, moves);
    }
  }), 500);
});

Deno.test("planMoves: arbitrary double weights never oscillate (rounding cannot admit a swap)", () => {
  // A gap that exists only by rounding: 10.329… − 0.329… lands exactly on 5.
  const view: BalanceView = {
    members: [{ instance: "m0", maxInFlight: 1 }, { instance: "m1", maxInFlight: 2 }],
    splits: [r("s0", 2, "m0"), r("s1", 0.32904161752779376, "m0"), r("s2", 5, "m0"), r("s3", 3, "m0")],
  };
  const first = planMoves(view, { seed: "" });
  assert.deepEqual(first, [{ splitId: "s2", from: "m0", to: "m1", weight: 5 }]);
  assert.deepEqual(planMoves(apply(view, first), { seed: "" }), []);

  const doubles = fc.double({ min: 1e-3, max: 1e6, noNaN: true, noDefaultInfinity: true });
  check("doubles settle", fc.property(settledArb(doubles, "any"), fc.string({ maxLength: 4 }), (start, seed) => {
    let v = start;
    const seen = new Set<string>();
    for (let cycle = 0;; cycle++) {
      const moves = planMoves(v, { seed });
      if (moves.length === 0) break;
      const key = JSON.stringify(v.splits.map((s) => s.owner));
      assert.ok(!seen.has(key), "a placement repeated: oscillation");
      seen.add(key);
      assert.ok(cycle < 4 * start.splits.length, "did not settle");
      v = apply(v, moves);
    }
  }), 500);
});

Deno.test("rendezvousRank: a deterministic permutation, independent of candidate order, stable under removal", () => {
  const cands = fc.uniqueArray(fc.string({ minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 8 });
  check("rendezvous", fc.property(fc.string(), cands, fc.string(), fc.integer(), (split, cs, seed, perm) => {
    const r = rendezvousRank(split, cs, seed);
    assert.deepEqual([...r].sort(), [...cs].sort());
    assert.deepEqual(rendezvousRank(split, shuffled(cs, perm), seed), r);
    const gone = r[(perm >>> 0) % r.length];
    assert.deepEqual(rendezvousRank(split, cs.filter((c) => c !== gone), seed), r.filter((c) => c !== gone));
  }), 1000);
  assert.deepEqual(rendezvousRank("s", ["a", "b", "a"], "j").length, 2);
});

Deno.test("rendezvousRank: first choices spread evenly over candidates", () => {
  const cands = ["w0", "w1", "w2", "w3"];
  const firsts = new Map(cands.map((c) => [c, 0]));
  for (let i = 0; i < 4000; i++) {
    const first = rendezvousRank(`split-${i}`, cands, "job")[0];
    firsts.set(first, firsts.get(first)! + 1);
  }
  for (const [c, n] of firsts) assert.ok(n > 850 && n < 1150, `${c} ranked first ${n}/4000 times`);
});

Deno.test("hashStrings: stable values (same on every runtime) and part boundaries matter", () => {
  assert.equal(hashStrings([]), hashStrings([]));
  assert.notEqual(hashStrings(["ab", "c"]), hashStrings(["a", "bc"]));
  assert.notEqual(hashStrings(["a"]), hashStrings(["a", ""]));
  for (const parts of [["job", "split-1"], ["", ""], ["é✓"]]) {
    const h = hashStrings(parts);
    assert.ok(Number.isSafeInteger(h) && h >= 0);
  }
  assert.equal(hashStrings(["job", "split-1"]), GOLDEN_HASH);
});
const GOLDEN_HASH = 4775138568835571;

// --- examples with exact outputs ---------------------------------------------


Deno.test("example: weight, not count — one split of 100 vs four of 1 stays put", () => {
  const view = {
    members: [m("a"), m("b")],
    splits: [r("big", 100, "a"), r("x1", 1, "b"), r("x2", 1, "b"), r("x3", 1, "b"), r("x4", 1, "b")],
  };
  assert.deepEqual(planMoves(view, { seed: "j" }), []);
  // Reversed (100 on the thief side of the share) it is still put.
  const flipped = { members: view.members, splits: view.splits.map((s) => ({ ...s, owner: s.owner === "a" ? "b" : "a" })) };
  assert.deepEqual(planMoves(flipped, { seed: "j" }), []);
  assert.deepEqual(memberLoads(view), new Map([["a", { load: 100, count: 1 }], ["b", { load: 4, count: 4 }]]));
  assert.equal(fairShare(view), 52);
});

Deno.test("example: the split closest to half the gap, and greedy pairing of victims and thieves", () => {
  // a 10, b 6, c 1, d 0; share 4.25. a pairs with d (gap 10: weight 4 is
  // closest to 5), b with c (gap 5: weight 2 beats 4, 2·3 > 4·1).
  const view = {
    members: [m("c"), m("a"), m("d"), m("b")],
    splits: [
      r("a4", 4, "a"),
      r("a3", 3, "a"),
      r("a2", 2, "a"),
      r("a1", 1, "a"),
      r("b4", 4, "b"),
      r("b2", 2, "b"),
      r("c1", 1, "c"),
    ],
  };
  assert.deepEqual(planMoves(view, { seed: "j" }), [
    { splitId: "a4", from: "a", to: "d", weight: 4 },
    { splitId: "b2", from: "b", to: "c", weight: 2 },
  ]);
});

Deno.test("example: a thief without a free lane is skipped; a thief at or above the share is not one", () => {
  const view = {
    members: [m("a"), m("b", 1), m("c")],
    splits: [r("a1", 1, "a"), r("a2", 1, "a"), r("a3", 1, "a"), r("a4", 1, "a"), r("a5", 1, "a"), r("b1", 1, "b"), r("c1", 1, "c")],
  };
  // b (load 1) has no free lane, so c (load 1) is the thief. Tie among a's unit splits by seeded hash.
  const moves = planMoves(view, { seed: "j" });
  assert.equal(moves.length, 1);
  assert.deepEqual({ ...moves[0], splitId: "?" }, { splitId: "?", from: "a", to: "c", weight: 1 });
  // 3, 2, 2: share 2.33, but 3 > 2 + 1 fails: balanced to ±1.
  assert.deepEqual(
    planMoves({ members: [m("a"), m("b"), m("c")], splits: [r("1", 1, "a"), r("2", 1, "a"), r("3", 1, "a"), r("4", 1, "b"), r("5", 1, "b"), r("6", 1, "c"), r("7", 1, "c")] }, { seed: "j" }),
    [],
  );
});

Deno.test("example: seeded tie-breaks are exact and job-specific", () => {
  const view = { members: [m("a"), m("b")], splits: [r("s1", 1, "a"), r("s2", 1, "a"), r("s3", 1, "a")] };
  assert.deepEqual(planMoves(view, { seed: "job-1" }), [{ splitId: GOLDEN_TIE_1, from: "a", to: "b", weight: 1 }]);
  const picks = new Set(["j0", "j1", "j2", "j3", "j4", "j5", "j6", "j7"].map((seed) => planMoves(view, { seed })[0].splitId));
  assert.ok(picks.size > 1, "different jobs break ties differently");
});
const GOLDEN_TIE_1 = "s3";

Deno.test("example: transfers in flight make their members busy; nothing piles up", () => {
  const base = [r("a1", 1, "a"), r("a2", 1, "a"), r("a3", 1, "a"), r("a4", 1, "a"), r("c1", 1, "c")];
  const members = [m("a"), m("b"), m("c")];
  // a is already handing a4 to b: neither a nor b takes part; c is not below... it is (share 5/3): but no victim is left.
  const pending = [...base.slice(0, 3), r("a4", 1, "a", { inHandoff: true, handoffTo: "b" }), base[4]];
  assert.deepEqual(planMoves({ members, splits: pending }, { seed: "j" }), []);
  // Destination unknown: plan nothing.
  const unknown = [...base.slice(0, 3), r("a4", 1, "a", { inHandoff: true }), base[4]];
  assert.deepEqual(planMoves({ members, splits: unknown }, { seed: "j" }), []);
  // A draining split is never moved and its owner is left alone.
  const draining = [...base.slice(0, 3), r("a4", 1, "a", { draining: true }), base[4]];
  assert.deepEqual(planMoves({ members, splits: draining }, { seed: "j" }), []);
  // Released for b but b has no free lane: not claimable by anyone, and b is busy (arriving).
  const reserved = {
    members: [m("a"), m("b", 1), m("c")],
    splits: [...base, r("b1", 1, "b"), r("x", 1, null, { reservedFor: "b", inHandoff: true })],
  };
  assert.equal(hasClaimable(reserved), false);
  assert.deepEqual(planMoves(reserved, { seed: "j" }).map((mv) => [mv.from, mv.to]), [["a", "c"]]);
});

Deno.test("example: claim first — free, dead-owned and reservation-for-the-gone splits block balancing", () => {
  const members = [m("a"), m("b")];
  const owned = [r("a1", 1, "a"), r("a2", 1, "a"), r("a3", 1, "a")];
  for (const extra of [r("f", 1, null), r("d", 1, "dead"), r("g", 1, null, { reservedFor: "gone" })]) {
    assert.equal(hasClaimable({ members, splits: [...owned, extra] }), true);
    assert.deepEqual(planMoves({ members, splits: [...owned, extra] }, { seed: "j" }), []);
  }
  // Completed and quarantined splits are not claimable and weigh nothing.
  const done = [...owned, r("c", 50, null, { status: "completed" }), r("q", 50, null, { status: "quarantined" })];
  assert.equal(hasClaimable({ members, splits: done }), false);
  assert.equal(planMoves({ members, splits: done }, { seed: "j" }).length, 1);
});

Deno.test("planMoves: rejects malformed views", () => {
  assert.throws(() => planMoves({ members: [m("a"), m("a")], splits: [] }, { seed: "j" }), RangeError);
  assert.throws(() => planMoves({ members: [m("a"), m("b")], splits: [r("s", 1, "a"), r("s", 1, "b")] }, { seed: "j" }), RangeError);
  assert.throws(() => planMoves({ members: [m("a"), m("b")], splits: [r("s", 0, "a")] }, { seed: "j" }), RangeError);
  assert.throws(() => planMoves({ members: [m("a"), m("b")], splits: [r("s", NaN, "a")] }, { seed: "j" }), RangeError);
});
