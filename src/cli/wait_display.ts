/**
 * What `splitlease wait` prints while it waits and when it ends (pure
 * formatting, and a small display that writes through the function it is
 * given): on a terminal one line redrawn in place — a bar, the splits and
 * records done, the rate, the ETA, quarantined splits and whether the job
 * will stall — and, when stdout is not a terminal (a CI log, a pipe), the
 * same facts as a plain line every interval, each with its time.
 *
 * @module
 */
import type { FleetView } from "../fleet/types.ts";
import type { WaitResult } from "../fleet/wait.ts";
import { duration } from "./format.ts";

const num = (n: number) => Math.round(n).toLocaleString("en-US");
const iso = (ms: number) => new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");

/** The fraction of the job's weight done (completed, plus what running splits' estimates count done), 0-1. */
export function fractionDone(v: FleetView): number {
  const c = v.counts;
  if (c.weight <= 0) return c.total > 0 && c.runnable === 0 ? 1 : 0;
  return Math.min(1, (c.completedWeight + v.rate.partialWeight) / c.weight);
}

/**
 * The facts of one progress line, in order: percent, splits, records,
 * rate, ETA, quarantined (and the stall they bring), without a bar.
 *
 * @example
 * ```ts ignore
 * progressFacts(view).join(" · "); // "62% · 124/200 splits · 1,234,567 records · 31.0 splits/min · ETA 2 min 26 s"
 * ```
 */
export function progressFacts(v: FleetView): string[] {
  const c = v.counts, r = v.rate, s = v.summary;
  const parts = [`${Math.floor(100 * fractionDone(v))}%`, `${num(c.completed)}/${num(c.total)} splits`];
  if (v.plan === null) parts[1] = "waiting for the first leader";
  else if (v.plan.generation === 0) parts.push("planning");
  // Paused: said early, before the rate and ETA that no longer hold.
  if (v.plan?.result.paused) parts.push(`PAUSED${v.plan.result.paused.reason ? ` (${v.plan.result.paused.reason})` : ""}`);
  if (c.cancelled > 0) parts.push(`${num(c.cancelled)} cancelled`);
  if (s.splitsWithRecords > 0) parts.push(`${num(s.records)} records`);
  if (r.perMinute !== null) parts.push(`${r.perMinute.toFixed(1)} splits/min`);
  if (v.plan?.result.paused) { /* no ETA while nothing runs */ }
  else if (r.eta.state === "estimated" && r.eta.inMs !== null) parts.push(`ETA ${duration(r.eta.inMs)}`);
  else if (r.eta.state === "unknown" && c.runnable > 0) parts.push("ETA unknown");
  if (c.quarantined > 0) {
    parts.push(
      `${num(c.quarantined)} quarantined` + (c.permanent ? ` (${num(c.permanent)} permanent)` : "") +
        (r.eta.state === "stalled" ? ": stalled" : r.eta.thenStalled ? ", then stalled" : ""),
    );
  }
  return parts;
}

/**
 * One line of a terminal: a bar of `barWidth` cells and the facts, cut to
 * `columns - 1` characters so that it never wraps (a wrapped line cannot be
 * redrawn in place).
 *
 * @example
 * ```ts ignore
 * barLine(view, 100); // "[█████████████░░░░░░░░░]  62% · 124/200 splits · …"
 * ```
 */
export function barLine(v: FleetView, columns: number, barWidth = 24): string {
  const f = fractionDone(v);
  const full = Math.round(f * barWidth);
  const [pct, ...rest] = progressFacts(v);
  const line = `[${"█".repeat(full)}${"░".repeat(barWidth - full)}] ${pct.padStart(4)} · ${rest.join(" · ")}`;
  const max = Math.max(10, columns - 1);
  return line.length <= max ? line : line.slice(0, max - 1) + "…";
}

/** One plain line for a log: its time, the job and the facts. */
export function plainLine(job: string, v: FleetView): string {
  return `${iso(v.at)} ${job}: ${progressFacts(v).join(" · ")}`;
}

/**
 * The sentence `wait` ends with: how the job ended (or why the wait did),
 * with what it skipped and, when a final view was read, what it did; of a
 * sharded job, the shard whose planning failed, or the stalled shards and
 * their quarantined splits (`stalled`).
 *
 * @example
 * ```ts ignore
 * endLine("backfill", { kind: "timeout", result: null }, undefined, 8); // "backfill: no outcome within the timeout; the job runs on (exit 8)"
 * ```
 */
export function endLine(
  job: string,
  w: WaitResult,
  v: FleetView | undefined,
  code: number,
  stalled?: readonly StalledShard[],
): string {
  let text: string;
  if (w.kind === "outcome") {
    const o = w.outcome;
    // A sharded job's outcome names the shard it came from (a failed plan), or the shards that stalled and their splits.
    const failedIn = o.kind === "planFailed" ? w.shards?.find((s) => s.outcome.kind === "planFailed") : undefined;
    if (o.kind === "planFailed") text = `planning failed${failedIn ? ` in shard ${failedIn.index} (${failedIn.job})` : ""} after ${o.attempts} attempt(s): ${o.error}`;
    else {
      const skipped = o.cancelled ? `, ${num(o.cancelled)} cancelled (skipped)` : "";
      const permanent = o.kind === "stalled" && o.permanent ? ` (${num(o.permanent)} permanent)` : "";
      const where = o.kind === "stalled" && stalled?.length
        ? ` (${stalled.map((s) => `shard ${s.index} (${s.job}): ${s.splits.join(", ")}${s.quarantined > s.splits.length ? ", …" : ""}`).join("; ")})`
        : "";
      text = o.kind === "allComplete"
        ? `complete: ${num(o.completed)} split(s) completed${skipped}`
        : `stalled: ${num(o.completed)} split(s) completed, ${num(o.quarantined)} quarantined${permanent}${skipped}${where}; ` +
          "see them with splitlease splits --state quarantined";
      if (v && v.summary.splitsWithRecords > 0) text += ` · ${num(v.summary.records)} records`;
      if (v && v.summary.tookMs !== null && o.kind === "allComplete") text += ` · took ${duration(v.summary.tookMs)}`;
    }
  } else if (w.kind === "deleted") text = "the job was deleted while waiting";
  else if (w.kind === "unreachable") text = `the store did not answer: ${w.error}`;
  else text = "no outcome within the timeout; the job runs on";
  return `${job}: ${text} (exit ${code})`;
}

/** A stalled shard of a sharded job, for {@linkcode endLine}: which, and (some of) its quarantined splits. */
export interface StalledShard {
  /** Which shard. */
  index: number;
  /** The job name its records are under. */
  job: string;
  /** How many splits it has quarantined. */
  quarantined: number;
  /** The first few of them, by id. */
  splits: string[];
}

/** Where a {@linkcode WaitDisplay} writes, and whether it is a terminal. */
export interface WaitOutput {
  /** A terminal (stdout is a TTY): one line redrawn in place. */
  tty: boolean;
  /** Its width in characters (terminals only; default 80). */
  columns?: number;
  /** Writes text as is (no newline added). */
  write(text: string): void;
}

/**
 * The live part of `wait`'s output: on a terminal, each view redraws the
 * one line; otherwise each view is a line of its own (the caller spaces
 * them by its interval).
 *
 * @example
 * ```ts ignore
 * const d = new WaitDisplay("backfill", { tty: true, columns: 100, write: (t) => terminal.write(t) });
 * d.show(view);
 * d.end("backfill: complete: 200 split(s) completed (exit 0)");
 * ```
 */
export class WaitDisplay {
  readonly #job: string;
  readonly #out: WaitOutput;
  #drawn = false;

  constructor(job: string, out: WaitOutput) {
    this.#job = job;
    this.#out = out;
  }

  /** Shows a fresh view. */
  show(v: FleetView): void {
    if (this.#out.tty) {
      // Carriage return, the line, then erase whatever a longer line left.
      this.#out.write(`\r${barLine(v, this.#out.columns ?? 80)}\x1b[K`);
      this.#drawn = true;
    } else this.#out.write(plainLine(this.#job, v) + "\n");
  }

  /** Ends the live line (a terminal keeps its last bar) and writes `text` on a line of its own. */
  end(text: string): void {
    if (this.#drawn) this.#out.write("\n");
    this.#drawn = false;
    this.#out.write(text + "\n");
  }
}
