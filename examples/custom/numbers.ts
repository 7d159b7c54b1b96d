// The README's custom source: sums ranges of numbers, one split per range.
// Run it: node_modules/.bin/deno run -A examples/custom/numbers.ts
import { MemoryStore, splitIdFrom, type SplitSource } from "../../mod.ts";
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
};

await serve({ store: new MemoryStore(), source, job: "numbers", port: 0 });
