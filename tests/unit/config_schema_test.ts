// The coordinator's options are declared once, in the schema of
// src/coordinator/config.ts (issue 22, item 3): the reference rows, the
// tunable names and the defaults are read from it, and the defaults the
// CoordinatorTunables interface names in its comments must be the schema's.
import assert from "node:assert/strict";
import { coordinatorConfigDocs } from "../../admin.ts";
import { TUNABLE_DEFAULTS, TUNABLE_KEYS } from "../../src/coordinator/config.ts";

Deno.test("config: the interface's documented defaults are the schema's", async () => {
  const text = await Deno.readTextFile(new URL("../../src/coordinator/config.ts", import.meta.url));
  const body = text.slice(text.indexOf("export interface CoordinatorTunables"), text.indexOf("export interface CoordinatorConfig"));
  const documented: Record<string, number | boolean> = {};
  for (const m of body.matchAll(/\/\*\*([^*]|\*(?!\/))*?\(default (\d+|true|false)[^*]*\*\/\s*\n\s*(\w+)\?:/g)) {
    documented[m[3]] = m[2] === "true" ? true : m[2] === "false" ? false : Number(m[2]);
  }
  const defaults: Record<string, number | boolean> = { ...TUNABLE_DEFAULTS };
  assert.deepEqual(documented, defaults);
});

Deno.test("config: the reference's default column and the tunable names come from the schema", () => {
  const docs = new Map(coordinatorConfigDocs().map((d) => [d.key, d.default]));
  for (const [k, v] of Object.entries(TUNABLE_DEFAULTS)) assert.equal(docs.get(k), String(v), k);
  assert.deepEqual([...TUNABLE_KEYS].sort(), [...Object.keys(TUNABLE_DEFAULTS), "selfFenceMarginMs"].sort());
});
