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
