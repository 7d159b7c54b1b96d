// docs/OPERATIONS.md, "Worker and serving options", against the schemas that
// check those options (issue 22, item 3): every option the table names is one
// serve takes, and a default the table gives is the one the schema fills in.
import assert from "node:assert/strict";
import { DEFAULT_SHUTDOWN_MARGIN_MS, SERVE_SCHEMA } from "../../src/serve/serve_options.ts";
import { WORKER_SCHEMA } from "../../src/runtime/worker_options.ts";

Deno.test("docs: the worker and serving options table names serve's options, with the schemas' defaults", async () => {
  const text = await Deno.readTextFile(new URL("../../docs/OPERATIONS.md", import.meta.url));
  const section = text.slice(text.indexOf("### Worker and serving options"));
  const table = section.slice(0, section.indexOf("\n\n", section.indexOf("|")));
  const rows = table.split("\n").filter((l) => l.startsWith("| `"));
  assert.ok(rows.length >= 10, "the table is where it was");
  const serveKeys = new Set(Object.keys(SERVE_SCHEMA.shape));
  const defaults = new Map<string, string>([["shutdownMarginMs", String(DEFAULT_SHUTDOWN_MARGIN_MS)]]);
  for (const [k, s] of Object.entries(WORKER_SCHEMA.shape)) {
    const d = (s as { def: { type: string; defaultValue?: unknown } }).def;
    if (d.type === "default" && k !== "maxInFlight") defaults.set(k, String(d.defaultValue));
  }
  for (const row of rows) {
    const [names, shown] = row.split("|").slice(1, 3).map((c) => c.trim());
    for (const name of names.match(/`([^`]+)`/g)!.map((n) => n.slice(1, -1))) {
      assert.ok(serveKeys.has(name), `${name} is not a serve option`);
      const d = defaults.get(name);
      if (d !== undefined) assert.ok(shown === d || shown.startsWith("`" + d + "`"), `${name}: the table says ${shown}, the schema ${d}`);
    }
  }
});
