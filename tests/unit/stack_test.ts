// Stacks, bounded (issue 31, item 6): what logs, split records, /fleet and
// the CLI keep of an error beside its message.
import assert from "node:assert/strict";
import { boundStack, STACK_CHARS, STACK_LINES, stackOf } from "../../src/util/stack.ts";
import { failRecord, seedRecord } from "../../src/records/transitions.ts";
import { FAILURE_STACK_CHARS, FAILURE_STACK_LINES, safeDecodeRecord, SplitRecordSchema } from "../../src/records.ts";
import { formatLogLine } from "../../host.ts";
import { formatSplits } from "../../src/cli/format.ts";
import { buildFleetView } from "../../src/fleet/fleet_view.ts";

function deep(n: number): Error {
  return n === 0 ? new Error("bottom of\nthe stack") : deep(n - 1);
}

Deno.test("stackOf: the frames without the header (even a multi-line message), trimmed, at most 10 lines and 1000 characters", () => {
  const frames = stackOf(deep(30))!;
  const lines = frames.split("\n");
  assert.equal(lines.length, STACK_LINES);
  assert.ok(lines.every((l) => l.startsWith("at ")), frames);
  assert.match(lines[0], /stack_test\.ts:\d+:\d+/);
  assert.ok(frames.length <= STACK_CHARS);
  assert.equal(stackOf("not an error"), undefined);
  const bare = new Error("no frames");
  bare.stack = "Error: no frames";
  assert.equal(stackOf(bare), undefined);
  const odd = new TypeError("x");
  odd.stack = "something else first\n  at a (f.ts:1:1)";
  assert.equal(stackOf(odd), "at a (f.ts:1:1)", "an unexpected header is one line");
});

Deno.test("boundStack: a long line is cut with an ellipsis, the total stays within the characters", () => {
  const long = ["at " + "a".repeat(50), "at " + "b".repeat(50), "at " + "c".repeat(50)].join("\n");
  const cut = boundStack(long, 10, 80)!;
  assert.equal(cut.length, 80);
  assert.deepEqual(cut.split("\n").map((l) => l.length), [53, 26]);
  assert.ok(cut.endsWith("…"));
  assert.equal(boundStack("\n  \n"), undefined);
  assert.equal(boundStack("at a\nat b\nat c", 2), "at a\nat b");
});

Deno.test("log lines carry an error's stack (and its cause's) beside name and message", () => {
  const cause = new RangeError("inner");
  const line = JSON.parse(formatLogLine("error", "run failed", { error: new Error("outer", { cause }) }, {}, 0));
  assert.equal(line.error.message, "outer");
  assert.match(line.error.stack, /^at .*stack_test\.ts:\d+:\d+/);
  assert.ok(line.error.stack.split("\n").length <= STACK_LINES);
  assert.equal(line.error.cause.name, "RangeError");
  assert.match(line.error.cause.stack, /^at .*stack_test\.ts/);
});

Deno.test("a failure keeps its stack in the split record, bounded; records without one stay valid; a stack that is not text is refused", () => {
  const r = failRecord(seedRecord(1, null), "run threw: Error: boom", 3, "w1", 1000, stackOf(deep(20), 50, 10_000));
  const f = r.failures![0];
  assert.equal(f.stack!.split("\n").length, FAILURE_STACK_LINES);
  assert.ok(f.stack!.length <= FAILURE_STACK_CHARS);
  const long = failRecord(seedRecord(1, null), "m", 3, "w1", 1000, "at " + "x".repeat(5000));
  assert.equal(long.failures![0].stack!.length, FAILURE_STACK_CHARS);
  assert.equal(failRecord(seedRecord(1, null), "m", 3, "w1", 1000).failures![0].stack, undefined, "no stack, no field");
  // Five failures with the longest stacks keep the record small (every commit rewrites it).
  let five = seedRecord(1, null);
  for (let i = 0; i < 7; i++) five = failRecord(five, "y".repeat(5000), 99, "w1", i, ("at " + "z".repeat(200) + "\n").repeat(20));
  assert.ok(JSON.stringify(five).length < 7500, `${JSON.stringify(five).length} bytes`);
  for (const rec of [r, long, five]) assert.ok(safeDecodeRecord("split.a", JSON.stringify(rec), SplitRecordSchema).ok);
  const old = { ...seedRecord(1, null), failures: [{ at: 1, worker: "w", message: "m" }] };
  assert.ok(safeDecodeRecord("split.a", JSON.stringify(old), SplitRecordSchema).ok, "a layout-2 record written before stacks");
  const bad = { ...old, failures: [{ at: 1, worker: "w", message: "m", stack: 42 }] };
  assert.equal(SplitRecordSchema.safeParse(bad).success, false);
  assert.equal(safeDecodeRecord("split.a", JSON.stringify(bad), SplitRecordSchema).ok, false);
});

Deno.test("splitlease splits: each failure's first stack frame under it, and where the rest is; --json and /fleet carry the whole", () => {
  const rec = failRecord(seedRecord(1, null), "run threw: Error: boom", 1, "w1", 0, stackOf(deep(3)));
  const plain = failRecord(seedRecord(1, null), "lane.fail: bad row", 1, "w2", 0);
  const view = buildFleetView({
    job: undefined,
    plan: undefined,
    leader: undefined,
    members: [],
    splits: [
      { key: "split.a", revision: 1, value: JSON.stringify(rec) },
      { key: "split.b", revision: 2, value: JSON.stringify(plain) },
    ],
    at: 0,
  }, {});
  assert.equal(view.splits[0].failures[0].stack, rec.failures![0].stack, "the JSON view (/fleet, --json) has the stack");
  const text = formatSplits(view).split("\n");
  const i = text.findIndex((l) => l.includes("w1: run threw: Error: boom"));
  assert.match(text[i + 1], /^ {6}at deep .*stack_test\.ts:\d+:\d+\) \(full stack: --json\)$/);
  const j = text.findIndex((l) => l.includes("w2: lane.fail: bad row"));
  assert.doesNotMatch(text[j + 1] ?? "", /^ {6}at /, "no stack, no frame line");
});
