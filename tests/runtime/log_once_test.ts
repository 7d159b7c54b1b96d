/**
 * One log line per event (issue 21, item 6): a served worker used to log
 * every gain twice ("Gained split" from the coordinator with `split`, "split
 * gained" from the worker with `splitId`), and losses, failures and
 * quarantines the same way. Now the worker logs each once, with the
 * coordinator's fields (`kind`, `attempts`) on its line.
 */
import assert from "node:assert/strict";
import { serve } from "../../adapters/deno.ts";
import { MemoryStore } from "../../mod.ts";
import type { SplitSource } from "../../mod.ts";
import { withTimeout } from "../helpers/deadline.ts";

interface Line {
  level: string;
  msg: string;
  fields: Record<string, unknown>;
}

Deno.test({
  name: "log: a gain, a failure and a quarantine are each logged once, with the coordinator's kind and attempts",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const lines: Line[] = [];
    const source: SplitSource<{ n: number }> = {
      fingerprint: () => "log-once",
      plan: () => Promise.resolve({ finality: "final", splits: [{ id: "ok", descriptor: { n: 1 } }, { id: "bad", descriptor: { n: 2 } }] }),
      async run(lane) {
        if (lane.splitId === "bad") throw new Error("poison");
        await lane.commit({ watermark: 1 });
        await lane.complete();
      },
    };
    const service = await serve({
      store: new MemoryStore(),
      source,
      job: "log-once",
      port: 0,
      hostname: "127.0.0.1",
      exit: false,
      maxAttempts: 1,
      leaseMs: 1000,
      opTimeoutMs: 200,
      drainDeadlineMs: 500,
      shutdownMarginMs: 500,
      logger: (level, msg, fields) => lines.push({ level, msg, fields: fields ?? {} }),
    });
    const result = await withTimeout(service.done, 20_000, "the job ends");
    assert.equal(result.exitCode, 3, "stalled: one split quarantined");
    const about = (id: string, re: RegExp) =>
      lines.filter((l) => re.test(l.msg) && (l.fields.split === id || l.fields.splitId === id) && l.level !== "debug");
    const shown = (ls: Line[]) => JSON.stringify(ls);
    for (const id of ["ok", "bad"]) {
      const gains = about(id, /gain/i);
      assert.equal(gains.length, 1, `one gain line for ${id}: ${shown(gains)}`);
      assert.equal(gains[0].fields.event, "gained");
      assert.ok(["claim", "grant"].includes(String(gains[0].fields.kind)), "how it came");
      assert.equal(gains[0].fields.attempts, 0);
    }
    const failed = about("bad", /fail/i);
    assert.equal(failed.length, 1, `one failure line: ${shown(failed)}`);
    const quarantined = about("bad", /quarantin/i);
    assert.equal(quarantined.length, 1, `one quarantine line: ${shown(quarantined)}`);
    assert.equal(quarantined[0].fields.attempts, 1);
  },
});
