// How long the leader holds assignment writes while another member's
// releases come in (src/coordinator/leader/release_hold.ts). The hold must
// not depend on the order in which the split watch and the member watch
// deliver a drain: on PostgreSQL the first releases came before the member
// record saying `draining`, and the first rewrite carried 1 split of 30.
import assert from "node:assert/strict";
import { DRAIN_QUIET_MS, RELEASE_HOLD_MS, ReleaseHold, releasedGracefully } from "../../src/coordinator/leader/release_hold.ts";
import type { SplitRecord } from "../../src/records.ts";
import { commitRecord, failRecord, handBackRecord, openRecord, releaseRecord } from "../../src/records/transitions.ts";

const owner = { instance: "c", session: "s1" };
const key = "c s1";
const held: SplitRecord = openRecord(
  { v: 2, epoch: 0, status: "runnable", owner: null, attempts: 0, weight: 1, progress: null, descriptor: null },
  owner,
  false,
  5,
  1,
);

Deno.test("releasedGracefully: a release (to nobody or to a named successor) is one; a completion, a failure, a hand-back or a takeover is not", () => {
  assert.equal(releasedGracefully(held, releaseRecord(held, null, 2)), true);
  assert.equal(releasedGracefully(held, releaseRecord(held, { instance: "b", session: "s2" }, 2)), true);
  assert.equal(releasedGracefully(held, commitRecord("x", held, { watermark: 1 }, true, 2)), false);
  assert.equal(releasedGracefully(held, failRecord(held, "boom", 5, "c", 2)), false);
  assert.equal(releasedGracefully(held, handBackRecord(held, "spec missing", "c", 2)), false);
  assert.equal(releasedGracefully(held, openRecord(held, { instance: "b", session: "s2" }, true, 5, 2)), false);
  assert.equal(releasedGracefully(held, undefined), false, "a deleted record");
  assert.equal(releasedGracefully({ ...held, owner: null }, releaseRecord(held, null, 2)), false, "nobody held it");
});

Deno.test("ReleaseHold: a follower's graceful release holds the others' writes until it goes quiet or holds nothing", () => {
  const hold = new ReleaseHold();
  hold.released(owner, true, false, 100);
  assert.equal(hold.burstUntil(101, () => true), 100 + DRAIN_QUIET_MS);
  hold.released(owner, false, false, 105); // its next release extends the burst, graceful or not
  assert.equal(hold.burstUntil(106, () => true), 105 + DRAIN_QUIET_MS);
  assert.equal(hold.burstUntil(105 + DRAIN_QUIET_MS, () => true), -Infinity, "quiet: over");
  hold.released(owner, true, false, 200);
  assert.equal(hold.burstUntil(201, (k) => k !== key), -Infinity, "it holds nothing more: over at once");
  hold.released(owner, false, false, 300);
  assert.equal(hold.burstUntil(301, () => true), -Infinity, "a completion or failure starts nothing");
});

Deno.test("ReleaseHold: releases seen before the member's draining record still make one burst, held for a drain from then on", () => {
  const hold = new ReleaseHold();
  // Releases first (the split watch), quiet window only: nothing says it drains yet.
  hold.released(owner, true, false, 100);
  hold.released(owner, true, false, 102);
  // The member watch delivers `draining` 10 ms later, before the next release.
  hold.drains(owner, 112);
  assert.equal(hold.burstUntil(140, () => true), 112 + RELEASE_HOLD_MS, "a slow lane's release 30 ms later is still waited for");
  hold.released(owner, true, false, 150); // the draining flag sticks to the burst
  assert.equal(hold.burstUntil(151, () => true), 150 + RELEASE_HOLD_MS);
  assert.equal(hold.burstUntil(152, () => false), -Infinity, "its last release: over at once");
});

Deno.test("ReleaseHold.until: the others wait at most RELEASE_HOLD_MS from the first hold; the drainer itself is not held", () => {
  const hold = new ReleaseHold();
  const st = { draining: false, holdSince: undefined as number | undefined };
  const drainer = { draining: true, holdSince: undefined as number | undefined };
  hold.drains(owner, 100);
  const burst = hold.burstUntil(100, () => true);
  type St = Parameters<ReleaseHold["until"]>[0];
  assert.equal(hold.until(st as St, 100, 0, -Infinity, 1000, burst), 100 + RELEASE_HOLD_MS);
  assert.equal(hold.until(drainer as St, 100, 0, -Infinity, 1000, burst), 0);
  hold.released(owner, true, true, 140);
  const later = hold.burstUntil(140, () => true);
  assert.equal(later, 140 + RELEASE_HOLD_MS);
  assert.equal(hold.until(st as St, 140, 0, -Infinity, 1000, later), 100 + RELEASE_HOLD_MS, "capped from when the hold began");
  assert.equal(hold.until(st as St, 160, 0, -Infinity, 1000, -Infinity), 0, "over: written now");
  assert.equal(st.holdSince, undefined);
});

Deno.test("ReleaseHold.until: the leader's own releases hold a successor's write while they keep coming, opTimeoutMs at most", () => {
  const hold = new ReleaseHold();
  type St = Parameters<ReleaseHold["until"]>[0];
  const st = { draining: false, holdSince: undefined as number | undefined } as St;
  const opTimeoutMs = 200;
  // A release starts or lands every 40 ms (within RELEASE_HOLD_MS of the last): the hold follows them...
  assert.equal(hold.until(st, 100, 5, 100, opTimeoutMs), 100 + RELEASE_HOLD_MS);
  assert.equal(hold.until(st, 140, 4, 140, opTimeoutMs), 140 + RELEASE_HOLD_MS);
  // ...up to opTimeoutMs after it began, however many more come.
  for (let now = 180; now <= 400; now += 40) {
    assert.equal(hold.until(st, now, 3, now, opTimeoutMs), Math.min(100 + opTimeoutMs, now + RELEASE_HOLD_MS), `at ${now}`);
  }
  assert.ok(hold.until(st, 300, 3, 300, opTimeoutMs) <= 300, "due: written now");
  // Nothing owed any more: not held, and the next hold starts afresh.
  assert.equal(hold.until(st, 420, 0, 420, opTimeoutMs), 0);
  assert.equal(st.holdSince, undefined);
});
