/**
 * No straggler (issue 23): a skewed backfill on a MemoryStore whose source
 * can cut a running range. Idle lanes make the leader ask the owner of the
 * big range to cut it; every record is processed, the cut ranges cover the
 * planned ones exactly (no gap; overlap only inside one commit batch, the
 * at-least-once replay), residuals name their parent, and the job ends
 * well before the big range alone would take.
 */
import assert from "node:assert/strict";
import { SplitCoordinator, startWorker, MemoryStore } from "../../mod.ts";
import type { SplitRecord } from "../../admin.ts";
import type { SplitSource } from "../../mod.ts";
import { withTimeout } from "../helpers/deadline.ts";

type Range = { from: number; to: number };
/** A processed batch and the fencing token of the tenancy that wrote it. */
type Done = Range & { token?: { splitId: string; epoch: number } };
const BATCH = 50;
const MS_PER_BATCH = 5;

/** A range source whose every processed batch is logged, with a split hook (or without). */
function rangeSource(plan: Range[], done: Done[], splittable: boolean | "oversized"): SplitSource<Range> {
  const source: SplitSource<Range> = {
    fingerprint: () => "straggler",
    plan: () => Promise.resolve({ finality: "final", splits: plan.map((r) => ({ id: `r${r.from}`, descriptor: r, weight: r.to - r.from })) }),
    async run(lane) {
      let at = Number(lane.progress?.watermark ?? lane.descriptor.from);
      while (at < lane.descriptor.to) {
        if (lane.signal.aborted || lane.revokeSignal.aborted) return;
        const end = Math.min(at + BATCH, lane.descriptor.to);
        await new Promise((r) => setTimeout(r, MS_PER_BATCH));
        if (lane.signal.aborted) return;
        done.push({ from: at, to: end, token: lane.fencingToken });
        const left = lane.descriptor.to - end;
        await lane.commit({ watermark: end, estimate: { left, total: lane.descriptor.to - lane.descriptor.from, unit: "ids" } });
        at = end;
      }
      await lane.complete();
    },
  };
  if (splittable) {
    source.split = (lane, { parts }) => {
      const at = Number(lane.progress?.watermark ?? lane.descriptor.from);
      const step = Math.floor((lane.descriptor.to - at) / parts);
      if (step < 2 * BATCH) return undefined;
      const ends = Array.from({ length: parts }, (_, k) => (k === parts - 1 ? lane.descriptor.to : at + step * (k + 1)));
      if (splittable === "oversized") return { keep: { ...lane.descriptor, pad: "x".repeat(3000) } as Range, residuals: [{ descriptor: { from: ends[0], to: lane.descriptor.to } }] };
      return {
        keep: { from: lane.descriptor.from, to: ends[0] },
        weight: ends[0] - at,
        residuals: ends.slice(1).map((to, k) => ({ descriptor: { from: ends[k], to }, weight: to - ends[k] })),
      };
    };
  }
  return source;
}

/** Asserts that `done` covers [0, total) with no gap, and returns the records processed more than once. */
function coverage(done: Range[], total: number): number {
  const hits = new Uint8Array(total);
  for (const r of done) for (let i = r.from; i < r.to; i++) hits[i]++;
  const gap = hits.findIndex((h) => h === 0);
  assert.equal(gap, -1, `record ${gap} was never processed`);
  let twice = 0;
  for (const h of hits) if (h > 1) twice += h - 1;
  return twice;
}

/**
 * A fenced sink keyed by the token's split id refuses an older epoch: every
 * row written twice was written again under the same id (a residual names
 * its planned ancestor) at an epoch at least as high.
 */
function fencedInOrder(done: Done[], total: number): void {
  const last: ({ splitId: string; epoch: number } | undefined)[] = new Array(total);
  for (const d of done) {
    for (let i = d.from; i < d.to; i++) {
      const prev = last[i];
      if (prev) {
        assert.equal(d.token!.splitId, prev.splitId, `row ${i} written under two fencing ids`);
        assert.ok(d.token!.epoch >= prev.epoch, `row ${i} rewritten at epoch ${d.token!.epoch} after ${prev.epoch}`);
      }
      last[i] = d.token;
    }
  }
}

async function backfill(splittable: boolean | "oversized") {
  // One range 20 × the others: alone on its lane it takes 2000 / 50 × 5 ms = 200 batches... of 5 ms.
  const plan: Range[] = [{ from: 0, to: 10_000 }];
  for (let k = 0; k < 10; k++) plan.push({ from: 10_000 + k * 500, to: 10_500 + k * 500 });
  const total = 15_000;
  await using store = new MemoryStore();
  const done: Done[] = [];
  const source = rangeSource(plan, done, splittable);
  const timings = { leaseMs: 2000, opTimeoutMs: 400, drainDeadlineMs: 1000 };
  const started = Date.now();
  const coordinators = await Promise.all(["a", "b", "c"].map((instance, i) =>
    SplitCoordinator.join({
      store,
      job: "straggler",
      instance,
      fingerprint: "straggler",
      ...(i === 0 ? { planner: (c) => source.plan(c) } : {}),
      splittable: splittable !== false,
      maxInFlight: 2, // the leader counts lanes from the member record: the worker's own
      ...timings,
    })
  ));
  const workers = coordinators.map((coordinator) => startWorker({ coordinator, source, logger: () => {}, maxInFlight: 2 }));
  try {
    const outcomes = await withTimeout(Promise.all(workers.map((w) => w.done)), 60_000, "the backfill to complete");
    for (const o of outcomes) assert.equal(o.kind, "drained", JSON.stringify(o));
    const ms = Date.now() - started;
    const records = (await store.list("split.")).map((e) => [e.key.slice(6), JSON.parse(e.value) as SplitRecord] as const);
    const twice = coverage(done, total);
    fencedInOrder(done, total);
    const declined = outcomes.reduce((n, o) => n + o.stats.cuts.declined, 0);
    return { ms, records, twice, cuts: outcomes.reduce((n, o) => n + o.stats.cuts.performed, 0), declined };
  } finally {
    await Promise.all(workers.map((w) => w.shutdown({ deadlineMs: 0 }).catch(() => {})));
  }
}

Deno.test("straggler: idle lanes cut the running big range; every record processed, ranges covered with no gap, residuals name their parent", async () => {
  const r = await backfill(true);
  console.log(`  with cuts: ${r.ms} ms, ${r.cuts} cuts, ${r.records.length} splits, ${r.twice} records processed twice`);
  const residuals = r.records.filter(([, rec]) => rec.parent !== undefined);
  assert.ok(r.cuts >= 1 && residuals.length >= 1, `at least one cut (cuts ${r.cuts}, residual splits ${residuals.length})`);
  for (const [id, rec] of residuals) {
    assert.ok(r.records.some(([pid]) => pid === rec.parent), `residual ${id} names parent ${rec.parent}, which exists`);
    assert.equal(rec.attempts, 0, "a residual is charged nothing");
  }
  for (const [id, rec] of r.records) assert.equal(rec.status, "completed", `${id} completed`);
  // The replay is at most one batch per cut (the owner's in-flight batch), never a whole range.
  assert.ok(r.twice <= BATCH * (r.cuts + 6), `records processed twice: ${r.twice}`);
});

Deno.test("straggler: a source without the hook is never asked; the same backfill still completes", async () => {
  const r = await backfill(false);
  console.log(`  without cuts: ${r.ms} ms, ${r.records.length} splits`);
  assert.equal(r.cuts, 0);
  assert.ok(r.records.every(([, rec]) => rec.parent === undefined && rec.cuts === undefined));
});

Deno.test("straggler: an answer that cannot be written (a kept descriptor over 2048 bytes) is not written; the split is handed back with its progress and every record is still processed", async () => {
  const r = await backfill("oversized");
  assert.equal(r.cuts, 0);
  assert.ok(r.declined >= 1, `declined ${r.declined}`);
  assert.ok(r.records.every(([, rec]) => rec.parent === undefined && rec.cuts === undefined), "no record was cut");
});
