#!/usr/bin/env node
// `npm run build`: the Node build in dist/ (ESM, one file per deno.json
// export plus the adapters, shared code split into chunks, npm dependencies
// left as imports) and dist/splitlease.bundle.js (one self-contained ESM
// file, dependencies inlined, importable by Deno, Bun and Node by path/URL).
import { build } from "esbuild";
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const out = join(root, "dist");
const deno = JSON.parse(readFileSync(join(root, "deno.json"), "utf8"));
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

// Every deno.json export, same subpath, .ts -> .js.
const entries = Object.entries(deno.exports).map(([sub, file]) => ({ sub, file: file.replace(/^\.\//, "") }));
const started = Date.now();
await build({
  absWorkingDir: root,
  entryPoints: entries.map((e) => ({ in: e.file, out: e.file.replace(/\.ts$/, "") })),
  outdir: out,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node22",
  packages: "external",
  chunkNames: "chunks/[name]-[hash]",
  sourcemap: true,
  logLevel: "warning",
});

const exportsMap = {};
for (const e of entries) exportsMap[e.sub] = "./" + e.file.replace(/\.ts$/, ".js");
writeFileSync(
  join(out, "package.json"),
  JSON.stringify(
    {
      name: pkg.name,
      version: deno.version,
      description: pkg.description,
      license: deno.license,
      type: "module",
      engines: { node: ">=22" },
      exports: exportsMap,
      dependencies: pkg.dependencies,
    },
    null,
    2,
  ) + "\n",
);

// The single-file bundle: the runtime-neutral API (mod, nats, serverless).
const bundleEntry = join(out, ".bundle-entry.ts");
writeFileSync(
  bundleEntry,
  ["mod.ts", "nats.ts", "adapters/serverless.ts"]
    .map((f) => `export * from ${JSON.stringify(join(root, f))};`)
    .join("\n") + "\n",
);
await build({
  absWorkingDir: root,
  entryPoints: [bundleEntry],
  outfile: join(out, "splitlease.bundle.js"),
  bundle: true,
  format: "esm",
  platform: "neutral",
  mainFields: ["module", "main"],
  conditions: ["import", "module", "default"],
  target: "es2022",
  minify: true,
  keepNames: true,
  legalComments: "eof",
  // tweetnacl (via nkeys) may require("crypto") for randomBytes: serve it
  // from Web Crypto, which every supported runtime has.
  plugins: [{
    name: "web-crypto-shim",
    setup(b) {
      b.onResolve({ filter: /^(node:)?crypto$/ }, () => ({ path: "crypto", namespace: "web-crypto-shim" }));
      b.onLoad({ filter: /.*/, namespace: "web-crypto-shim" }, () => ({
        loader: "js",
        contents: "module.exports = { randomBytes(n) { const b = new Uint8Array(n); " +
          "for (let i = 0; i < n; i += 65536) globalThis.crypto.getRandomValues(b.subarray(i, Math.min(n, i + 65536))); " +
          "return b; } };",
      }));
    },
  }],
  logLevel: "warning",
});
rmSync(bundleEntry);
const size = statSync(join(out, "splitlease.bundle.js")).size;
console.log(
  `built dist/ (${entries.map((e) => e.sub).join(", ")}) and dist/splitlease.bundle.js (${(size / 1024).toFixed(0)} KiB) in ${
    Date.now() - started
  } ms`,
);
