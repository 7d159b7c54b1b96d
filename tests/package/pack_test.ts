/**
 * The npm package end to end: `npm pack`, install the tarball into a fresh
 * project, type-check a consumer with `tsc --strict` (with DOM types, and
 * with only Node's), and run it on Node 24 and Bun.
 */
import assert from "node:assert/strict";
import { VERSION } from "../../admin.ts";
import { runCmd } from "../helpers/cmd.ts";
import { bin, npmEnv, packOnce, root, tempDir } from "./pack.ts";

const CONSUMER = `
import { MemoryStore, type SplitSource, splitIdFrom } from "@splitlease/splitlease";
import { runSlice, type SliceResult, createSliceHandler } from "@splitlease/splitlease/serverless";
import { NatsStore, type NatsStoreOptions } from "@splitlease/splitlease/nats";
import type { serve as denoServe } from "@splitlease/splitlease/deno";

const source: SplitSource<{ from: number; to: number }> = {
  fingerprint: () => "consumer-v1",
  async plan() {
    const splits = [];
    for (let from = 0; from < 300; from += 100) {
      splits.push({ id: await splitIdFrom(["n", from]), descriptor: { from, to: from + 100 } });
    }
    return { splits, finality: "final" as const };
  },
  async run(lane) {
    // @ts-expect-error descriptor is typed: no such field
    lane.descriptor.nope;
    let i = Number(lane.progress?.watermark ?? lane.descriptor.from);
    while (i < lane.descriptor.to && !lane.signal.aborted) {
      const end = Math.min(i + 25, lane.descriptor.to);
      await lane.commit({ watermark: end }, { records: end - i });
      i = end;
    }
    if (i >= lane.descriptor.to) await lane.complete();
  },
};

const options: NatsStoreOptions = { servers: ["ws://nats.invalid:8080"], job: "consumer" };
// @ts-expect-error servers is required
const incomplete: NatsStoreOptions = { job: "consumer" };
const handler: (request: Request) => Promise<Response> = createSliceHandler({ store: new MemoryStore(), source, job: "h" });
const adapter = "Bun" in globalThis
  ? await import("@splitlease/splitlease/bun")
  : await import("@splitlease/splitlease/node");
const denoServeType: typeof denoServe | undefined = undefined;

const store = new MemoryStore();
const result: SliceResult = await runSlice({
  store, source, job: "consumer", budgetMs: 5000,
  leaseMs: 1000, opTimeoutMs: 400, drainDeadlineMs: 1000, logger: () => {},
});
await store.close();
// @ts-expect-error outcome is a string union
const wrong: number = result.outcome;
console.log(JSON.stringify({
  outcome: result.outcome,
  records: result.recordsCommitted,
  connect: typeof NatsStore.connect,
  handler: typeof handler,
  serve: typeof adapter.serve,
  unused: [options.job, incomplete, denoServeType, wrong].length,
}));
`;

/** A consumer's tsconfig: strict, nodenext, declarations of every dependency checked too. */
function tsconfig(lib: string[], types: string[]): string {
  return JSON.stringify({
    compilerOptions: {
      strict: true,
      noEmit: true,
      target: "es2022",
      module: "nodenext",
      moduleResolution: "nodenext",
      lib,
      types,
      skipLibCheck: false,
    },
    files: ["consumer.ts"],
  });
}

Deno.test("package: package.json, deno.json (JSR), package-lock.json and VERSION (member records, fleet page, CLI) name one version", async () => {
  const read = async (f: string) => JSON.parse(await Deno.readTextFile(`${root}${f}`));
  const [pkg, deno, lock] = await Promise.all([read("package.json"), read("deno.json"), read("package-lock.json")]);
  assert.match(VERSION, /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/, "VERSION is a semantic version");
  assert.equal(pkg.version, VERSION, "package.json's version is src/coordinator/member/job_check.ts's VERSION");
  assert.equal(deno.version, VERSION, "deno.json's version is src/coordinator/member/job_check.ts's VERSION");
  assert.equal(lock.version, VERSION, "package-lock.json's version (run npm install after changing package.json's)");
  assert.equal(lock.packages[""].version, VERSION, "package-lock.json's root package version");
});

/** Where the README's links into the repository point (package.json's repository, on its main branch). */
const BLOB = "https://github.com/splitlease/splitlease/blob/main/";

/** The targets of the Markdown links and images of `text` (inline `[text](target)` form). */
function readmeLinks(text: string): string[] {
  const outside = text.replace(/```[\s\S]*?```/g, "").replace(/`[^`\n]*`/g, "");
  return [...outside.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]);
}

Deno.test("package: a registry page has what it needs (repository, homepage, bugs, changelog, absolute README links, caret ranges pinned by the lock)", async () => {
  const read = async (f: string) => JSON.parse(await Deno.readTextFile(`${root}${f}`));
  const [pkg, lock] = await Promise.all([read("package.json"), read("package-lock.json")]);
  assert.deepEqual(pkg.repository, { type: "git", url: "git+https://github.com/splitlease/splitlease.git" });
  assert.equal(pkg.homepage, "https://github.com/splitlease/splitlease#readme");
  assert.deepEqual(pkg.bugs, { url: "https://github.com/splitlease/splitlease/issues" });
  for (const f of ["CHANGELOG.md", "docs/*.md"]) assert.ok(pkg.files.includes(f), `package.json files lists ${f}`);

  // Runtime dependencies are caret ranges; the lock pins each to the exact version the range starts at.
  for (const [dep, range] of Object.entries(pkg.dependencies as Record<string, string>)) {
    const m = /^\^(\d+\.\d+\.\d+)$/.exec(range);
    assert.ok(m, `${dep}: a caret range, got ${range}`);
    assert.equal(lock.packages[""].dependencies[dep], range, `package-lock.json's root lists ${dep} as package.json does (run npm install)`);
    assert.equal(lock.packages[`node_modules/${dep}`].version, m[1], `package-lock.json pins ${dep} to ${m[1]}`);
  }

  // The changelog has a section for this version (or an Unreleased one above it).
  const changelog = await Deno.readTextFile(`${root}CHANGELOG.md`);
  assert.match(changelog, new RegExp(`^## ${VERSION.replaceAll(".", "\\.")}$`, "m"), `CHANGELOG.md has a section for ${VERSION}`);

  // Every README link works off the repository: absolute (https) or an anchor in the page; those into the repository name a file that exists.
  const links = readmeLinks(await Deno.readTextFile(`${root}README.md`));
  assert.ok(links.length >= 4, "the README links its docs");
  for (const link of links) {
    assert.match(link, /^(https:\/\/|#)/, `README link ${link} is absolute (a relative one breaks on a registry page)`);
    if (link.startsWith(BLOB)) {
      const path = link.slice(BLOB.length).replace(/#.*$/, "");
      assert.ok((await Deno.stat(`${root}${path}`)).isFile, `README links to ${path}, which exists`);
    }
  }
  for (const doc of ["docs/OPERATIONS.md", "docs/DESIGN.md", "docs/SCALE.md", "CHANGELOG.md"]) {
    assert.ok(links.includes(BLOB + doc), `the README links ${doc}`);
  }
});

Deno.test({
  name: "package: npm run docs writes the API reference as HTML into docs/api/, which git ignores",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await runCmd("npm", ["run", "--silent", "docs"], { cwd: root, env: npmEnv(), timeoutMs: 120_000, what: "npm run docs" });
    const index = await Deno.readTextFile(`${root}docs/api/index.html`);
    assert.match(index, /@splitlease\/splitlease/);
    // Every entry point has its page, named as deno.json's exports name it (`.` is the index itself).
    const deno = JSON.parse(await Deno.readTextFile(`${root}deno.json`));
    for (const sub of Object.keys(deno.exports)) {
      if (sub === ".") continue;
      const page = await Deno.readTextFile(`${root}docs/api/${sub.slice(2)}/index.html`);
      assert.match(page, /<html/i, `the reference has a page for ${sub}`);
    }
    assert.match(await Deno.readTextFile(`${root}docs/api/host/~/createApp.html`), /routes/, "symbols have their pages");
    const ignored = await runCmd("git", ["check-ignore", "-q", "docs/api/index.html"], { cwd: root, check: false });
    assert.equal(ignored.code, 0, "docs/api/ is git-ignored");
  },
});

Deno.test({
  name: "package: npm pack installs into a fresh project, type-checks with tsc --strict, runs on Node 24 and Bun",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const { tarball, files } = await packOnce();
    const pkg = JSON.parse(await Deno.readTextFile(`${root}package.json`));
    const deno = JSON.parse(await Deno.readTextFile(`${root}deno.json`));

    // What the tarball holds: the docs, the license, code and types of every entry, nothing else.
    for (const f of ["LICENSE", "README.md", "package.json"]) assert.ok(files.includes(f), `tarball has ${f}`);
    for (const [sub, target] of Object.entries(pkg.exports as Record<string, { types: string; default: string }>)) {
      if (sub === "./package.json") continue;
      assert.ok(sub in deno.exports, `${sub} is a deno.json export too`);
      assert.ok(files.includes(target.default.slice(2)), `tarball has ${target.default} (${sub})`);
      assert.ok(files.includes(target.types.slice(2)), `tarball has ${target.types} (${sub})`);
    }
    // What a registry page links to: the docs and the changelog (not the generated API reference).
    for (const f of ["CHANGELOG.md", "docs/OPERATIONS.md", "docs/DESIGN.md", "docs/SCALE.md"]) {
      assert.ok(files.includes(f), `tarball has ${f}`);
    }
    assert.deepEqual(files.filter((f) => f.startsWith("docs/api/")), [], "no generated API reference in the package");
    for (const link of readmeLinks(await Deno.readTextFile(`${root}README.md`))) {
      const inRepo = link.startsWith(BLOB) ? link.slice(BLOB.length).replace(/#.*$/, "") : undefined;
      if (inRepo && /^(docs\/[^/]+\.md|CHANGELOG\.md)$/.test(inRepo)) assert.ok(files.includes(inRepo), `README links to ${inRepo}: in the package`);
    }
    const stray = files.filter((f) =>
      /^(src|tests|examples|scripts|bench|adapters)\//.test(f) || f.includes("fixtures") || f.includes("bundle")
    );
    assert.deepEqual(stray, [], "no sources, tests, fixtures or the URL bundle in the npm package");
    assert.notEqual(pkg.private, true);
    assert.equal(pkg.name, "@splitlease/splitlease");
    assert.equal(pkg.engines.node, ">=22");
    for (const dev of ["aws4fetch", "s3rver", "typescript", "workerd"]) {
      assert.ok(!(dev in pkg.dependencies), `${dev} is a devDependency only`);
    }
    // The PostgreSQL entry's driver installs with the package (it has no dependencies of its own);
    // only that entry imports it.
    assert.ok("postgres" in pkg.dependencies, "postgres (the driver of @splitlease/splitlease/postgres) is a dependency");

    // A fresh project installs the tarball (from the npm cache where it can).
    const app = tempDir("splitlease-consumer-");
    await Deno.writeTextFile(`${app}/package.json`, JSON.stringify({ name: "consumer", private: true, type: "module" }));
    const install = await runCmd(
      "npm",
      ["install", "--prefer-offline", "--no-audit", "--no-fund", tarball, `@types/node@${pkg.devDependencies["@types/node"]}`],
      { cwd: app, env: npmEnv(), timeoutMs: 120_000, what: "npm install of the tarball" },
    );
    assert.doesNotMatch(install.out, /EBADENGINE|npm warn/i, "a quiet install on Node >= 22");
    const installed = JSON.parse(await Deno.readTextFile(`${app}/node_modules/@splitlease/splitlease/package.json`));
    assert.equal(installed.version, VERSION, "the installed package is the version its coordinator reports");
    assert.deepEqual(Object.keys(installed.dependencies).sort(), Object.keys(pkg.dependencies).sort());

    // The `splitlease` command npm links from `bin`, on Node 24.
    assert.deepEqual(pkg.bin, { splitlease: "./dist/cli.js" });
    assert.ok(files.includes("dist/cli.js"), "tarball has dist/cli.js");
    const help = await runCmd(`${app}/node_modules/.bin/splitlease`, ["--help"], {
      cwd: app,
      env: npmEnv(),
      timeoutMs: 30_000,
      what: "the installed splitlease command",
    });
    assert.match(help.stdout, /^usage: splitlease <command>/);
    const usage = await runCmd(`${app}/node_modules/.bin/splitlease`, ["status"], { cwd: app, env: npmEnv(), check: false });
    assert.equal(usage.code, 2, "no server given: a usage error");
    // Outside any project that depends on it, the CLI is run by naming the package (a bare
    // `npx splitlease` would ask the registry for an unscoped name that is not this package):
    // `npx @splitlease/splitlease …` once published, the tarball's path until then (the README's words).
    const outside = tempDir("splitlease-npx-");
    const exec = await runCmd("npm", ["exec", "--yes", "--prefer-offline", `--package=${tarball}`, "--", "splitlease", "--version"], {
      cwd: outside,
      env: npmEnv(),
      timeoutMs: 120_000,
      what: "npm exec --package=<tarball> -- splitlease --version, outside a project",
    });
    assert.equal(exec.stdout.trim(), `splitlease ${VERSION}`);

    await Deno.writeTextFile(`${app}/consumer.ts`, CONSUMER);
    await Deno.writeTextFile(`${app}/tsconfig.dom.json`, tsconfig(["es2022", "dom"], []));
    await Deno.writeTextFile(`${app}/tsconfig.node.json`, tsconfig(["es2022"], ["node"]));
    const tsc = `${root}node_modules/typescript/bin/tsc`;
    await Promise.all(["dom", "node"].map((v) =>
      runCmd(bin("node"), [tsc, "-p", `tsconfig.${v}.json`], {
        cwd: app,
        timeoutMs: 90_000,
        what: `tsc --strict of the consumer (${v} types)`,
      })
    ));

    for (const [rt, args] of [["node", ["consumer.ts"]], ["bun", ["consumer.ts"]]] as const) {
      const r = await runCmd(bin(rt), [...args], { cwd: app, timeoutMs: 30_000, what: `the consumer on ${rt}` });
      const last = JSON.parse(r.stdout.trim().split("\n").pop()!);
      assert.deepEqual(last, {
        outcome: "complete",
        records: 300,
        connect: "function",
        handler: "function",
        serve: "function",
        unused: 4,
      }, rt);
    }
  },
});

Deno.test({
  name: "package: npm install in this repository is quiet on Node >= 22; on an older Node only @nats-io/nuid's engine warning remains",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const install = ["install", "--dry-run", "--prefer-offline", "--no-audit", "--no-fund"];
    const onNode24 = await runCmd("npm", install, { cwd: root, env: npmEnv(), timeoutMs: 60_000, what: "npm install --dry-run on Node 24" });
    assert.doesNotMatch(onNode24.out, /npm warn/i);

    // The machine's own Node (the one `npm install` runs on before anything is
    // installed): without the node_modules/.bin that `npm test` puts first.
    const path = (Deno.env.get("PATH") ?? "").split(":").filter((p) => !p.includes("node_modules/.bin")).join(":");
    const env = { ...Deno.env.toObject(), PATH: path, NO_COLOR: "1" };
    const version = (await runCmd("node", ["--version"], { env })).stdout.trim();
    const onMachine = await runCmd("npm", install, { cwd: root, env, timeoutMs: 60_000, what: `npm install --dry-run on Node ${version}` });
    const warned = [...onMachine.out.matchAll(/EBADENGINE\s+package: '([^']+)'/g)].map((m) => m[1]);
    const major = Number(/^v(\d+)/.exec(version)?.[1]);
    // devEngines (not engines) states what this checkout needs, so npm checks the root against that.
    assert.deepEqual(warned, major >= 22 ? [] : ["@nats-io/nuid@3.0.0"], `Node ${version}:\n${onMachine.out}`);
    assert.doesNotMatch(onMachine.out.replace(/npm warn EBADENGINE.*\n/g, ""), /npm warn/i);
  },
});
