// Summarises V8 CPU profiles (.cpuprofile, from `deno run --cpu-prof` or
// `node --cpu-prof`) of the benches' processes: where the CPU went, by
// part of the stack (NATS client, splitlease's records, the leader, the
// store, the runtime, …), the top functions by self time, and the
// inclusive time of the functions named with --fn.
//
//   deno run -A bench/cpuprofile_summary.ts [--skip=S] [--last=S] [--per=N] [--top=N] [--fn=a,b] FILE.cpuprofile…
//
//  --skip=S   leave out the first S seconds of each profile (start-up, join)
//  --last=S   keep only the last S seconds
//  --per=N    also print each figure divided by N (e.g. the commits landed
//             in the window: ms per commit)
//  --fn=a,b   inclusive time of functions whose name contains a or b
// Node profiles of an esbuild bundle (bench/.build/*.mjs) are mapped back
// to the source files by the `// path.ts` comments esbuild writes at each
// module's start.
const args = Deno.args.filter((a) => a.startsWith("--"));
const files = Deno.args.filter((a) => !a.startsWith("--"));
const opt = (k: string) => args.find((a) => a.startsWith(`--${k}=`))?.slice(k.length + 3);
const SKIP = Number(opt("skip") ?? 0) * 1e6, LAST = Number(opt("last") ?? 0) * 1e6;
const PER = Number(opt("per") ?? 0), TOP = Number(opt("top") ?? 25);
const FNS = (opt("fn") ?? "").split(",").filter(Boolean);

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Line → module path of an esbuild bundle, from its `// path` markers. */
const bundles = new Map<string, { line: number; path: string }[]>();
function bundleModule(url: string, line: number): string | undefined {
  if (!url.includes("/bench/.build/")) return undefined;
  let marks = bundles.get(url);
  if (!marks) {
    marks = [];
    try {
      const text = Deno.readTextFileSync(new URL(url));
      text.split("\n").forEach((l, i) => {
        const m = /^\/\/ ((?:src|bench|adapters|tests)\/\S+\.ts|\S+\.ts)$/.exec(l);
        if (m) marks!.push({ line: i, path: m[1] });
      });
    } catch { /* not readable: unmapped */ }
    bundles.set(url, marks);
  }
  let lo = 0, hi = marks.length - 1, best: string | undefined;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (marks[mid].line <= line) (best = marks[mid].path), (lo = mid + 1);
    else hi = mid - 1;
  }
  return best;
}

/** The source a frame belongs to: a repository path, a package, or a runtime part. */
function where(n: Node): string {
  const { url, lineNumber, functionName } = n.callFrame;
  if (!url) return functionName.startsWith("(") ? functionName : "(native)";
  const mapped = bundleModule(url, lineNumber);
  if (mapped) return mapped;
  const pkg = /node_modules\/(?:\.deno\/[^/]+\/node_modules\/)?(@[^/]+\/[^/]+|[^/@][^/]*)/.exec(url) ??
    /registry\.npmjs\.org\/(@[^/]+\/[^/]+|[^/@][^/]*)/.exec(url);
  if (pkg) return `npm:${pkg[1]}`;
  const repo = /\/work\/[^ ]*?\/((?:src|bench|adapters|tests)\/.*|[a-z_]+\.ts)$/.exec(url);
  if (repo) return repo[1];
  if (url.startsWith("node:") || url.startsWith("ext:")) return url.replace(/^(node:internal\/[^/]+|ext:[^/]+).*$/, "$1");
  return url;
}

/** The part of the stack a source belongs to. */
function part(src: string, fn: string): string {
  if (src === "(garbage collector)") return "GC";
  if (src === "(idle)") return "idle";
  if (src === "(program)") return "V8/runtime (program)";
  if (src === "(native)") return `native builtins`;
  if (src.startsWith("npm:@nats-io/")) return "NATS client (@nats-io)";
  if (src === "npm:zod") return "zod (validation)";
  if (src.startsWith("npm:")) return `other npm (${src.slice(4)})`;
  if (src.startsWith("src/records")) return "splitlease records (decode/validate/encode)";
  if (src.startsWith("src/coordinator/leader/")) return "splitlease leader";
  if (src.startsWith("src/coordinator/")) return "splitlease coordinator (member)";
  if (src.startsWith("src/nats/")) return "splitlease NatsStore";
  if (src.startsWith("src/store/")) return "splitlease store layer";
  if (src.startsWith("src/runtime/")) return "splitlease worker runtime";
  if (src.startsWith("src/")) return "splitlease other";
  if (src.startsWith("adapters/")) return "WebSocket adapter";
  if (src.startsWith("bench/") || src.startsWith("tests/")) return "bench harness";
  if (src.startsWith("node:") || src.startsWith("ext:")) return "runtime JS (node:/ext:)";
  return `other (${src}${fn ? ` ${fn}` : ""})`;
}

const fmt = (us: number, total: number) => {
  const ms = us / 1000;
  return `${ms.toFixed(0).padStart(7)} ms ${((100 * us) / total).toFixed(1).padStart(5)}%${PER ? ` ${(ms / PER).toFixed(4).padStart(9)} ms/unit` : ""}`;
};

for (const file of files) {
  const p: Profile = JSON.parse(Deno.readTextFileSync(file));
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const span = p.endTime - p.startTime;
  const from = Math.max(SKIP, LAST ? span - LAST : 0);
  const self = new Map<number, number>();
  let t = 0, window = 0;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i];
    if (t < from) continue;
    const dt = p.timeDeltas[i + 1] ?? 0; // a sample stands for the time until the next one
    self.set(p.samples[i], (self.get(p.samples[i]) ?? 0) + dt);
    window += dt;
  }
  const parts = new Map<string, number>();
  const fns = new Map<string, number>();
  const inclusive = new Map<string, number>();
  for (const [id, us] of self) {
    const n = byId.get(id)!;
    const src = where(n);
    const name = n.callFrame.functionName || "(anonymous)";
    parts.set(part(src, name), (parts.get(part(src, name)) ?? 0) + us);
    const key = `${name} ${src}:${n.callFrame.lineNumber + 1}`;
    fns.set(key, (fns.get(key) ?? 0) + us);
    if (FNS.length) {
      const seen = new Set<string>();
      for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
        const fn = byId.get(cur)!.callFrame.functionName;
        for (const f of FNS) if (fn.includes(f)) seen.add(fn);
      }
      for (const f of seen) inclusive.set(f, (inclusive.get(f) ?? 0) + us);
    }
  }
  const idle = parts.get("idle") ?? 0;
  const busy = window - idle;
  console.log(`\n${file}: ${(window / 1e6).toFixed(1)} s profiled (from +${(from / 1e6).toFixed(1)} s), busy ${(busy / 1e6).toFixed(2)} s = ${((100 * busy) / window).toFixed(1)}% of a core`);
  console.log(`  by part (share of busy time):`);
  for (const [k, us] of [...parts].filter(([k]) => k !== "idle").sort((a, b) => b[1] - a[1])) console.log(`    ${fmt(us, busy)}  ${k}`);
  console.log(`  top ${TOP} functions by self time:`);
  for (const [k, us] of [...fns].filter(([k]) => !k.startsWith("(idle)")).sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`    ${fmt(us, busy)}  ${k}`);
  if (FNS.length) {
    console.log(`  inclusive time (self + callees):`);
    for (const [k, us] of [...inclusive].sort((a, b) => b[1] - a[1])) console.log(`    ${fmt(us, busy)}  ${k}`);
  }
}
