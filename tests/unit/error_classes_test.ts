// A code that has its own error class is thrown only as that class, so
// `instanceof` and `.code` never disagree (issue 22, item 4: three errors were
// thrown as the base class with a subclass's code).
import assert from "node:assert/strict";

const OWN_CLASS: Record<string, string> = {
  STORE_UNAVAILABLE: "StoreUnavailableError",
  INVALID_RECORD: "InvalidRecordError",
  VALUE_TOO_LARGE: "ValueTooLargeError",
  INVALID_KEY: "InvalidKeyError",
  FENCED: "FencedError",
};

async function* tsFiles(dir: string): AsyncGenerator<string> {
  for await (const e of Deno.readDir(dir)) {
    if (e.isDirectory) yield* tsFiles(`${dir}/${e.name}`);
    else if (e.name.endsWith(".ts")) yield `${dir}/${e.name}`;
  }
}

Deno.test("errors: no base SplitleaseError carries a code that has its own class", async () => {
  const root = new URL("../../", import.meta.url).pathname;
  const found: string[] = [];
  for (const dir of ["src", "adapters"]) {
    for await (const path of tsFiles(root + dir)) {
      const text = await Deno.readTextFile(path);
      for (const m of text.matchAll(/new SplitleaseError\(\s*"([A-Z_]+)"/g)) {
        if (OWN_CLASS[m[1]]) found.push(`${path.slice(root.length)}: ${m[1]} (use ${OWN_CLASS[m[1]]})`);
      }
    }
  }
  assert.deepEqual(found, []);
});
