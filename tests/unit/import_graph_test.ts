// The layering of src/ (docs/DESIGN.md, "Code map"): every file stands in
// one declared part, the parts stand in layers, and an import runs only
// inside its part or down to a part of a lower layer — never up, never
// across to another part of the same layer — and no file is part of an
// import cycle. So each part can be read, tested and moved from the bottom
// up, and a part never needs what stands above it (parts cannot import each
// other in a loop: every arrow between two parts runs down).
import assert from "node:assert/strict";
import { STORE_URL_KINDS } from "../../src/store/store_urls.ts";

const root = new URL("../../src/", import.meta.url);

/**
 * The parts of src/, lowest layer first: each part is named and lists the
 * path prefixes of its files (a folder ends in "/"); a file belongs to the
 * part with the longest prefix of its path. Two parts of one layer stand
 * side by side and do not import each other.
 */
const LAYERS: Record<string, string[]>[] = [
  { errors: ["errors.ts"] },
  { util: ["util/"] },
  { "store interface": ["store/"] },
  { records: ["records/", "records.ts"] },
  { tracing: ["tracing/"], balancing: ["balance/"] },
  // What stands on the store alone: every backend of the store URL registry (its folder is its id:
  // src/nats/, src/postgres/, ...), and the operator's reads and actions over a fleet's records.
  { ...Object.fromEntries(STORE_URL_KINDS.map((k) => [`${k.name} backend`, [`${k.id}/`]])), fleet: ["fleet/"] },
  // The coordinator: what both wings share, the wings, and the member that hosts both.
  { "coordinator floor": ["coordinator/"] },
  { "member wing": ["coordinator/member/"], "leader wing": ["coordinator/leader/"] },
  { coordinator: ["coordinator/coordinator.ts", "coordinator/leadership.ts", "coordinator/member_parts.ts", "coordinator/status.ts"] },
  // A sharded job's member: one coordinator per shard behind one.
  { "sharded job": ["coordinator/sharded_coordinator.ts"] },
  { runtime: ["runtime/"] },
  // A host of a worker: the one way it starts (store, join, worker) and the options every host takes; slices are one.
  { host: ["host/"] },
  { slice: ["slice/"] },
  { http: ["http/"] },
  { serve: ["serve/"], cli: ["cli/"] },
];

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

/** The part a file stands in and its layer (0 = lowest), by the longest declared prefix of its path. */
function partOf(file: string): { part: string; layer: number } | undefined {
  let best: { part: string; layer: number; length: number } | undefined;
  LAYERS.forEach((parts, layer) => {
    for (const [part, prefixes] of Object.entries(parts)) {
      for (const p of prefixes) {
        const hit = p.endsWith("/") ? file.startsWith(p) : file === p;
        if (hit && p.length > (best?.length ?? -1)) best = { part, layer, length: p.length };
      }
    }
  });
  return best && { part: best.part, layer: best.layer };
}

Deno.test("import graph: every file of src/ stands in a declared part, and every part has files", () => {
  const all = files();
  const unplaced = all.filter((f) => partOf(f) === undefined);
  assert.deepEqual(unplaced, [], `files in no part of LAYERS (declare their folder there): ${unplaced.join(", ")}`);
  const used = new Set(all.map((f) => partOf(f)!.part));
  const empty = LAYERS.flatMap((parts) => Object.keys(parts)).filter((p) => !used.has(p));
  assert.deepEqual(empty, [], `parts of LAYERS with no file (a stale prefix): ${empty.join(", ")}`);
});

Deno.test("import graph: no import runs up a layer or across to another part of its layer", () => {
  const wrong: string[] = [];
  for (const [f, deps] of graph()) {
    const from = partOf(f);
    for (const d of deps) {
      const to = partOf(d);
      if (!from || !to || from.part === to.part || to.layer < from.layer) continue;
      const how = to.layer > from.layer ? "up" : "across";
      wrong.push(`${f} (${from.part}) imports ${how} ${d} (${to.part})`);
    }
  }
  assert.deepEqual(wrong.sort(), [], `imports against the layers:\n  ${wrong.join("\n  ")}`);
});

Deno.test("import graph: no file of src/ is part of an import cycle", () => {
  const cycle = findCycle(graph());
  assert.equal(cycle, undefined, `files import each other: ${cycle?.join(" -> ")}`);
});
