// Benchmark of the balancing function (docs/DESIGN.md, "Takeover, revocation and leader loss" and "Known limits"): planMoves at 10k and
// 100k splits over 100 members, four fleet shapes, and the 100k/10k time
// ratio (about 10 when the cost is near-linear; 100 would be quadratic).
//
//   node_modules/.bin/deno run -A bench/plan_moves_bench.ts
//
// Not a timed test: it reports numbers measured in one run; it fails only if
// a shape does not produce the moves it is meant to exercise.
import { type BalanceSplit, type BalanceView, planMoves } from "../testing.ts";

const MEMBERS = 100;
const LANES = 5000; // enough lanes everywhere: balancing, not lanes, is measured

function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

const members = (n: number) => Array.from({ length: n }, (_, k) => ({ instance: `worker-${k}`, maxInFlight: LANES }));
const split = (i: number, weight: number, owner: string): BalanceSplit => ({
  id: `split-${i.toString(36).padStart(6, "0")}`,
  weight,
  owner,
  status: "runnable",
});

/** Every member holds the same number of unit splits: a fixpoint, planMoves returns []. */
function settled(s: number): BalanceView {
  return { members: members(MEMBERS), splits: Array.from({ length: s }, (_, i) => split(i, 1, `worker-${i % MEMBERS}`)) };
}

/** 99 members share the splits evenly; worker-99 just joined with load 0. */
function joining(s: number): BalanceView {
  return {
    members: members(MEMBERS),
    splits: Array.from({ length: s }, (_, i) => split(i, 1, `worker-${i % (MEMBERS - 1)}`)),
  };
}

/** Heavy-tailed weights (Pareto-like, 1..~10^4) on a skewed placement (low ids hold more). */
function skewed(s: number): BalanceView {
  const rnd = lcg(42);
  return {
    members: members(MEMBERS),
    splits: Array.from({ length: s }, (_, i) => {
      const weight = Math.min(10_000, Math.floor(1 / Math.max(1e-4, rnd()) ** 1.2));
      const owner = `worker-${Math.floor(rnd() ** 2 * MEMBERS)}`;
      return split(i, weight, owner);
    }),
  };
}

/** Fractional weights (e.g. estimated MB) on a random placement: loads are summed in sorted order. */
function fractional(s: number): BalanceView {
  const rnd = lcg(7);
  return {
    members: members(MEMBERS),
    splits: Array.from({ length: s }, (_, i) => split(i, 0.1 + rnd() * 64, `worker-${Math.floor(rnd() * MEMBERS)}`)),
  };
}

function time(view: BalanceView): { ms: number; moves: number } {
  const config = { seed: "bench-job" };
  let moves = planMoves(view, config).length; // warm up
  planMoves(view, config);
  const runs: number[] = [];
  const deadline = performance.now() + 2000;
  for (let i = 0; i < 25 && (i < 5 || performance.now() < deadline); i++) {
    const t0 = performance.now();
    moves = planMoves(view, config).length;
    runs.push(performance.now() - t0);
  }
  runs.sort((a, b) => a - b);
  return { ms: runs[Math.floor(runs.length / 2)], moves };
}

const shapes: [string, (s: number) => BalanceView, (moves: number) => boolean][] = [
  ["settled fleet", settled, (m) => m === 0],
  ["one member joining", joining, (m) => m === 1],
  ["skewed weights", skewed, (m) => m > 0],
  ["fractional weights", fractional, (m) => m > 0],
];

console.log(`planMoves over ${MEMBERS} members (median of up to 25 runs after warm-up)\n`);
console.log("shape                  10k splits    100k splits   100k/10k   moves (10k / 100k)");
for (const [, make] of shapes) time(make(20_000)); // JIT warm-up across every shape first
let ok = true;
for (const [name, make, expected] of shapes) {
  const small = time(make(10_000));
  const large = time(make(100_000));
  if (!expected(small.moves) || !expected(large.moves)) ok = false;
  console.log(
    `${name.padEnd(20)} ${small.ms.toFixed(2).padStart(9)} ms ${large.ms.toFixed(2).padStart(10)} ms ${
      (large.ms / small.ms).toFixed(1).padStart(9)
    }   ${small.moves} / ${large.moves}`,
  );
  // A summary row for `npm run bench` (scripts/bench.mjs).
  console.log(`::result ${
    JSON.stringify({
      metric: `planMoves 100k ÷ 10k, ${name}`,
      value: `${small.ms.toFixed(2)} / ${large.ms.toFixed(2)} ms`,
      ratio: large.ms / small.ms,
      target: "≈ 10 (linear)",
    })
  }`);
}
if (!ok) {
  console.error("\na shape did not produce the expected number of moves");
  throw new Error("bench shape mismatch");
}
