// A lane's state is one value moved only by the transitions of
// src/runtime/lane_state.ts (issue 29, item 5): each applies from the states
// its table names and nowhere else, and what Worker.lanes() shows is derived.
import assert from "node:assert/strict";
import {
  abandon,
  beginEnding,
  canCut,
  close,
  decline,
  endedAs,
  isLost,
  isTerminal,
  type LaneState,
  lose,
  QUEUED,
  reopen,
  setCutting,
  shownState,
  start,
  stopIntake,
  writable,
} from "../../src/runtime/lane_state.ts";

const running: LaneState = { kind: "running", cutting: false };
const states: Record<string, LaneState> = {
  queued: QUEUED,
  running,
  cutting: { kind: "running", cutting: true },
  revoking: { kind: "revoking" },
  declined: { kind: "declined" },
  ending: { kind: "ending" },
  completed: { kind: "closed", end: "completed", was: running },
  failed: { kind: "closed", end: "failed", was: { kind: "revoking" } },
  ended: { kind: "closed", end: "ended", was: { kind: "ending" } },
  dropped: { kind: "closed", end: "ended", was: QUEUED },
  lost: { kind: "lost" },
  abandoned: { kind: "abandoned" },
};

/** Each transition and the states it applies from, with the state it leads to. */
const table: [string, (l: { state: LaneState }) => boolean, Record<string, string>][] = [
  ["start", start, { queued: "running" }],
  ["stopIntake", stopIntake, { running: "revoking", cutting: "revoking" }],
  ["decline", decline, { running: "declined", cutting: "declined" }],
  ["beginEnding", beginEnding, { running: "ending", cutting: "ending", revoking: "ending" }],
  ["close ended", (l) => close(l, "ended"), { queued: "closed", running: "closed", cutting: "closed", revoking: "closed", declined: "closed", ending: "closed" }],
  ["close completed", (l) => close(l, "completed"), { running: "closed", cutting: "closed", revoking: "closed", declined: "closed", ending: "closed" }],
  ["reopen", reopen, { completed: "running" }],
  ["lose", lose, Object.fromEntries(Object.keys(states).filter((k) => k !== "lost" && k !== "abandoned").map((k) => [k, "lost"]))],
  ["abandon", abandon, { lost: "abandoned" }],
];

Deno.test("lane state: each transition applies from the states of its table, and nowhere else", () => {
  for (const [name, move, from] of table) {
    for (const [label, s] of Object.entries(states)) {
      const lane = { state: s };
      const applied = move(lane);
      assert.equal(applied, label in from, `${name} from ${label}`);
      if (applied) assert.equal(lane.state.kind, from[label], `${name} from ${label}`);
      else assert.equal(lane.state, s, `${name} from ${label} leaves it`);
    }
  }
});

Deno.test("lane state: what a lane shows, whether it writes, and why it stopped", () => {
  const shown = Object.fromEntries(Object.entries(states).map(([k, s]) => [k, shownState(s)]));
  assert.deepEqual(shown, {
    queued: "queued",
    running: "running",
    cutting: "running",
    revoking: "revoking",
    declined: "stopping",
    ending: "stopping",
    completed: "running",
    failed: "revoking",
    ended: "stopping",
    dropped: "queued",
    lost: "stopping",
    abandoned: "stopping",
  });
  const open = ["queued", "running", "cutting", "revoking", "declined", "ending"];
  for (const [k, s] of Object.entries(states)) {
    assert.equal(writable(s), open.includes(k), `writable ${k}`);
    assert.equal(isLost(s), k === "lost" || k === "abandoned", `lost ${k}`);
    assert.equal(isTerminal(s), k === "completed" || k === "failed", `terminal ${k}`);
    assert.equal(canCut(s), k === "running", `canCut ${k}`);
  }
  assert.deepEqual(["completed", "failed", "ended", "lost", "abandoned"].map((k) => endedAs(states[k])), ["completed", "failed", "ended", "lost", "lost"]);
});

Deno.test("lane state: one cut at a time, kept across a final write that meets an outage", () => {
  const lane = { state: states.running };
  setCutting(lane, true);
  assert.equal(canCut(lane.state), false, "a cut is being answered");
  assert.ok(close(lane, "completed"));
  assert.ok(reopen(lane), "the final write met an outage");
  assert.equal(canCut(lane.state), false, "still answering the cut");
  assert.ok(close(lane, "completed"));
  setCutting(lane, false);
  assert.ok(reopen(lane));
  assert.equal(canCut(lane.state), true, "the cut was answered meanwhile");
  const revoking = { state: states.revoking };
  setCutting(revoking, false);
  assert.equal(revoking.state, states.revoking, "a cut's end changes nothing once the lane stopped running");
});
