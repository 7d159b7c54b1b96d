/**
 * What holds a V8 heap snapshot's memory (`v8.writeHeapSnapshot()`, a
 * `.heapsnapshot` file): self sizes summed by node type and name (the
 * constructor for objects, "(string)" and the like for the rest), largest
 * first. The million scenario prints it for a leader over its memory target.
 *
 *   node_modules/.bin/deno run -A bench/heap_summary.ts FILE [TOP]
 *
 * @module
 */

interface Snapshot {
  snapshot: {
    meta: { node_fields: string[]; node_types: [string[], ...unknown[]]; edge_fields: string[]; edge_types: [string[], ...unknown[]] };
    node_count: number;
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** Rows by retained self size, and a text table of the `top` largest. */
export async function summarizeHeap(path: string, top = 25): Promise<{ rows: { what: string; count: number; bytes: number }[]; text: string }> {
  const snap: Snapshot = JSON.parse(await Deno.readTextFile(path));
  const f = snap.snapshot.meta.node_fields;
  const types = snap.snapshot.meta.node_types[0];
  const n = f.length, iType = f.indexOf("type"), iName = f.indexOf("name"), iSize = f.indexOf("self_size");
  const by = new Map<string, { count: number; bytes: number }>();
  let total = 0;
  for (let i = 0; i < snap.nodes.length; i += n) {
    const type = types[snap.nodes[i + iType]];
    const name = type === "object" || type === "closure" || type === "native" ? snap.strings[snap.nodes[i + iName]] : `(${type})`;
    const key = `${type}: ${name.slice(0, 60)}`;
    const size = snap.nodes[i + iSize];
    total += size;
    const e = by.get(key);
    if (e) (e.count++, (e.bytes += size));
    else by.set(key, { count: 1, bytes: size });
  }
  const rows = [...by].map(([what, v]) => ({ what, ...v })).sort((a, b) => b.bytes - a.bytes).slice(0, top);
  const MiB = (b: number) => (b / 2 ** 20).toFixed(1);
  const owners = byOwner(snap).slice(0, top);
  const text = [`heap: ${MiB(total)} MiB in ${snap.nodes.length / n} nodes; largest by self size:`]
    .concat(rows.map((r) => `  ${MiB(r.bytes).padStart(8)} MiB  ${String(r.count).padStart(9)} × ${r.what}`))
    .concat([`arrays and strings by what holds them (two retainers up: the owner's field, then the collection):`])
    .concat(owners.map((r) => `  ${MiB(r.bytes).padStart(8)} MiB  ${String(r.count).padStart(9)} × ${r.what}`)).join("\n");
  return { rows: rows.concat(owners.map((r) => ({ ...r, what: `held by ${r.what}` }))), text };
}

/**
 * Arrays (a Map's or Set's table, an Array's elements) and strings summed by
 * their first retainer two steps up: `Owner.#field → Map` names which
 * collection of which object holds them, where the self-size table says only
 * "(array)" and "(string)".
 */
function byOwner(snap: Snapshot): { what: string; count: number; bytes: number }[] {
  const { node_fields: nf, node_types: nt, edge_fields: ef, edge_types: et } = snap.snapshot.meta;
  const n = nf.length, e = ef.length;
  const iType = nf.indexOf("type"), iName = nf.indexOf("name"), iSize = nf.indexOf("self_size"), iEdges = nf.indexOf("edge_count");
  const eType = ef.indexOf("type"), eName = ef.indexOf("name_or_index"), eTo = ef.indexOf("to_node");
  const types = nt[0], etypes = et[0];
  const count = snap.nodes.length / n;
  // First strong retainer of each node, and the edge's name.
  const parent = new Int32Array(count).fill(-1);
  const via = new Int32Array(count).fill(-1);
  let ei = 0;
  for (let i = 0; i < count; i++) {
    const edges = snap.nodes[i * n + iEdges];
    for (let k = 0; k < edges; k++, ei += e) {
      const t = etypes[snap.edges[ei + eType]];
      if (t === "weak" || t === "shortcut") continue;
      const to = snap.edges[ei + eTo] / n;
      if (parent[to] >= 0) continue;
      parent[to] = i;
      via[to] = t === "element" || t === "hidden" ? -1 : snap.edges[ei + eName];
    }
  }
  const label = (i: number) => {
    const type = types[snap.nodes[i * n + iType]];
    const name = type === "object" || type === "closure" || type === "native" ? snap.strings[snap.nodes[i * n + iName]] : `(${type})`;
    return name.replace(/ @\d+/, "").slice(0, 40); // a scope's node id: one row for every scope of a kind
  };
  // Indexed slots (an array's, a table's, a module's numbered ones) summed as one.
  const edge = (i: number) => (via[i] >= 0 && !/^\d+$/.test(String(snap.strings[via[i]])) ? `.${String(snap.strings[via[i]]).slice(0, 30)}` : "[]");
  const by = new Map<string, { count: number; bytes: number }>();
  for (let i = 0; i < count; i++) {
    const type = types[snap.nodes[i * n + iType]];
    if (type !== "array" && type !== "string" && type !== "concatenated string" && type !== "sliced string") continue;
    const p = parent[i];
    const g = p >= 0 ? parent[p] : -1;
    const key = `${g >= 0 ? label(g) + edge(p) + " → " : ""}${p >= 0 ? label(p) + edge(i) : "(root)"} → (${type})`;
    const size = snap.nodes[i * n + iSize];
    const x = by.get(key);
    if (x) (x.count++, (x.bytes += size));
    else by.set(key, { count: 1, bytes: size });
  }
  return [...by].map(([what, v]) => ({ what, ...v })).sort((a, b) => b.bytes - a.bytes);
}

if (import.meta.main) {
  const [file, top] = Deno.args;
  if (!file) {
    console.error("usage: heap_summary.ts FILE [TOP]");
    Deno.exit(2);
  }
  console.log((await summarizeHeap(file, Number(top ?? 25))).text);
}
