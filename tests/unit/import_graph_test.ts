// The layering of src/ (docs/DESIGN.md, "Code map"): no folder imports a
// folder that imports it back, and no file is part of an import cycle, so
// each part can be read, tested and moved from the bottom up.
import assert from "node:assert/strict";

const root = new URL("../../src/", import.meta.url);

/** Every .ts file under src/, relative to it. */
function files(dir = ""): string[] {
  const out: string[] = [];
  for (const e of Deno.readDirSync(new URL(dir, root))) {
    const p = dir + e.name;
    if (e.isDirectory) out.push(...files(p + "/"));
    else if (p.endsWith(".ts")) out.push(p);
  }
  return out;
}

/** Relative imports (type-only ones included: they couple the files as much) of each file, resolved to src/-relative paths. */
function graph(): Map<string, string[]> {
  const g = new Map<string, string[]>();
  for (const f of files()) {
    const text = Deno.readTextFileSync(new URL(f, root));
    const deps: string[] = [];
    for (const m of text.matchAll(/^(?:import|export)\s[^;]*?from\s+"(\.{1,2}\/[^"]+)"/gms)) {
      const url = new URL(m[1], new URL(f, root));
      const rel = url.href.slice(root.href.length);
      if (!url.href.startsWith(root.href)) continue; // src/ imports nothing outside it (checked by the test command)
      deps.push(rel);
    }
    g.set(f, deps);
  }
  return g;
}

/** A cycle through `g`, as the list of its nodes, if there is one. */
function findCycle(g: Map<string, string[]>): string[] | undefined {
  const state = new Map<string, 1 | 2>();
  const stack: string[] = [];
  const visit = (n: string): string[] | undefined => {
    state.set(n, 1);
    stack.push(n);
    for (const d of g.get(n) ?? []) {
      if (state.get(d) === 1) return [...stack.slice(stack.indexOf(d)), d];
      if (state.get(d) === undefined) {
        const c = visit(d);
        if (c) return c;
      }
    }
    stack.pop();
    state.set(n, 2);
    return undefined;
  };
  for (const n of g.keys()) {
    if (state.get(n) === undefined) {
      const c = visit(n);
      if (c) return c;
    }
  }
  return undefined;
}

/** A file's folder; a file at the top of src/ (errors.ts, records.ts) stands for itself. */
const folder = (f: string) => f.includes("/") ? f.slice(0, f.indexOf("/")) : f;

Deno.test("import graph: no folder of src/ imports one that imports it back", () => {
  const g = new Map<string, Set<string>>();
  for (const [f, deps] of graph()) {
    const from = folder(f);
    if (!g.has(from)) g.set(from, new Set());
    for (const d of deps) if (folder(d) !== from) g.get(from)!.add(folder(d));
  }
  const cycle = findCycle(new Map([...g].map(([k, v]) => [k, [...v]])));
  assert.equal(cycle, undefined, `folders import each other: ${cycle?.join(" -> ")}`);
});

Deno.test("import graph: no file of src/ is part of an import cycle", () => {
  const cycle = findCycle(graph());
  assert.equal(cycle, undefined, `files import each other: ${cycle?.join(" -> ")}`);
});
