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
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] }; node_count: number };
  nodes: number[];
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
  const text = [`heap: ${MiB(total)} MiB in ${snap.nodes.length / n} nodes; largest by self size:`]
    .concat(rows.map((r) => `  ${MiB(r.bytes).padStart(8)} MiB  ${String(r.count).padStart(9)} × ${r.what}`)).join("\n");
  return { rows, text };
}

if (import.meta.main) {
  const [file, top] = Deno.args;
  if (!file) {
    console.error("usage: heap_summary.ts FILE [TOP]");
    Deno.exit(2);
  }
  console.log((await summarizeHeap(file, Number(top ?? 25))).text);
}
