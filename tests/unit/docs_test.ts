// docs/OPERATIONS.md documents every coordinator option with the code's
// default: this keeps the two from drifting.
import assert from "node:assert/strict";
import { coordinatorConfigDocs, parseCoordinatorConfig } from "../../admin.ts";
import { coordinatorConfigKeys, TUNABLE_KEYS } from "../../src/coordinator/config.ts";

const page = await Deno.readTextFile(new URL("../../docs/OPERATIONS.md", import.meta.url));

Deno.test("docs: every coordinator option is in the reference, with the code's default", () => {
  const docs = coordinatorConfigDocs();
  assert.deepEqual(docs.map((d) => d.key).sort(), coordinatorConfigKeys().sort());
  const parsed = parseCoordinatorConfig({ job: "j", instance: "i", fingerprint: "f" }) as unknown as Record<string, unknown>;
  for (const d of docs) {
    if (/^\d+$/.test(d.default)) assert.equal(String(parsed[d.key]), d.default, `default of ${d.key}`);
    const row = `| \`${d.key}\` | ${d.default} | ${d.rule} | ${d.meaning} |`;
    assert.ok(page.includes(row), `docs/OPERATIONS.md lacks the row:\n${row}`);
  }
  assert.equal(parsed.selfFenceMarginMs, 15000 / 8);
  // Adapters forward exactly the tunables (everything but the identity keys).
  assert.deepEqual(
    [...TUNABLE_KEYS].sort(),
    coordinatorConfigKeys().filter((k) => !["job", "instance", "fingerprint"].includes(k)).sort(),
  );
});

// The main entry is what a pipeline is written against; everything else has
// its own entry (./store, ./admin, ./host, ./testing). This keeps it from
// silently growing (issue 12: internals must not be public API). 41 since
// issue 41: a source throws `PermanentFailure`, so it belongs here; 42
// since issue 39: a sharded job's member joins with `ShardedCoordinator`,
// 43 with its options' type (what the join takes, as `JoinOptions` is).
// 30 since the types a pipeline only passes through (tunables, logging,
// commit and lane options, status details, `Clock`, `MemoryStoreOptions`,
// `ErrorCode`, `ShardedJoinOptions`) moved to ./host, ./testing, ./store
// and ./admin. A source's `splitIdFrom` and `SplitEstimate` stay: planners
// and lanes are written with them (the URL bundle is this entry alone).
const MOD_MAX_EXPORTS = 30;

Deno.test(`docs: mod.ts exports at most ${MOD_MAX_EXPORTS} names`, async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--json", "mod.ts"],
    cwd: new URL("../../", import.meta.url).pathname,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, `deno doc --json mod.ts failed:\n${new TextDecoder().decode(out.stderr)}`);
  const doc = JSON.parse(new TextDecoder().decode(out.stdout)) as { nodes: Record<string, { symbols?: { name: string }[] }> };
  const names = [...new Set(Object.values(doc.nodes).flatMap((m) => m.symbols ?? []).map((s) => s.name))].sort();
  for (const n of ["SplitSource", "SplitCoordinator", "runWorker", "MemoryStore"]) assert.ok(names.includes(n), `deno doc lists ${n}`);
  assert.ok(
    names.length <= MOD_MAX_EXPORTS,
    `mod.ts exports ${names.length} names, more than ${MOD_MAX_EXPORTS}: ${names.join(", ")}. ` +
      "Export what a pipeline does not write code against from ./store, ./admin, ./host or ./testing instead.",
  );
});
