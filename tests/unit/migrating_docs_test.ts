// docs/MIGRATING.md shows the same job on BullMQ, a JetStream work queue and
// splitlease: every code block in it is a verbatim excerpt of
// examples/migrating/, which the type-check gate checks and
// tests/examples/migrating_test.ts runs, so the page cannot drift into code
// that does not compile or does not work.
import assert from "node:assert/strict";

const root = new URL("../../", import.meta.url);
const page = await Deno.readTextFile(new URL("docs/MIGRATING.md", root));

Deno.test("docs: every code block of MIGRATING.md is a verbatim excerpt of examples/migrating", async () => {
  const dir = new URL("examples/migrating/", root);
  const files: string[] = [];
  for await (const e of Deno.readDir(dir)) if (e.name.endsWith(".ts")) files.push(await Deno.readTextFile(new URL(e.name, dir)));
  const blocks = [...page.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.ok(blocks.length >= 6, `${blocks.length} code blocks`);
  for (const b of blocks) assert.ok(files.some((f) => f.includes(b)), `not in examples/migrating:\n${b}`);
  // The three versions are all on the page: the producer and the worker of each.
  for (const name of ["bullmq.ts", "jetstream.ts", "splitlease.ts", "main.ts"]) assert.ok(page.includes(name), name);
});
