// zod is imported as a namespace (`import * as z from "zod"`) everywhere in
// src: its named `z` export is one object holding every export, locales
// included, which no bundler can tree-shake (the URL bundle carried 459 KiB of
// zod that way instead of 102 KiB; issue 22, item 5).
import assert from "node:assert/strict";

async function* tsFiles(dir: string): AsyncGenerator<string> {
  for await (const e of Deno.readDir(dir)) {
    if (e.isDirectory) yield* tsFiles(`${dir}/${e.name}`);
    else if (e.name.endsWith(".ts")) yield `${dir}/${e.name}`;
  }
}

Deno.test("zod: no value import of the z object in src or adapters", async () => {
  const root = new URL("../../", import.meta.url).pathname;
  const found: string[] = [];
  for (const dir of ["src", "adapters"]) {
    for await (const path of tsFiles(root + dir)) {
      const text = await Deno.readTextFile(path);
      if (/^import \{[^}]*\bz\b[^}]*\} from "zod(\/[a-z]+)?";/m.test(text)) found.push(path.slice(root.length));
    }
  }
  assert.deepEqual(found, []);
});
