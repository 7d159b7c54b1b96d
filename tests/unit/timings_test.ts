// Every interval the coordinator derives from its config is made in one place
// (src/coordinator/timings.ts); these are the numbers docs/DESIGN.md names.
// A multiple of leaseMs made anywhere else (the leader's spare cover, the
// slices' work window, the default self-fence margin: issue 40, item 9) is
// refused by the scan below.
import assert from "node:assert/strict";
import { parseCoordinatorConfig } from "../../admin.ts";
import { SLICE_TIMING_DEFAULTS, TUNABLE_DEFAULTS } from "../../src/coordinator/config.ts";
import { checkSliceOptions } from "../../src/slice/slice_options.ts";
import { MemoryStore } from "../../mod.ts";
import { timings } from "../../src/coordinator/timings.ts";

const repo = new URL("../../", import.meta.url);

Deno.test("timings: every derived interval at the defaults and at a short lease", () => {
  const d = timings(parseCoordinatorConfig({ job: "j", instance: "i", fingerprint: "f" }));
  assert.deepEqual(d, {
    deadAfterMs: 15000,
    heartbeatMs: 5000,
    heartbeatRetryMs: 1500,
    twinWaitMs: 5000 + 1500,
    selfFenceAfterMs: 15000 - 1875,
    plannerlessElectionDelayMs: 7500,
    connectedWithinMs: 7500 + 5000,
    reconcileRetryMs: 1500,
    balanceIntervalMs: 1500,
    balanceMinIntervalMs: 150,
    deafOwnerFenceMs: 10000 + 15000,
    watchSnapshotLimitMs: 30000,
    claimRecheckMaxMs: 5000,
    planOutageRetryMs: 1000,
    planBackoffMaxMs: 15000,
    planFailRetryMs: 5000,
    spareClaimAfterMs: 150,
    cutAskTimeoutMs: 3000,
    cutCooldownMs: 15000,
    leaderlessCoverMs: 22500,
  });
  const s = timings(parseCoordinatorConfig({ job: "j", instance: "i", fingerprint: "f", leaseMs: 500, opTimeoutMs: 100, drainDeadlineMs: 100 }));
  assert.equal(s.twinWaitMs, 500 / 3 + 500 / 10);
  assert.equal(s.selfFenceAfterMs, 500 - 62);
  assert.equal(s.reconcileRetryMs, 50);
  assert.equal(s.balanceIntervalMs, 50);
  assert.equal(s.balanceMinIntervalMs, 5);
  assert.equal(s.planOutageRetryMs, 500);
  assert.equal(s.watchSnapshotLimitMs, 30000);
  assert.equal(s.spareClaimAfterMs, 20);
});

/** A line of code without the text of its string literals (a template keeps its `${…}` expressions). */
function withoutStrings(line: string): string {
  return line
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/'(?:[^'\\]|\\.)*'/g, "''")
    .replace(/`(?:[^`\\]|\\.)*`/g, (t) => [...t.matchAll(/\$\{([^}]*)\}/g)].map((m) => m[1]).join(" ; "));
}

/** The code of a TypeScript file without its comments (line comments, and doc or block comment lines) and string text. */
function codeLines(text: string): { n: number; line: string }[] {
  const out: { n: number; line: string }[] = [];
  let inBlock = false;
  text.split("\n").forEach((raw, i) => {
    let line = raw;
    if (inBlock) {
      const end = line.indexOf("*/");
      if (end < 0) return;
      line = line.slice(end + 2);
      inBlock = false;
    }
    line = line.replace(/\/\*.*?\*\//g, "");
    const start = line.indexOf("/*");
    if (start >= 0) {
      inBlock = true;
      line = line.slice(0, start);
    }
    line = line.replace(/(^|[^:"'`])\/\/.*$/, "$1");
    line = withoutStrings(line);
    if (line.trim()) out.push({ n: i + 1, line });
  });
  return out;
}

/** Every .ts file under `dir` (relative to the repository). */
function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of Deno.readDirSync(new URL(dir, repo))) {
    const p = `${dir}${e.name}`;
    if (e.isDirectory) out.push(...tsFiles(p + "/"));
    else if (p.endsWith(".ts")) out.push(p);
  }
  return out;
}

Deno.test("timings: no multiple of leaseMs is made outside src/coordinator/timings.ts (the package, the CLI, the adapters)", () => {
  // `2 * leaseMs`, `leaseMs / 3`, `1.5 * config.leaseMs`, `x.leaseMs * 2`, ...
  const multiple = /\bleaseMs\b\s*[*/](?!\/)|[*/]\s*(?:[\w$#]+\.)*leaseMs\b/;
  const found: string[] = [];
  for (const f of [...tsFiles("src/"), ...tsFiles("adapters/"), "cli.ts"]) {
    if (f === "src/coordinator/timings.ts") continue;
    for (const { n, line } of codeLines(Deno.readTextFileSync(new URL(f, repo)))) {
      if (multiple.test(line)) found.push(`${f}:${n}: ${line.trim()}`);
    }
  }
  assert.deepEqual(found, [], `leaseMs multiples outside timings.ts (name them there):\n${found.join("\n")}`);
});

Deno.test("timings: slices take the coordinator's defaults except the three timing ones, declared beside them with the reason", () => {
  const t = checkSliceOptions({ store: new MemoryStore(), source: { fingerprint: () => "f", plan: () => Promise.resolve({ splits: [], finality: "final" }), run: () => Promise.resolve() }, job: "j" });
  assert.deepEqual(
    { leaseMs: t.leaseMs, opTimeoutMs: t.opTimeoutMs, drainDeadlineMs: t.drainDeadlineMs },
    { ...SLICE_TIMING_DEFAULTS },
    "a slice's timing defaults are the named constant of config.ts",
  );
  // The reason for the shorter lease holds: the worker's defaults would not fit the default budget's window.
  assert.ok(t.minBudgetMs <= t.budgetMs, `the slice defaults fit the default budget (${t.minBudgetMs} <= ${t.budgetMs})`);
  const worker = TUNABLE_DEFAULTS.drainDeadlineMs + 1000 + 2 * TUNABLE_DEFAULTS.leaseMs;
  assert.ok(worker > t.budgetMs, `the worker's defaults need ${worker} ms, more than the default budget ${t.budgetMs}`);
  // README says the same numbers.
  const readme = Deno.readTextFileSync(new URL("README.md", repo));
  const said = `\`leaseMs\` ${SLICE_TIMING_DEFAULTS.leaseMs}, \`opTimeoutMs\` ${SLICE_TIMING_DEFAULTS.opTimeoutMs}, \`drainDeadlineMs\`\n${SLICE_TIMING_DEFAULTS.drainDeadlineMs}`;
  assert.ok(readme.includes(said), `README names the slice defaults as ${JSON.stringify(said)}`);
});
