/**
 * Shared by the serverless platform tests: the job every platform runs (the
 * examples' numbers source, sized to need several short invocations), the
 * esbuild step, and the no-loss check over every invocation's summary.
 *
 * @module
 */
import assert from "node:assert/strict";
import { runCmd } from "../helpers/cmd.ts";

/** Repository root (with a trailing slash). */
export const root: string = new URL("../../", import.meta.url).pathname;
/** A tool from node_modules/.bin. */
export const bin = (n: string): string => `${root}node_modules/.bin/${n}`;

/**
 * Every test invocation has a budget of {@linkcode BUDGET_MS}: a work window
 * (budget − margin; on Lambda also less the handler's 500 ms reserve) of
 * 4.5–5 s, more than two leases (2 × 2000 ms). A shorter window never
 * recovers from one unlucky invocation: an invocation stops taking work (and
 * so never elects itself) at the end of its window, a leader record left by
 * an invocation cut off mid-resign is judged dead only a lease after a member
 * first sees it, and splits left by a cut-off invocation only a lease after
 * the new leader first sees their owner's record. (Seen with 1–1.5 s windows
 * and a 2 s lease: twelve invocations in a row, none able to lead.)
 */
export const BUDGET_MS = 7000;

/**
 * 8 splits × 6000 records, 20 records per 20 ms batch: at least 6 s of work
 * per split, longer than any test invocation's work window (at most 5 s), so
 * every split is released by one invocation and finished by a later one
 * whatever the machine's speed.
 */
export const SPLITS = 8;
export const RECORDS = 6000;

/** Environment of the examples (examples/serverless/config.ts) for a job on `natsUrl`. */
export function jobEnv(natsUrl: string, job: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    NATS_URL: natsUrl,
    JOB: job,
    SPLITS: String(SPLITS),
    RECORDS: String(RECORDS),
    BATCH_MS: "20",
    // Short timeouts: 2 s margin (drain deadline + 1 s), and the smallest
    // budget these allow is margin + 2 × leaseMs = 6 s. The op timeout is not shorter than 1 s: a
    // cold process on a loaded CI machine answered its first read in more
    // than 500 ms (an invocation failed with STORE_UNAVAILABLE).
    OP_TIMEOUT_MS: "1000",
    DRAIN_DEADLINE_MS: "1000",
    // Under half a work window (see BUDGET_MS), and the least 2 × opTimeoutMs allows.
    LEASE_MS: "2000",
    ...extra,
  };
}

/** Bundles `entry` with esbuild into `outfile` (paths relative to the root). */
export async function bundle(entry: string, outfile: string, args: string[]): Promise<void> {
  await runCmd(bin("esbuild"), [entry, "--bundle", "--format=esm", "--log-level=warning", `--outfile=${outfile}`, ...args], {
    cwd: root,
    timeoutMs: 60_000,
    what: `esbuild of ${entry}`,
  });
}

/** The fields of a slice summary the checks read. */
export interface Slice {
  instance: string;
  outcome: string;
  recordsCommitted: number;
  completed: number;
  released: number;
  lost: Record<string, number>;
  forced: boolean;
  durationMs: number;
}

/**
 * Every record of the job committed exactly once over all invocations (none
 * lost, none replayed: each commit reports the records since the previous
 * watermark), the job needed several invocations, splits were handed from
 * one to the next, and no lane was lost or forced.
 */
export function assertNoLoss(slices: Slice[], platform: string): void {
  const sum = (f: (s: Slice) => number) => slices.reduce((n, s) => n + f(s), 0);
  const summary = () => "\n" + slices.map((s) => JSON.stringify(s)).join("\n");
  assert.ok(slices.length >= 2, `${platform}: the job took several invocations (${slices.length})${summary()}`);
  assert.ok(slices.some((s) => s.outcome === "complete"), `${platform}: an invocation saw the job complete${summary()}`);
  assert.equal(sum((s) => s.recordsCommitted), SPLITS * RECORDS, `${platform}: every record committed exactly once${summary()}`);
  assert.equal(sum((s) => s.completed), SPLITS, `${platform}: every split completed once`);
  assert.ok(sum((s) => s.released) > 0, `${platform}: unfinished splits were handed to later invocations`);
  for (const s of slices) {
    assert.notEqual(s.outcome, "error", `${platform}: ${s.instance} failed`);
    assert.deepEqual(s.lost, {}, `${platform}: ${s.instance} lost no lane`);
    assert.equal(s.forced, false, `${platform}: ${s.instance} drained cooperatively`);
  }
}
