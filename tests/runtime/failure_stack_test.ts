// A failing split keeps where it failed (issue 31, item 6): a throwing run
// and lane.fail(error) write the stack's first frames into the split's
// failure history and the worker's log line; lane.fail(text) writes none.
import assert from "node:assert/strict";
import { MemoryStore, SplitCoordinator, startWorker, type SplitSource } from "../../mod.ts";
import type { SplitRecord } from "../../admin.ts";
import { jsonLogger } from "../../host.ts";
import { withTimeout } from "../helpers/deadline.ts";

function parse(text: string): never {
  throw new SyntaxError(`unexpected token in ${text}`);
}

Deno.test("failure stacks: a throwing run and lane.fail(error) keep their stack in the record and the log; lane.fail(text) none", async () => {
  const store = new MemoryStore();
  const lines: { msg: string; error?: { name: string; stack?: string } }[] = [];
  const logger = jsonLogger({ level: "debug", write: (line) => lines.push(JSON.parse(line)) });
  const source: SplitSource<null> = {
    fingerprint: () => "stacks",
    plan: () => Promise.resolve({ finality: "final", splits: ["thrown", "error", "text"].map((id) => ({ id, descriptor: null })) }),
    async run(lane) {
      if (lane.splitId === "thrown") parse("row 7");
      if (lane.splitId === "error") return lane.fail(new RangeError("offset out of range"));
      await lane.fail("bad input");
    },
  };
  const coordinator = await SplitCoordinator.join({ store, job: "stacks", fingerprint: "stacks", planner: (c) => source.plan(c), maxAttempts: 1 });
  const worker = startWorker({ coordinator, source, logger });
  try {
    const outcome = await withTimeout(worker.done, 20_000, "the job to stall");
    assert.equal(outcome.kind, "stalled");
  } finally {
    await worker.shutdown().catch(() => {});
    await coordinator.close();
  }
  const rec = async (id: string) => JSON.parse((await store.get(`split.${id}`))!.value) as SplitRecord;
  const thrown = (await rec("thrown")).failures![0];
  assert.equal(thrown.message, "run threw: SyntaxError: unexpected token in row 7");
  assert.match(thrown.stack!, /^at parse .*failure_stack_test\.ts:\d+:\d+\)\nat /);
  const error = (await rec("error")).failures![0];
  assert.equal(error.message, "RangeError: offset out of range");
  assert.match(error.stack!, /^at Object\.run .*failure_stack_test\.ts:\d+:\d+\)/);
  const text = (await rec("text")).failures![0];
  assert.equal(text.message, "bad input");
  assert.equal(text.stack, undefined);
  // The worker's lines say where too.
  const runFailed = lines.find((l) => l.msg === "run failed")!;
  assert.equal(runFailed.error?.name, "SyntaxError");
  assert.match(runFailed.error!.stack!, /^at parse .*failure_stack_test\.ts/);
  const failed = lines.filter((l) => l.msg === "Split failed");
  assert.equal(failed.length, 2);
  assert.match(failed.find((l) => l.error)!.error!.stack!, /^at Object\.run .*failure_stack_test\.ts/, "lane.fail(error) logs its stack");
  await store.close();
});
