// The leader's decisions are pure functions from the view, the member states
// and `now` to intents (src/coordinator/leader/intents.ts): their rules are
// checked here over random fleets, without a store or a clock.
import assert from "node:assert/strict";
import fc from "fast-check";
import { decideOrphans, type Gone } from "../../src/coordinator/leader/judge.ts";
import { LaneLedger, type LeaderIntent } from "../../src/coordinator/leader/intents.ts";
import { LeaderView, parseOwnerKey } from "../../src/coordinator/leader/leader_view.ts";
import type { MemberState } from "../../src/coordinator/leader/member_state.ts";
import { AssignmentTracker } from "../../src/coordinator/leader/assignment_tracker.ts";
import { freeLanes } from "../../src/coordinator/leader/offers.ts";
import { decideDrain, decideRevocations } from "../../src/coordinator/leader/revocation_rules.ts";
import type { MemberRecord, Owner, PlanRecord, SplitRecord } from "../../admin.ts";
import { encodeRecord } from "../../src/records.ts";
import { decideCompletion } from "../../src/coordinator/leader/completion.ts";
import { decideCutAsks } from "../../src/coordinator/leader/cut_asks.ts";

const FC_SEED = Number(Deno.env.get("FC_SEED") ?? Date.now() % 2 ** 31);

/** A random fleet: members (some draining), splits owned by them, by older sessions or by nobody. */
const fleetSpec = fc.record({
  members: fc.array(fc.record({ lanes: fc.nat(4), draining: fc.boolean(), restarted: fc.boolean(), splittable: fc.boolean() }), {
    minLength: 1,
    maxLength: 5,
  }),
  splits: fc.array(fc.record({ owner: fc.nat(7), old: fc.boolean() }), { maxLength: 20 }),
  gone: fc.array(fc.nat(6), { maxLength: 3 }),
  delayMs: fc.constantFrom(0, 100),
  now: fc.constantFrom(0, 50, 500),
});

type FleetSpec = typeof fleetSpec extends fc.Arbitrary<infer T> ? T : never;

function build(spec: FleetSpec) {
  const view = new LeaderView(() => {}, () => {});
  const states = new Map<string, MemberState>();
  const tracker = new AssignmentTracker(view, states);
  let rev = 0;
  spec.members.forEach((m, i) => {
    const session = m.restarted ? `new${i}` : `s${i}`;
    const st = tracker.member(`m${i}`, session, m.lanes, m.draining, false);
    states.set(st.instance, st);
    const rec: MemberRecord = { v: 2, session, maxInFlight: m.lanes, runtime: "test", version: "0", beat: 0, ...(m.splittable ? { splittable: true as const } : {}) };
    view.put(`member.${st.instance}`, encodeRecord(rec), ++rev);
  });
  spec.splits.forEach((s, i) => {
    const idx = s.owner % (spec.members.length + 2);
    let owner: Owner | null = null;
    if (idx < spec.members.length) {
      owner = { instance: `m${idx}`, session: s.old ? `s${idx}` : states.get(`m${idx}`)!.session };
    } else if (idx === spec.members.length) owner = { instance: "ghost", session: "g" };
    const rec: SplitRecord = { v: 2, epoch: 1, status: "runnable", owner, attempts: 0, weight: 1, progress: null };
    view.put(`split.s${i}`, encodeRecord(rec), ++rev);
  });
  const gone = new Map<string, Gone>(spec.gone.map((g) => [g < spec.members.length ? `m${g}` : "ghost", { since: 0 }]));
  return { view, states, tracker, gone };
}

const live = (states: ReadonlyMap<string, MemberState>, o: Owner) => states.get(o.instance)?.session === o.session;

Deno.test("decideOrphans: only splits of sessions that are not live are taken, each once, with the right charge and heir", () => {
  fc.assert(
    fc.property(fleetSpec, (spec) => {
      const { view, states, gone } = build(spec);
      const { intents } = decideOrphans({
        view,
        states,
        now: spec.now,
        delayMs: spec.delayMs,
        gone,
        leftClean: new Map(),
        rereading: new Set(),
        owner: parseOwnerKey,
      });
      const taken = new Set<string>();
      for (const i of intents) {
        if (i.kind !== "take") continue;
        assert.ok(!live(states, i.owner), `a take of ${i.owner.instance}|${i.owner.session}, a live session`);
        for (const id of i.ids) {
          assert.ok(!taken.has(id), `split ${id} taken twice`);
          taken.add(id);
          const o = view.splits.get(id)!.record.owner!;
          assert.deepEqual({ instance: o.instance, session: o.session }, i.owner, `split ${id} is not the owner's`);
        }
        if (i.heir) {
          assert.equal(i.heir.instance, i.owner.instance, "the heir is the same instance");
          assert.ok(!i.heir.draining && i.heir.maxInFlight > 0, "the heir takes work");
        } else if (spec.delayMs > 0) {
          assert.ok(spec.now >= (gone.get(i.owner.instance)?.since ?? spec.now) + spec.delayMs, "taken before rebalanceDelayMs");
        }
        assert.equal(i.charge, i.why !== "left");
      }
      // Nothing a live session holds is ever taken; every orphan is taken, dated or waits for its judgment.
      for (const [id, e] of view.splits) {
        const o = e.record.owner;
        if (o && live(states, o)) assert.ok(!taken.has(id));
      }
    }),
    { seed: FC_SEED, numRuns: 400 },
  );
});

Deno.test("decideRevocations: every split a draining member holds is revoked once, successors never the member itself nor past their free lanes", () => {
  fc.assert(
    fc.property(fleetSpec, (spec) => {
      const { view, states, tracker } = build(spec);
      const before = new Map([...states.values()].map((m) => [m, freeLanes(view, tracker, m) - tracker.of(m).plain]));
      const { intents } = decideRevocations({ view, states, tracker, now: 0 }, "sig", 1000);
      const named = new Map<MemberState, number>();
      const revoked = new Set<string>();
      for (const i of intents) {
        assert.ok(i.kind === "revoke" || i.kind === "name", `unexpected ${i.kind} with no revocation standing`);
        if (i.kind !== "revoke") continue;
        assert.ok(i.member.draining, "only a draining member is revoked when nothing is stolen");
        assert.ok(!revoked.has(i.id), `split ${i.id} revoked twice`);
        revoked.add(i.id);
        const o = view.splits.get(i.id)!.record.owner;
        assert.ok(o && o.instance === i.member.instance && o.session === i.member.session, `split ${i.id} is not held by ${i.member.instance}`);
        const to = i.revoke.to && states.get(i.revoke.to.instance);
        if (to) {
          assert.notEqual(to, i.member, "the member is never its own successor");
          assert.ok(!to.draining, "a draining member is never a successor");
          named.set(to, (named.get(to) ?? 0) + 1);
        }
      }
      for (const [m, n] of named) assert.ok(n <= before.get(m)!, `${m.instance} named for ${n} with ${before.get(m)} lanes`);
      for (const m of states.values()) {
        if (!m.draining) continue;
        for (const id of view.byOwner.get(m.key) ?? []) assert.ok(revoked.has(id), `split ${id} of draining ${m.instance} not revoked`);
      }
    }),
    { seed: FC_SEED, numRuns: 400 },
  );
});

Deno.test("decideDrain then applying: each successor's incoming rises by exactly the revocations naming it", () => {
  fc.assert(
    fc.property(fleetSpec, (spec) => {
      const { view, states, tracker } = build(spec);
      const incoming = new Map([...states.values()].map((m) => [m, tracker.of(m).incoming]));
      const intents: LeaderIntent[] = [];
      const lanes = new LaneLedger();
      for (const m of states.values()) if (m.draining) intents.push(...decideDrain({ view, states, tracker, now: 0 }, m, lanes));
      const naming = new Map<MemberState, number>();
      for (const i of intents) {
        if (i.kind !== "revoke") continue;
        tracker.edit((d) => d.revoke(i.member, i.id, i.revoke)); // the successor it names expects the split
        const to = i.revoke.to && states.get(i.revoke.to.instance);
        if (to) naming.set(to, (naming.get(to) ?? 0) + 1);
      }
      for (const m of states.values()) {
        assert.equal(tracker.of(m).incoming, incoming.get(m)! + (naming.get(m) ?? 0));
        assert.equal(lanes.of(m), naming.get(m) ?? 0, "the ledger counts what the intents imply");
      }
    }),
    { seed: FC_SEED, numRuns: 300 },
  );
});

Deno.test("decideCompletion: confirm once the view shows every planned split finished, clear an outcome the view no longer supports, nothing otherwise", () => {
  const view = new LeaderView(() => {}, () => {});
  const plan = { v: 2, term: 3, generation: 1, finality: "final", planned: 2 } as unknown as PlanRecord;
  const split = (status: SplitRecord["status"]): SplitRecord => ({ v: 2, epoch: 1, status, owner: null, attempts: 0, weight: 1, progress: null });
  view.put("split.a", encodeRecord(split("completed")), 1);
  assert.equal(decideCompletion(view, plan, 3, 7), undefined, "one planned split not seen yet");
  view.put("split.b", encodeRecord(split("runnable")), 2);
  assert.equal(decideCompletion(view, plan, 3, 7), undefined, "a runnable split");
  view.put("split.b", encodeRecord(split("quarantined")), 3);
  assert.deepEqual(decideCompletion(view, plan, 3, 7), { action: "confirm", plan, term: 3, revision: 7 });
  assert.equal(decideCompletion(view, plan, 4, 7), undefined, "another term's plan");
  const decided = { ...plan, outcome: { kind: "stalled", completed: 1, quarantined: 1 } } as PlanRecord;
  assert.equal(decideCompletion(view, decided, 3, 8), undefined, "the outcome stands");
  view.put("split.b", encodeRecord(split("cancelled")), 4);
  assert.equal(decideCompletion(view, decided, 3, 8)?.action, "clear", "the quarantined split was cancelled since");
});

Deno.test("decideCutAsks: asks only splittable owners that take work, for splits they hold, none revoked or cooling down; gives up asks past their time", () => {
  fc.assert(
    fc.property(fleetSpec, fc.array(fc.nat(19), { maxLength: 6 }), fc.array(fc.nat(19), { maxLength: 6 }), (spec, revoked, cooling) => {
      const { view, states, tracker } = build(spec);
      const owned = (id: string) => [...states.values()].find((m) => view.byOwner.get(m.key)?.has(id));
      for (const n of revoked) {
        const id = `s${n}`, m = owned(id);
        if (m) tracker.edit((d) => d.revoke(m, id, { epoch: 1, since: 0, steal: true }));
      }
      // One standing ask, half past its time, to see it given up.
      const asked = new Map<string, MemberState>();
      const first = [...states.values()].find((m) => (view.byOwner.get(m.key)?.size ?? 0) > 0);
      if (first) {
        const id = [...view.byOwner.get(first.key)!][0];
        tracker.edit((d) => d.ask(first, id, { epoch: 1, parts: 2, ask: 1, since: spec.now >= 100 ? 0 : spec.now, cuts: 0 }));
        asked.set(id, first);
      }
      const cooldown = new Map(cooling.map((n) => [`s${n}`, 1e9]));
      const { intents } = decideCutAsks({
        view,
        states,
        now: spec.now,
        nothingFree: true,
        tracker,
        cooldown,
        asks: new Map(),
        askTimeoutMs: 100,
        cooldownMs: 1000,
        minWork: 0,
      });
      for (const i of intents) {
        if (i.kind === "giveUp") {
          assert.ok(asked.get(i.id) === i.member && spec.now >= tracker.of(i.member).asks.get(i.id)!.since + 100, `gave up ${i.id} before its time`);
          continue;
        }
        assert.equal(i.kind, "ask");
        if (i.kind !== "ask") continue;
        const m = i.member;
        assert.ok(view.byOwner.get(m.key)?.has(i.id), `asked ${m.instance} to cut ${i.id}, which it does not hold`);
        assert.ok(view.members.get(m.instance)?.record.splittable === true && !m.draining, `asked ${m.instance}, not splittable or draining`);
        assert.ok(!tracker.of(m).revokes.has(i.id) && !cooldown.has(i.id), `asked to cut ${i.id}, revoked or cooling down`);
        assert.ok(!asked.has(i.id) || intents.some((g) => g.kind === "giveUp" && g.id === i.id), `asked twice for ${i.id}`);
        assert.ok(i.ask.parts >= 2 && i.ask.epoch === view.splits.get(i.id)!.record.epoch);
      }
    }),
    { seed: FC_SEED, numRuns: 400 },
  );
});
