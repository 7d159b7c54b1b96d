#!/usr/bin/env node
// `npm run build` (also `prepack`, so `npm pack` / `npm publish` build first):
//
// - dist/<entry>.js: the npm package's code, ESM, one file per deno.json
//   export, shared code split into dist/chunks/, npm dependencies left as
//   imports (esbuild);
// - dist/types/**.d.ts: declarations emitted by tsc (TypeScript 7) from the
//   same sources (esbuild emits no types; tsc is the reference declaration
//   emitter, and it type-checks the sources under plain TypeScript rules on
//   the way, so a Deno-only leniency cannot reach a consumer's tsc);
// - dist/splitlease.bundle.js: one self-contained ESM file, dependencies
//   inlined, importable by Deno, Bun and Node by path or URL; its first line
//   `// @ts-self-types="./splitlease.bundle.d.ts"` points Deno at
//   dist/splitlease.bundle.d.ts, the declarations bundled into one file with
//   every dependency's types inlined (rollup-plugin-dts, which runs on the
//   TypeScript 6 compiler API of @typescript/typescript6: TypeScript 7 has no
//   JS API yet), so a program that imports the bundle by URL type-checks with
//   nothing else installed.
//
// - dist/cli.js: the `splitlease` command (package.json `bin`), from cli.ts,
//   sharing the chunks of the entries above.
//
// package.json's `exports` must list every deno.json export (checked here).
import { build } from "esbuild";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const out = join(root, "dist");
const types = join(out, "types");
const deno = JSON.parse(readFileSync(join(root, "deno.json"), "utf8"));
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const started = Date.now();

function fail(message) {
  process.stderr.write(`build failed: ${message}\n`);
  process.exit(1);
}

// Every deno.json export, same subpath, .ts -> .js (code) and .d.ts (types).
const entries = Object.entries(deno.exports).map(([sub, file]) => {
  const src = file.replace(/^\.\//, "");
  const stem = src.replace(/\.ts$/, "");
  return { sub, src, js: `./dist/${stem}.js`, dts: `./dist/types/${stem}.d.ts` };
});
for (const e of entries) {
  const want = { types: e.dts, default: e.js };
  const have = pkg.exports?.[e.sub];
  if (JSON.stringify(have) !== JSON.stringify(want)) {
    fail(
      `package.json exports[${JSON.stringify(e.sub)}] must be ${JSON.stringify(want)} ` +
        `(deno.json exports it as ${deno.exports[e.sub]}), got ${JSON.stringify(have)}`,
    );
  }
}
for (const sub of Object.keys(pkg.exports ?? {})) {
  if (!(sub in deno.exports) && sub !== "./package.json") {
    fail(`package.json exports ${JSON.stringify(sub)}, which deno.json does not export`);
  }
}

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

// --- code (esbuild) ----------------------------------------------------------
await build({
  absWorkingDir: root,
  entryPoints: [...entries.map((e) => ({ in: e.src, out: e.src.replace(/\.ts$/, "") })), { in: "cli.ts", out: "cli" }],
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

// The command: esbuild keeps cli.ts's `#!/usr/bin/env node` line; npm links `bin` to it.
if (pkg.bin?.splitlease !== "./dist/cli.js") fail(`package.json bin.splitlease must be "./dist/cli.js", got ${JSON.stringify(pkg.bin)}`);
if (!readFileSync(join(out, "cli.js"), "utf8").startsWith("#!/usr/bin/env node\n")) fail("dist/cli.js lost its #! line");
chmodSync(join(out, "cli.js"), 0o755);

// --- declarations (tsc) --------------------------------------------------------
// A throwaway tsconfig so the entry list comes from deno.json. The Deno
// adapter's few `Deno.*` calls get a minimal ambient shim for this compile
// only (the real Deno types check it in `npm test`); no Deno type reaches a
// declaration.
const shim = join(out, ".deno-shim.d.ts");
writeFileSync(
  shim,
  `declare namespace Deno {
  type Signal = "SIGTERM" | "SIGINT" | "SIGHUP" | "SIGQUIT";
  const version: { deno: string };
  function serve(
    options: { port: number; hostname: string; onListen?: () => void },
    handler: (request: Request) => Response | Promise<Response>,
  ): { addr: { port: number }; shutdown(): Promise<void> };
  function addSignalListener(signal: Signal, handler: () => void): void;
  function removeSignalListener(signal: Signal, handler: () => void): void;
  function exit(code?: number): never;
  function memoryUsage(): { rss: number; heapTotal: number; heapUsed: number; external: number };
  interface Conn {
    read(p: Uint8Array): Promise<number | null>;
    write(p: Uint8Array): Promise<number>;
    close(): void;
  }
  interface TcpConn extends Conn {
    setNoDelay(noDelay?: boolean): void;
  }
  function connect(options: { hostname: string; port: number }): Promise<TcpConn>;
  function startTls(conn: TcpConn, options: { hostname: string }): Promise<Conn>;
}
`,
);
const tsconfig = join(root, ".tsconfig.build.json");
writeFileSync(
  tsconfig,
  JSON.stringify({
    compilerOptions: {
      target: "es2022",
      module: "nodenext",
      moduleResolution: "nodenext",
      lib: ["esnext", "dom", "dom.iterable", "dom.asynciterable"],
      types: ["node"],
      strict: true,
      declaration: true,
      emitDeclarationOnly: true,
      allowImportingTsExtensions: true,
      skipLibCheck: true,
      rootDir: ".",
      outDir: "dist/types",
    },
    files: [...entries.map((e) => e.src), relative(root, shim)],
  }),
);
const tsc = spawnSync(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", tsconfig], {
  cwd: root,
  encoding: "utf8",
});
rmSync(tsconfig, { force: true });
rmSync(shim, { force: true });
if (tsc.status !== 0) fail(`tsc could not emit declarations:\n${tsc.stdout}${tsc.stderr}`);

// tsc keeps the sources' `.ts` specifiers in declarations; consumers resolve
// `.js` (the emitted file's name) under every module resolution mode.
const disposableLib = '/// <reference lib="esnext.disposable" />\n';
const relTs = /((?:from|import)\s*\(?\s*["'])(\.{1,2}\/[^"']+)\.ts(["'])/g;
function walk(dir, f) {
  for (const ent of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, ent.name);
    if (ent.isDirectory()) walk(p, f);
    else f(p);
  }
}
walk(types, (p) => {
  if (!p.endsWith(".d.ts")) return;
  const text = readFileSync(p, "utf8");
  let fixed = text.replace(relTs, "$1$2.js$3");
  // Stores, coordinators and workers are `AsyncDisposable`: say which lib
  // that needs, so a consumer's `lib: ["es2022"]` still type-checks.
  if (/AsyncDisposable|Symbol\.asyncDispose/.test(fixed)) fixed = disposableLib + fixed;
  if (fixed !== text) writeFileSync(p, fixed);
});
for (const e of entries) {
  if (!existsSync(join(root, e.dts))) fail(`tsc emitted no ${e.dts} for ${e.src}`);
}

// --- the single-file bundles ---------------------------------------------------
// splitlease.bundle.js: the runtime-neutral API (mod, nats, serverless).
// splitlease.bundle.deno.js: the same plus the Deno adapter (`serve`,
// `denoWebSocket`), for Deno programs that import by URL: the README tells
// Deno users to use both, and the neutral bundle has neither.
async function buildBundle(name, bundled) {
  const bundleEntry = join(out, ".bundle-entry.ts");
  writeFileSync(bundleEntry, bundled.map((f) => `export * from ${JSON.stringify(join(root, f))};`).join("\n") + "\n");
  await build({
    absWorkingDir: root,
    entryPoints: [bundleEntry],
    outfile: join(out, `${name}.js`),
    bundle: true,
    format: "esm",
    platform: "neutral",
    mainFields: ["module", "main"],
    conditions: ["import", "module", "default"],
    target: "es2022",
    minify: true,
    keepNames: true,
    legalComments: "eof",
    // Deno reads the declarations named here when the bundle is imported by
    // path or URL (https://docs.deno.com/runtime/fundamentals/typescript/).
    banner: { js: `// @ts-self-types="./${name}.d.ts"` },
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

  // Its declarations: one file, dependencies' types inlined (a program that
  // imports the bundle by URL has no node_modules to resolve "zod" from).
  const dtsEntry = join(types, ".bundle-entry.d.ts");
  writeFileSync(
    dtsEntry,
    bundled.map((f) => `export * from ${JSON.stringify("./" + f.replace(/\.ts$/, ".js"))};`).join("\n") + "\n",
  );
  const { rollup } = await import("rollup");
  const { dts } = await import("rollup-plugin-dts");
  const warnings = [];
  const rolled = await rollup({
    input: dtsEntry,
    plugins: [dts({ respectExternal: true, compilerOptions: { types: [] } })],
    onwarn: (w) => warnings.push(w.message),
  });
  await rolled.write({ file: join(out, `${name}.d.ts`), format: "es" });
  await rolled.close();
  rmSync(dtsEntry);
  const bundleDts = disposableLib +
    readFileSync(join(out, `${name}.d.ts`), "utf8").replaceAll(disposableLib, "");
  writeFileSync(join(out, `${name}.d.ts`), bundleDts);
  const code = bundleDts.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  const bare = [...code.matchAll(/(?:from\s*|import\s*\(\s*)["']([^"'.][^"']*)["']/g)].map((m) => m[1]);
  if (bare.length) fail(`dist/${name}.d.ts still imports ${[...new Set(bare)].join(", ")}`);
  if (warnings.length) process.stderr.write(`declaration bundle warnings (${name}):\n  ${warnings.join("\n  ")}\n`);
}
const neutral = ["mod.ts", "nats.ts", "adapters/serverless.ts"];
await buildBundle("splitlease.bundle", neutral);
await buildBundle("splitlease.bundle.deno", [...neutral, "adapters/deno.ts"]);

const size = (f) => `${(statSync(join(out, f)).size / 1024).toFixed(0)} KiB`;
console.log(
  `built dist/ (${entries.map((e) => e.sub).join(", ")}; declarations in dist/types/) and ` +
    `dist/splitlease.bundle.js (${size("splitlease.bundle.js")}, types ${size("splitlease.bundle.d.ts")}; ` +
    `with the Deno adapter: splitlease.bundle.deno.js, ${size("splitlease.bundle.deno.js")}) in ${
      Date.now() - started
    } ms`,
);
