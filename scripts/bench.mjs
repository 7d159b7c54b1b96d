#!/usr/bin/env node
// `npm run bench`: runs every bench/*_bench.ts with Deno (benches that need
// Bun or Node spawn them from node_modules/.bin themselves), prints each
// bench's output, then a summary table of the `::result {...}` rows the
// benches print (each with the ratio measured in that run).
// `npm run bench -- coordinator` runs only the benches whose name matches.
import { spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const deno = join(root, "node_modules", ".bin", "deno");
const only = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const natsServer = process.env.NATS_SERVER ??
  ["/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"].find((p) => existsSync(p));

const benches = readdirSync(join(root, "bench"))
  .filter((f) => f.endsWith("_bench.ts"))
  .filter((f) => !only.length || only.some((o) => f.includes(o)))
  .sort();

function run(file) {
  return new Promise((resolve) => {
    const child = spawn(deno, ["run", "-A", `bench/${file}`], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, NO_COLOR: "1", ...(natsServer ? { NATS_SERVER: natsServer } : {}) },
    });
    const rows = [];
    let buf = "";
    child.stdout.on("data", (d) => {
      buf += d.toString();
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line.startsWith("::result ")) {
          try {
            rows.push(JSON.parse(line.slice(9)));
          } catch { /* malformed row: shown as is */ }
        } else process.stdout.write(line + "\n");
      }
    });
    child.stderr.on("data", (d) => process.stderr.write(d));
    // Stop the bench (and the servers it started) if this runner is interrupted.
    const stop = () => child.kill("SIGTERM");
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    child.on("close", (code, signal) => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve({ code: code ?? (signal ? 1 : 0), rows });
    });
  });
}

const started = Date.now();
const summary = [];
const failed = [];
for (const file of benches) {
  console.log(`\n=== ${file} ===`);
  const t0 = Date.now();
  const { code, rows } = await run(file);
  console.log(`(${((Date.now() - t0) / 1000).toFixed(1)} s${code ? `, exit ${code}` : ""})`);
  if (code) failed.push(file);
  summary.push(...rows.map((r) => ({ bench: file.replace(/_bench\.ts$/, ""), ...r })));
}

const cols = [
  ["bench", (r) => r.bench],
  ["metric", (r) => r.metric],
  ["measured", (r) => r.value ?? ""],
  ["ratio", (r) => (typeof r.ratio === "number" ? r.ratio.toFixed(r.ratio >= 100 ? 0 : 3) : "")],
  ["target", (r) => r.target ?? ""],
];
const width = cols.map(([h, f]) => Math.max(h.length, ...summary.map((r) => String(f(r)).length)));
const line = (cells) => cells.map((c, i) => String(c).padEnd(width[i])).join("  ").trimEnd();
console.log(`\n=== summary (${benches.length} benches, ${((Date.now() - started) / 1000).toFixed(0)} s) ===`);
console.log(line(cols.map(([h]) => h)));
console.log(line(width.map((w) => "-".repeat(w))));
for (const r of summary) console.log(line(cols.map(([, f]) => f(r))));
if (failed.length) {
  console.log(`\nfailed: ${failed.join(", ")}`);
  process.exit(1);
}
