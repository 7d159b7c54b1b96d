/**
 * After: the job on splitlease (docs/MIGRATING.md, right column). No
 * producer: the leader runs `plan` once and writes one split per range; every
 * worker process runs the same source, and each lane copies one range,
 * committing its position after every batch, so a range whose worker died
 * resumes at its last commit on another worker instead of starting over.
 *
 * @module
 */
import { type SplitSource, splitIdFrom } from "../../mod.ts";
import { BATCH, type Range, ranges, readRows, type Sink } from "./job.ts";

/**
 * The job as a source (1. the producer is `plan`, 2. the worker is `run`):
 * what `serve`, `runWorker` or `startWorker` run in every process.
 */
export function backfillSource(sink: Sink, total: number, size: number): SplitSource<Range> {
  return {
    // Workers of another job (other input) are refused at join, not mixed in.
    fingerprint: () => `backfill:0-${total}/${size}`,
    async plan() {
      const splits = [];
      for (const r of ranges(total, size)) splits.push({ id: await splitIdFrom(["range", r.from]), descriptor: r, weight: r.to - r.from });
      return { finality: "final" as const, splits };
    },
    async run(lane) {
      const { to } = lane.descriptor;
      // Resume where the last owner's last commit left off (the range's start the first time).
      let at = typeof lane.progress?.watermark === "number" ? lane.progress.watermark : lane.descriptor.from;
      while (at < to) {
        if (lane.signal.aborted || lane.revokeSignal.aborted) return; // handed over: the next owner resumes at `at`
        const end = Math.min(to, at + BATCH);
        await sink.upsert(await readRows(at, end));
        await lane.commit({ watermark: end, estimate: { left: to - end, total: to - lane.descriptor.from, unit: "ids" } }, { records: end - at });
        at = end;
      }
      await lane.complete();
    },
  };
}
