/**
 * The README's install commands work today (issue 21, item 6): they used to
 * be `npm install @splitlease/splitlease`, `bun add …` and `deno add jsr:…`
 * for a package on neither registry. Every install command of the README's
 * Install section installs the tarball `npm pack` makes, by the name npm
 * gives it, and the CLI line names the package's `bin` (in a project that
 * installed it) or the package itself (anywhere else).
 */
import assert from "node:assert/strict";
import { packOnce, root } from "./pack.ts";

Deno.test({
  name: "package: the README installs the tarball npm pack makes, by its name, and runs the CLI by its bin name",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const readme = await Deno.readTextFile(`${root}README.md`);
    const pkg = JSON.parse(await Deno.readTextFile(`${root}package.json`));
    const install = readme.slice(readme.indexOf("## Install"), readme.indexOf("## Quick start"));
    const shell = [...install.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) => m[1].split("\n"));
    const installs = shell.map((l) => l.replace(/#.*$/, "").trim()).filter((l) =>
      /^(npm (install|i|add)|bun add|deno add|yarn add|pnpm add) [^&\s]/.test(l)
    );
    assert.ok(installs.length > 0, "the Install section has an install command");
    const { tarball } = await packOnce();
    const filename = tarball.slice(tarball.lastIndexOf("/") + 1);
    for (const line of installs) {
      const target = line.split(/\s+/).at(-1)!;
      assert.ok(target.endsWith(`/${filename}`), `${JSON.stringify(line)} installs the packed tarball ${filename}, not a registry name`);
    }
    assert.ok(shell.some((l) => l.includes("npm pack") && l.includes(filename)), `the README names what npm pack writes (${filename})`);
    const bin = Object.keys(pkg.bin ?? {});
    // `npx <bin>` in a project that installed the package; anywhere else `npx <package>`, which runs
    // the bin named like the package's unscoped name (issue 31: a bare `npx splitlease` outside the
    // project asks the registry for an unscoped name someone else could register).
    assert.ok(bin.includes(pkg.name.replace(/^@[^/]+\//, "")), `npx ${pkg.name} runs the bin named ${pkg.name.replace(/^@[^/]+\//, "")}`);
    for (const m of readme.matchAll(/npx ([\w@/.-]+)/g)) {
      assert.ok(bin.includes(m[1]) || m[1] === pkg.name, `npx ${m[1]}: the package's bin is ${bin.join(", ")}, its name ${pkg.name}`);
    }
    assert.match(readme, new RegExp(`npx ${pkg.name.replace("/", "\\/")} `), "the README names the package for npx outside a project");
  },
});
