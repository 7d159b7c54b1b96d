// Every interval the coordinator derives from its config is made in one place
// (src/coordinator/timings.ts); these are the numbers docs/DESIGN.md names.
import assert from "node:assert/strict";
import { parseCoordinatorConfig } from "../../admin.ts";
import { timings } from "../../src/coordinator/timings.ts";

Deno.test("timings: every derived interval at the defaults and at a short lease", () => {
  const d = timings(parseCoordinatorConfig({ job: "j", instance: "i", fingerprint: "f" }));
  assert.deepEqual(d, {
    deadAfterMs: 15000,
    heartbeatMs: 5000,
    heartbeatRetryMs: 1500,
    twinWaitMs: 5000 + 1500,
    selfFenceAfterMs: 15000 - 1875,
    plannerlessElectionDelayMs: 7500,
    connectedWithinMs: 7500 + 5000,
    reconcileRetryMs: 1500,
    balanceIntervalMs: 1500,
    balanceMinIntervalMs: 150,
    deafOwnerFenceMs: 10000 + 15000,
    watchSnapshotLimitMs: 30000,
    claimRecheckMaxMs: 5000,
    planOutageRetryMs: 1000,
    planBackoffMaxMs: 15000,
    planFailRetryMs: 5000,
    spareClaimAfterMs: 150,
    cutAskTimeoutMs: 3000,
    cutCooldownMs: 15000,
  });
  const s = timings(parseCoordinatorConfig({ job: "j", instance: "i", fingerprint: "f", leaseMs: 500, opTimeoutMs: 100, drainDeadlineMs: 100 }));
  assert.equal(s.twinWaitMs, 500 / 3 + 500 / 10);
  assert.equal(s.selfFenceAfterMs, 500 - 62);
  assert.equal(s.reconcileRetryMs, 50);
  assert.equal(s.balanceIntervalMs, 50);
  assert.equal(s.balanceMinIntervalMs, 5);
  assert.equal(s.planOutageRetryMs, 500);
  assert.equal(s.watchSnapshotLimitMs, 30000);
  assert.equal(s.spareClaimAfterMs, 20);
});
