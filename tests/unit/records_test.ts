// The hand-written checks of the hot records (split, member, assignment,
// leader) must accept exactly what their zod schemas accept: records decoded
// on every watch event skip zod, and zod only explains what the fast check
// refused (a valid record the fast check refuses costs zod on every decode).
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  AssignRecordSchema,
  decodeRecord,
  LeaderRecordSchema,
  MemberRecordSchema,
  PageRecordSchema,
  ProgRecordSchema,
  safeDecodeRecord,
  SplitRecordSchema,
} from "../../src/records.ts";
import { FAST_CHECKS } from "../../src/records/fast_checks.ts";
import { InvalidRecordError } from "../../admin.ts";

const id = fc.stringMatching(/^[A-Za-z0-9_-]{1,12}$/);
const nearly = <T>(good: fc.Arbitrary<T>) =>
  fc.oneof(
    good,
    // Break one field of a good record: a wrong type, a negative count, null, an extra field.
    fc.tuple(good, fc.string({ maxLength: 12 }), fc.oneof(fc.constant(-1), fc.constant(1.5), fc.constant(null), fc.string(), fc.boolean(), fc.constant([])))
      .map(([r, k, v]) => {
        const keys = Object.keys(r as object);
        const key = keys.length ? keys[Math.abs(hash(k)) % keys.length] : k;
        return { ...(r as object), [hash(k) % 5 === 0 ? k : key]: v } as unknown as T;
      }),
    fc.jsonValue() as fc.Arbitrary<T>,
  );
function hash(s: string): number {
  let h = 7;
  for (const c of s) h = (h * 31 + c.charCodeAt(0)) | 0;
  return h;
}

const owner = fc.record({ instance: id, session: fc.string({ minLength: 1, maxLength: 8 }) });
const split = fc.record({
  v: fc.constant(2),
  epoch: fc.nat(),
  status: fc.constantFrom("runnable", "completed", "quarantined", "cancelled"),
  owner: fc.option(owner, { nil: null }),
  attempts: fc.nat(),
  weight: fc.oneof(fc.constant(1), fc.double({ min: 0.001, max: 1e9, noNaN: true })),
  progress: fc.option(fc.record({ watermark: fc.oneof(fc.integer(), fc.string()), state: fc.jsonValue() }, { requiredKeys: [] }), {
    nil: null,
  }),
  descriptor: fc.jsonValue(),
  lastFailure: fc.string(),
  failures: fc.array(
    fc.record({
      at: fc.integer(),
      worker: fc.string(),
      message: fc.string(),
      stack: fc.oneof(fc.string(), fc.integer()),
      permanent: fc.constantFrom(true, false, "yes"), // only `true` (or absent) is a valid mark
    }, {
      requiredKeys: ["at", "worker", "message"],
    }),
    { maxLength: 2 },
  ),
  closed: fc.oneof(fc.nat(), fc.constant(-1)),
  prog: fc.oneof(fc.nat(), fc.constant(1.5)),
}, { requiredKeys: ["v", "epoch", "status", "owner", "attempts", "weight", "progress"] });
const estimate = fc.record({ left: fc.oneof(fc.nat(10), fc.constant(-1)), total: fc.oneof(fc.constant(10), fc.constant(0)), unit: fc.constantFrom("ids", "bytes", "fraction", "rows") });
const prog = fc.record({
  v: fc.constant(2),
  epoch: fc.nat(),
  owner: fc.option(owner, { nil: null }),
  progress: fc.option(fc.record({ watermark: fc.oneof(fc.integer(), fc.string()), state: fc.jsonValue(), estimate }, { requiredKeys: [] }), { nil: null }),
  records: fc.nat(),
  cuts: fc.nat(),
}, { requiredKeys: ["v", "epoch", "owner", "progress"] });
const page = fc.record({
  v: fc.constant(2),
  term: fc.nat(),
  splits: fc.array(fc.record({ id, weight: fc.oneof(fc.constant(1), fc.double({ min: -1, max: 1e6 })), descriptor: fc.jsonValue(), spec: fc.constantFrom(true, false) }, {
    requiredKeys: ["id"],
  }), { maxLength: 4 }),
});
const member = fc.record({
  v: fc.constant(2),
  session: fc.string({ minLength: 1, maxLength: 8 }),
  maxInFlight: fc.nat(64),
  runtime: fc.string(),
  version: fc.string(),
  beat: fc.nat(),
  draining: fc.boolean(),
  planner: fc.boolean(),
  held: fc.nat(),
  est: fc.array(fc.tuple(id, fc.oneof(fc.nat(9), fc.constant(-1)), fc.oneof(fc.constant(10), fc.constant(0))), { maxLength: 3 }),
}, { requiredKeys: ["v", "session", "maxInFlight", "runtime", "version", "beat"] });
const entry = fc.record({ id, epoch: fc.nat(), rev: fc.oneof(fc.integer({ min: 1 }), fc.constant(0)), rec: split, why: fc.constantFrom("takeover", "reclaim", "handoff") }, {
  requiredKeys: ["id", "epoch", "rev"],
});
const assign = fc.record({
  v: fc.constant(2),
  term: fc.nat(),
  session: fc.string({ minLength: 1, maxLength: 8 }),
  seq: fc.nat(),
  offers: fc.array(entry, { maxLength: 3 }),
  grants: fc.array(entry, { maxLength: 3 }),
  revokes: fc.array(fc.record({ id, epoch: fc.nat(), to: owner }, { requiredKeys: ["id", "epoch"] }), { maxLength: 2 }),
  drops: fc.array(fc.record({ id, epoch: fc.nat(), reason: fc.constantFrom("fenced", "expired", "cancelled") }), { maxLength: 2 }),
});

/** A sum of weights: finite and not negative (and, nearly, the numbers around that). */
const sum = fc.oneof(fc.double({ min: 0, max: 1e9, noNaN: true }), fc.constantFrom(-1, Infinity, NaN, 0.5));

const leader = fc.record({
  v: fc.constant(2),
  instance: id,
  session: fc.string({ minLength: 1, maxLength: 8 }),
  term: fc.nat(),
  beat: fc.nat(),
  counts: fc.record({
    members: fc.nat(),
    runnable: fc.nat(),
    unowned: fc.nat(),
    completed: fc.nat(),
    quarantined: fc.nat(),
    cancelled: fc.nat(),
    cut: fc.nat(),
    quarantinedIds: fc.array(id, { maxLength: 22 }),
    weight: fc.record({ total: sum, completed: sum, runnable: sum, left: sum }),
    rate: fc.record({ at: fc.integer(), ms: fc.nat(), n: fc.nat(), w: sum, since: fc.option(fc.integer(), { nil: null }) }),
  }, { requiredKeys: ["members", "runnable", "unowned", "completed", "quarantined", "cancelled"] }),
}, { requiredKeys: ["v", "instance", "session", "term", "beat"] });

for (const [name, schema, arb] of [
  ["split", SplitRecordSchema, split],
  ["member", MemberRecordSchema, member],
  ["assignment", AssignRecordSchema, assign],
  ["leader", LeaderRecordSchema, leader],
  ["progress", ProgRecordSchema, prog],
  ["page", PageRecordSchema, page],
] as const) {
  Deno.test(`records: the fast check of the ${name} record accepts exactly what its schema accepts`, () => {
    fc.assert(
      fc.property(nearly(arb as fc.Arbitrary<unknown>), (value) => {
        const text = JSON.stringify(value);
        const zod = (schema as typeof SplitRecordSchema).safeParse(JSON.parse(text)).success;
        const fast = FAST_CHECKS.get(schema as typeof SplitRecordSchema)!(JSON.parse(text));
        assert.equal(fast, zod, text);
        assert.equal(safeDecodeRecord("k", text, schema as typeof SplitRecordSchema).ok, zod, text);
      }),
      { numRuns: 3000 },
    );
  });
}

Deno.test("records: the fast checks refuse each near miss their schema refuses (edges random records rarely reach)", () => {
  const owner = { instance: "w1", session: "s1" };
  const split = { v: 2, epoch: 3, status: "runnable", owner, attempts: 0, weight: 1, progress: null };
  const member = { v: 2, session: "s1", maxInFlight: 4, runtime: "deno", version: "0.2.0", beat: 1 };
  const entry = { id: "a", epoch: 1, rev: 1 };
  const assign = { v: 2, term: 1, session: "s1", seq: 1, offers: [entry], grants: [entry], revokes: [{ id: "a", epoch: 1, to: owner }], drops: [{ id: "a", epoch: 1, reason: "fenced" }] };
  const counts = { members: 1, runnable: 1, unowned: 0, completed: 0, quarantined: 0, cancelled: 0, quarantinedIds: ["q"] };
  const leader = { v: 2, instance: "w1", session: "s1", term: 1, beat: 2, counts };
  const cases: [string, typeof SplitRecordSchema | typeof MemberRecordSchema | typeof AssignRecordSchema | typeof LeaderRecordSchema, object][] = [
    ["a split of weight 0", SplitRecordSchema, { ...split, weight: 0 }],
    ["an owner whose instance is no id", SplitRecordSchema, { ...split, owner: { instance: "a.b", session: "s1" } }],
    ["an owner with an empty session", SplitRecordSchema, { ...split, owner: { instance: "w1", session: "" } }],
    ["a spec flag other than true", SplitRecordSchema, { ...split, spec: false }],
    ["a failure without a finite time", SplitRecordSchema, { ...split, failures: [{ worker: "w1", message: "m" }] }],
    ["a member with an empty session", MemberRecordSchema, { ...member, session: "" }],
    ["an assignment for an empty session", AssignRecordSchema, { ...assign, session: "" }],
    ["an offer at revision 0", AssignRecordSchema, { ...assign, offers: [{ ...entry, rev: 0 }] }],
    ["a grant at revision 0", AssignRecordSchema, { ...assign, grants: [{ ...entry, rev: 0 }] }],
    ["a grant for a reason the protocol has not", AssignRecordSchema, { ...assign, grants: [{ ...entry, why: "steal" }] }],
    ["an offer whose inline split record is no split record", AssignRecordSchema, { ...assign, offers: [{ ...entry, rec: { ...split, epoch: -1 } }] }],
    ["a grant whose inline split record is no split record", AssignRecordSchema, { ...assign, grants: [{ ...entry, rec: { ...split, status: "done" } }] }],
    ["a revoke naming a successor with no session", AssignRecordSchema, { ...assign, revokes: [{ id: "a", epoch: 1, to: { instance: "w2" } }] }],
    ["a drop for a reason the protocol has not", AssignRecordSchema, { ...assign, drops: [{ id: "a", epoch: 1, reason: "bored" }] }],
    ["a leader whose instance is no id", LeaderRecordSchema, { ...leader, instance: "a.b" }],
    ["a leader's counts without the cancelled count", LeaderRecordSchema, { ...leader, counts: { ...counts, cancelled: undefined } }],
    ["a leader's counts with 21 quarantined ids", LeaderRecordSchema, { ...leader, counts: { ...counts, quarantinedIds: Array(21).fill("q") } }],
    ["a leader's weights with a negative sum", LeaderRecordSchema, { ...leader, counts: { ...counts, weight: { total: 1, completed: -1, runnable: 0, left: 0 } } }],
    ["a leader's weights without what is left", LeaderRecordSchema, { ...leader, counts: { ...counts, weight: { total: 1, completed: 1, runnable: 0 } } }],
    ["a leader's rate counting a fraction of a split", LeaderRecordSchema, { ...leader, counts: { ...counts, rate: { at: 1, ms: 1, n: 0.5, w: 0, since: null } } }],
    ["a leader's rate without its start", LeaderRecordSchema, { ...leader, counts: { ...counts, rate: { at: 1, ms: 1, n: 1, w: 1 } } }],
  ];
  assert.ok(safeDecodeRecord("k", JSON.stringify(split), SplitRecordSchema).ok, "the base split is valid");
  assert.ok(safeDecodeRecord("k", JSON.stringify(member), MemberRecordSchema).ok, "the base member is valid");
  assert.ok(safeDecodeRecord("k", JSON.stringify(assign), AssignRecordSchema).ok, "the base assignment is valid");
  assert.ok(FAST_CHECKS.get(LeaderRecordSchema)!(leader), "the base leader record is valid, by the fast check too");
  for (const [what, schema, value] of cases) {
    assert.equal((schema as typeof SplitRecordSchema).safeParse(value).success, false, `the schema refuses ${what}`);
    assert.equal(safeDecodeRecord("k", JSON.stringify(value), schema as typeof SplitRecordSchema).ok, false, `the fast check refuses ${what}`);
  }
});

Deno.test("records: a layout-1 record is refused naming the layout", () => {
  assert.throws(
    () => decodeRecord("split.a", JSON.stringify({ v: 1, epoch: 0 }), SplitRecordSchema),
    (e: unknown) => e instanceof InvalidRecordError && /record layout 1 is not layout 2/.test(e.message) && e.key === "split.a",
  );
});
