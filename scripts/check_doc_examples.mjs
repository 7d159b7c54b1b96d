#!/usr/bin/env node
// Every export of the package's entry points has a doc comment with an
// example (an @example tag or a fenced code block). Reads `deno doc --json`.
import { spawnSync } from "node:child_process";
import { join } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const entries = process.argv.slice(2);
const r = spawnSync(join(root, "node_modules/.bin/deno"), ["doc", "--json", ...entries], {
  cwd: root,
  encoding: "utf8",
  maxBuffer: 64 * 1024 * 1024,
});
if (r.status !== 0) {
  process.stderr.write(r.stderr);
  process.exit(1);
}
const doc = JSON.parse(r.stdout);
const missing = [];
for (const mod of Object.values(doc.nodes)) {
  for (const sym of mod.symbols ?? []) {
    const ok = (sym.declarations ?? []).some((d) => {
      const js = d.jsDoc ?? {};
      return (js.tags ?? []).some((t) => t.kind === "example") || (js.doc ?? "").includes("```");
    });
    if (!ok) {
      const loc = sym.declarations?.[0]?.location;
      missing.push(`${sym.name} (${loc ? loc.filename.replace(`file://${root}`, "") + ":" + (loc.line + 1) : "?"})`);
    }
  }
}
if (missing.length) {
  console.log(`${missing.length} exports have no example in their doc comment:`);
  for (const m of missing) console.log("  " + m);
  process.exit(1);
}
console.log(`every export of ${entries.join(", ")} has an example`);
