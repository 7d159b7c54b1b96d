// Options as an operator types them: typos are refused with the nearest
// valid name, durations a timer cannot hold are refused naming the key and
// the value, every timer is clamped, and the job name follows one rule.
import assert from "node:assert/strict";
import { coordinatorConfigDocs, parseCoordinatorConfig } from "../../admin.ts";
import { MemoryStore, SplitCoordinator, SplitleaseError } from "../../mod.ts";
import { systemClock } from "../../testing.ts";
import { resolveOptions } from "../../src/nats/options.ts";
import { editDistance, nearestName, rejectUnknownKeys } from "../../src/util/options.ts";
import { clampTimerMs, MAX_TIMER_MS } from "../../src/util/timers.ts";

const config = (e: unknown, ...patterns: RegExp[]) => {
  assert.ok(e instanceof SplitleaseError, String(e));
  assert.equal(e.code, "INVALID_CONFIG");
  for (const p of patterns) assert.match(e.message, p);
  return true;
};

Deno.test("options: the nearest valid name is suggested for a typo, and nothing for a stranger", () => {
  assert.equal(editDistance("leaseMS", "leaseMs"), 1);
  assert.equal(editDistance("", "abc"), 3);
  assert.equal(nearestName("leaseMS", ["leaseMs", "opTimeoutMs"]), "leaseMs");
  assert.equal(nearestName("opTimoutMs", ["leaseMs", "opTimeoutMs"]), "opTimeoutMs");
  assert.equal(nearestName("maxInflight", ["maxInFlight", "maxAttempts"]), "maxInFlight");
  assert.equal(nearestName("colour", ["leaseMs", "opTimeoutMs"]), undefined);
  rejectUnknownKeys({ leaseMs: 1 }, ["leaseMs"], "serve");
  assert.throws(
    () => rejectUnknownKeys({ leaseMS: 1, colour: 2 }, ["leaseMs"], "serve"),
    (e) => config(e, /^serve: unknown option leaseMS; did you mean leaseMs\?; unknown option colour$/),
  );
});

Deno.test("options: coordinator config refuses unknown keys with a suggestion (join included)", async () => {
  assert.throws(
    () => parseCoordinatorConfig({ job: "j", instance: "i", fingerprint: "f", leaseMS: 20_000 }),
    (e) => config(e, /unknown option leaseMS; did you mean leaseMs\?/),
  );
  await assert.rejects(
    SplitCoordinator.join({ store: new MemoryStore(), job: "j", ...{ drainDeadlineMS: 5000 } }),
    (e) => config(e, /unknown option drainDeadlineMS; did you mean drainDeadlineMs\?/),
  );
});

Deno.test("options: a duration a timer cannot hold is refused naming the key and the value", () => {
  const base = { job: "j", instance: "i", fingerprint: "f" };
  assert.throws(
    () => parseCoordinatorConfig({ ...base, leaseMs: 3e9, replanIntervalMs: 3e9 }),
    (e) => config(e, /leaseMs: must be at most 2147483647 ms .*got 3000000000/, /replanIntervalMs: .*got 3000000000/),
  );
  for (const key of ["opTimeoutMs", "drainDeadlineMs", "rebalanceDelayMs", "selfFenceMarginMs"]) {
    assert.throws(
      () => parseCoordinatorConfig({ ...base, [key]: 2 ** 31 }),
      (e) => config(e, new RegExp(`${key}: must be at most 2147483647 ms .*got 2147483648`)),
      key,
    );
  }
  // The bound itself is accepted (leaseMs then needs a replan interval at least as long).
  const c = parseCoordinatorConfig({ ...base, leaseMs: MAX_TIMER_MS, replanIntervalMs: MAX_TIMER_MS });
  assert.equal(c.leaseMs, MAX_TIMER_MS);
  assert.throws(
    () => resolveOptions({ servers: "ws://127.0.0.1:1", job: "j", opTimeoutMs: 3e9 }),
    (e) => config(e, /opTimeoutMs must be a number of milliseconds from 50 to 2147483647, got 3000000000/),
  );
  assert.throws(
    () => resolveOptions({ servers: "ws://127.0.0.1:1", job: "j", pingIntervalMs: Infinity }),
    (e) => config(e, /pingIntervalMs .* got Infinity/),
  );
});

Deno.test("options: every bound of the coordinator config table (docs/OPERATIONS.md) holds at its edge, naming the key", () => {
  const base = { job: "j", instance: "i", fingerprint: "f" };
  // [rule, options at the edge (accepted), options one step past it (refused), what the refusal names]
  const rules: [string, Record<string, unknown>, Record<string, unknown>, RegExp][] = [
    ["leaseMs >= 500", { leaseMs: 500, opTimeoutMs: 250 }, { leaseMs: 499, opTimeoutMs: 200 }, /leaseMs: /],
    ["leaseMs >= 2 × opTimeoutMs", { leaseMs: 2000, opTimeoutMs: 1000 }, { leaseMs: 1999, opTimeoutMs: 1000 }, /leaseMs: must be at least 2 × opTimeoutMs \(2000\), got 1999/],
    ["opTimeoutMs >= 1", { opTimeoutMs: 1 }, { opTimeoutMs: 0 }, /opTimeoutMs: /],
    ["maxInFlight 0..4096 (low)", { maxInFlight: 0 }, { maxInFlight: -1 }, /maxInFlight: /],
    ["maxInFlight 0..4096 (high)", { maxInFlight: 4096 }, { maxInFlight: 4097 }, /maxInFlight: /],
    ["maxAttempts >= 1", { maxAttempts: 1 }, { maxAttempts: 0 }, /maxAttempts: /],
    ["drainDeadlineMs >= opTimeoutMs", { drainDeadlineMs: 5000 }, { drainDeadlineMs: 4999 }, /drainDeadlineMs: must be at least opTimeoutMs \(5000\), got 4999/],
    ["replanIntervalMs >= leaseMs", { replanIntervalMs: 15000 }, { replanIntervalMs: 14999 }, /replanIntervalMs: must be at least leaseMs \(15000\), got 14999/],
    ["rebalanceDelayMs >= 0", { rebalanceDelayMs: 0 }, { rebalanceDelayMs: -1 }, /rebalanceDelayMs: /],
    ["selfFenceMarginMs >= 0", { selfFenceMarginMs: 0 }, { selfFenceMarginMs: -1 }, /selfFenceMarginMs: /],
    ["selfFenceMarginMs < leaseMs / 2", { selfFenceMarginMs: 7499 }, { selfFenceMarginMs: 7500 }, /selfFenceMarginMs: must be below leaseMs \/ 2 \(7500\), got 7500/],
    ["seedConcurrency 1..1024 (low)", { seedConcurrency: 1 }, { seedConcurrency: 0 }, /seedConcurrency: /],
    ["seedConcurrency 1..1024 (high)", { seedConcurrency: 1024 }, { seedConcurrency: 1025 }, /seedConcurrency: /],
    ["planAttempts 1..1000 (low)", { planAttempts: 1 }, { planAttempts: 0 }, /planAttempts: /],
    ["planAttempts 1..1000 (high)", { planAttempts: 1000 }, { planAttempts: 1001 }, /planAttempts: /],
    ["retryBackoffMs >= 0", { retryBackoffMs: 0 }, { retryBackoffMs: -1 }, /retryBackoffMs: /],
    ["retryBackoffMaxMs >= retryBackoffMs", { retryBackoffMs: 5000, retryBackoffMaxMs: 5000 }, { retryBackoffMs: 5000, retryBackoffMaxMs: 4999 }, /retryBackoffMaxMs: must be at least retryBackoffMs \(5000\), got 4999/],
    ["fingerprint at most 1024 characters", { fingerprint: "f".repeat(1024) }, { fingerprint: "f".repeat(1025) }, /fingerprint: /],
    ["fingerprint non-empty", { fingerprint: "f" }, { fingerprint: "" }, /fingerprint: must be a non-empty string/],
  ];
  for (const [rule, edge, past, names] of rules) {
    const c = parseCoordinatorConfig({ ...base, ...edge });
    for (const [k, v] of Object.entries(edge)) assert.equal(c[k as keyof typeof c], v, `${rule}: the edge ${k}=${v} is accepted as given`);
    assert.throws(() => parseCoordinatorConfig({ ...base, ...past }), (e) => config(e, names), `${rule}: ${JSON.stringify(past)} is refused`);
  }
  // The defaults of the table, the derived one included.
  const d = parseCoordinatorConfig(base);
  assert.deepEqual(
    [d.leaseMs, d.opTimeoutMs, d.maxInFlight, d.maxAttempts, d.drainDeadlineMs, d.replanIntervalMs, d.rebalanceDelayMs, d.selfFenceMarginMs],
    [15000, 5000, 8, 4, 10000, 60000, 0, 1875],
  );
  assert.deepEqual([d.seedConcurrency, d.planAttempts, d.retryBackoffMs, d.retryBackoffMaxMs], [128, 5, 1000, 60000]);
  assert.equal(parseCoordinatorConfig({ ...base, leaseMs: 1001, opTimeoutMs: 500 }).selfFenceMarginMs, 125, "selfFenceMarginMs defaults to floor(leaseMs / 8)");
});

Deno.test("options: the system clock clamps a delay above 2^31 - 1 ms instead of firing at once", async () => {
  assert.equal(clampTimerMs(3e9), MAX_TIMER_MS);
  assert.equal(clampTimerMs(Infinity), MAX_TIMER_MS);
  assert.equal(clampTimerMs(-1), 0);
  assert.equal(clampTimerMs(NaN), 0);
  assert.equal(clampTimerMs(1500), 1500);
  let fired = false;
  const far = systemClock.setTimeout(() => (fired = true), 3e9);
  let nearFired = false;
  // A timer well after the one an overflow would fire (overflowed delays become 1 ms).
  await new Promise<void>((resolve) => systemClock.setTimeout(() => ((nearFired = true), resolve()), 50));
  systemClock.clearTimeout(far);
  assert.ok(nearFired);
  assert.equal(fired, false, "a 3e9 ms timer did not fire within 50 ms");
});

Deno.test("options: the job name is 1-128 characters of [A-Za-z0-9_-] in the config, NatsStore and the docs", () => {
  const ok = "j".repeat(128);
  const long = "j".repeat(129);
  assert.equal(parseCoordinatorConfig({ job: ok, instance: "i", fingerprint: "f" }).job, ok);
  assert.equal(resolveOptions({ servers: "ws://127.0.0.1:1", job: ok }).bucket, `splitlease_${ok}`);
  for (const bad of [long, "", "a b", "a.b"]) {
    assert.throws(
      () => parseCoordinatorConfig({ job: bad, instance: "i", fingerprint: "f" }),
      (e) => config(e, /job: must be 1-128 characters of \[A-Za-z0-9_-\]/),
      JSON.stringify(bad),
    );
    assert.throws(
      () => resolveOptions({ servers: "ws://127.0.0.1:1", job: bad }),
      (e) => config(e, /job .* must be 1-128 characters of \[A-Za-z0-9_-\]/),
      JSON.stringify(bad),
    );
  }
  assert.equal(coordinatorConfigDocs().find((d) => d.key === "job")?.rule, "1-128 of [A-Za-z0-9_-]");
  const page = Deno.readTextFileSync(new URL("../../docs/OPERATIONS.md", import.meta.url));
  const natsRow = page.split("\n").find((l) => l.startsWith("| `job` | (required) | Bucket"));
  assert.ok(natsRow?.includes("1-128 of [A-Za-z0-9_-]"), `the NatsStore row names the same rule: ${natsRow}`);
  assert.ok(!/1-64/.test(page), "no other job rule is documented");
});

Deno.test("options: NatsStore refuses unknown keys, and takes credentials from the server URL", () => {
  assert.throws(
    () => resolveOptions({ servers: "ws://127.0.0.1:1", job: "j", ...{ opTimeoutMS: 100 } }),
    (e) => config(e, /^NatsStore: unknown option opTimeoutMS; did you mean opTimeoutMs\?$/),
  );
  const userPass = resolveOptions({ servers: ["ws://sl:s%40cret@127.0.0.1:1", "ws://127.0.0.1:2"], job: "j" });
  assert.deepEqual(userPass.servers, ["ws://127.0.0.1:1", "ws://127.0.0.1:2"]);
  assert.deepEqual(userPass.urlAuth, { user: "sl", pass: "s@cret" });
  const token = resolveOptions({ servers: "wss://t0k3n@nats.example:443/path", job: "j" });
  assert.deepEqual(token.servers, ["wss://nats.example:443/path"]);
  assert.deepEqual(token.urlAuth, { token: "t0k3n" });
  assert.equal(resolveOptions({ servers: "ws://127.0.0.1:1", job: "j" }).urlAuth, undefined);
  const refused: [unknown, RegExp][] = [
    [{ servers: "ws://a:b@127.0.0.1:1", job: "j", user: "a", pass: "b" }, /both in a server URL and as options/],
    [{ servers: "ws://a:b@127.0.0.1:1", job: "j", token: "t" }, /both in a server URL and as options/],
    [{ servers: ["ws://a:b@127.0.0.1:1", "ws://a:c@127.0.0.1:2"], job: "j" }, /different credentials/],
    [{ servers: "ws://:b@127.0.0.1:1", job: "j" }, /without a user or token/],
    [{ servers: "ws://a:p@ss@127.0.0.1:1", job: "j" }, /percent-encode "@"/],
    [{ servers: "ws://a:%zz@127.0.0.1:1", job: "j" }, /not valid percent-encoding/],
  ];
  for (const [options, pattern] of refused) {
    assert.throws(() => resolveOptions(options as never), (e) => {
      config(e, pattern);
      assert.ok(!/:b@|:c@|p@ss|%zz/.test((e as Error).message), `no secret in: ${(e as Error).message}`);
      return true;
    });
  }
});

Deno.test("options: NatsStore replies arrive under a per-job inbox prefix, so server permissions can isolate jobs", () => {
  assert.equal(resolveOptions({ servers: "ws://127.0.0.1:1", job: "backfill-2024" }).inboxPrefix, "_INBOX.splitlease_backfill-2024");
  assert.equal(resolveOptions({ servers: "ws://127.0.0.1:1", job: "j", inboxPrefix: "_INBOX_team.a" }).inboxPrefix, "_INBOX_team.a");
  for (const bad of ["", "_INBOX.>", "_INBOX.*.x", "a b", "a..b", ".a"]) {
    assert.throws(
      () => resolveOptions({ servers: "ws://127.0.0.1:1", job: "j", inboxPrefix: bad }),
      (e) => config(e, /inboxPrefix .* must be dot-separated tokens of \[A-Za-z0-9_\$-\]/),
      JSON.stringify(bad),
    );
  }
});
