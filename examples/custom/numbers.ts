// The README's custom source: sums ranges of numbers, one split per range.
// Run it: node_modules/.bin/deno run -A examples/custom/numbers.ts
import { MemoryStore, type SplitSource, splitIdFrom } from "../../mod.ts";
import { serve } from "../../adapters/deno.ts";

type Range = { from: number; to: number };

const source: SplitSource<Range> = {
  fingerprint: () => "numbers-v1:0-10000",
  async plan() {
    const splits = [];
    for (let from = 0; from < 10_000; from += 1_000) {
      splits.push({ id: await splitIdFrom(["numbers", from]), descriptor: { from, to: from + 1_000 } });
    }
    return { splits, finality: "final" as const };
  },
  async run(lane) {
    let i = Number(lane.progress?.watermark ?? lane.descriptor.from);
    while (i < lane.descriptor.to && !lane.revokeSignal.aborted && !lane.signal.aborted) {
      const end = Math.min(i + 100, lane.descriptor.to); // one "batch" of records
      await lane.commit({ watermark: end }, { records: end - i });
      i = end;
    }
    if (i >= lane.descriptor.to) await lane.complete();
  },
  // Optional: lets idle workers take part of a running range (no straggler).
  // `run` reads lane.descriptor.to on every batch, so it stops where the cut
  // says; the cut starts at or after what it has committed.
  split(lane, { parts }) {
    const at = Number(lane.progress?.watermark ?? lane.descriptor.from);
    const step = Math.floor((lane.descriptor.to - at) / parts);
    if (step < 200) return undefined; // too little left to be worth a cut
    const ends = Array.from({ length: parts }, (_, k) => (k === parts - 1 ? lane.descriptor.to : at + step * (k + 1)));
    return {
      keep: { from: lane.descriptor.from, to: ends[0] },
      residuals: ends.slice(1).map((to, k) => ({ descriptor: { from: ends[k], to } })),
    };
  },
};

await serve({ store: new MemoryStore(), source, job: "numbers", port: 0 });
