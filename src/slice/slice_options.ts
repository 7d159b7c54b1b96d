/**
 * The options of a slice (`runSlice`, `createSliceHandler`, the Lambda
 * handler) and the check that refuses, before anything connects, options
 * under which no slice could work.
 *
 * @module
 */
import { SplitleaseError } from "../errors.ts";
import { parseCoordinatorConfig, pickTunables, SLICE_DEFAULT_BUDGET_MS, SLICE_TIMING_DEFAULTS } from "../coordinator/config.ts";
import { sliceWorkWindowMs } from "../coordinator/timings.ts";
import { HOST_SCHEMA, type HostOptions } from "../host/host_options.ts";
import type * as z from "zod";
import { bearerTokenIssue } from "../util/bearer.ts";
import { durationOption, type Equal, givenOption, parseOptions } from "../util/option_schema.ts";

/**
 * Options of {@linkcode runSlice} and {@linkcode createSliceHandler}.
 *
 * @example
 * ```ts
 * import { createSliceHandler, type SliceOptions } from "@splitlease/splitlease/serverless";
 * import { MemoryStore, type SplitSource } from "@splitlease/splitlease";
 * declare const source: SplitSource;
 * const options: SliceOptions<unknown> = { store: new MemoryStore(), source, job: "backfill", budgetMs: 20_000 };
 * const handler = createSliceHandler(options);
 * ```
 */
export interface SliceOptions<D = unknown> extends HostOptions<D> {
  /** Instance id prefix; each invocation is `<prefix>-<random>` (default `fn`). */
  instancePrefix?: string;
  /**
   * Total time budget of an invocation in ms (default 30000). Must be at
   * least `marginMs + 2 × leaseMs`: the drain margin plus a work window that
   * holds two leases (17000 with the slice defaults), so that one invocation
   * can always take over from one that was cut off (see
   * {@linkcode checkSliceOptions}).
   */
  budgetMs?: number;
  /**
   * Time reserved at the end of the budget for the drain, release and leave
   * (default `drainDeadlineMs + 1000`). Must exceed `drainDeadlineMs`, which
   * must be at least `opTimeoutMs`.
   */
  marginMs?: number;
  /**
   * Bearer token required by the fetch handler and the Lambda handler's HTTP
   * events (RFC 6750 characters: `[A-Za-z0-9._~+/-]`, optionally ending in
   * `=`).
   */
  token?: string;
  /** Runtime name for the member record (default `serverless`). */
  runtime?: string;
}

/**
 * Every option a slice takes and its check: a host's (the coordinator
 * tunables, checked with the slice's timing by {@linkcode checkSliceOptions};
 * what it hands its worker, with the worker's checks) and its own. Anything
 * else is a typo.
 */
const SLICE_SCHEMA = HOST_SCHEMA.extend({
  instancePrefix: givenOption<string>().optional(),
  budgetMs: durationOption().optional(),
  marginMs: durationOption().optional(),
  token: givenOption<string>().optional(),
  runtime: givenOption<string>().optional(),
});
const _sliceOptionsAreTheSchema: Equal<keyof SliceOptions<unknown>, keyof z.input<typeof SLICE_SCHEMA>> = true;

/** A slice's timing after defaults (see {@linkcode checkSliceOptions}). */
export interface SliceTiming {
  /** The invocation's whole budget. */
  budgetMs: number;
  /** The end of the budget kept for the drain, release and leave. */
  marginMs: number;
  /** How long lanes may take to stop on their own once the slice drains, before they are aborted. */
  drainDeadlineMs: number;
  /** Timeout of one store operation. */
  opTimeoutMs: number;
  /** Lease of the invocation's member record. */
  leaseMs: number;
  /** The smallest budget these options allow: `marginMs + 2 × leaseMs`. */
  minBudgetMs: number;
}

const PREFIX = /^[A-Za-z0-9_-]{1,100}$/;

/**
 * Validates slice options with `budgetMs` (default `options.budgetMs`, else
 * 30000) and returns the timing they imply, with
 * {@linkcode SLICE_TIMING_DEFAULTS} for the lease, op timeout and drain
 * deadline left out. Checks every rule the slice and its coordinator would
 * otherwise break at run time — the coordinator tunables
 * (`leaseMs >= 2 × opTimeoutMs`, `drainDeadlineMs >= opTimeoutMs`, ...),
 * `marginMs > drainDeadlineMs`, the job and instance prefix, the token, a store — and
 * `budgetMs >= marginMs + 2 × leaseMs`, and throws one `INVALID_CONFIG`
 * error naming each broken rule. `createSliceHandler` and `runSlice` call it
 * before doing anything, so a handler that cannot work fails when it is
 * created, not with an error on every request.
 *
 * Why two leases: an invocation stops taking work (and so stops electing
 * itself) at the end of its work window, `budgetMs − marginMs`. A leader
 * record left by an invocation that was cut off is judged dead only a lease
 * after a member first sees it unmoved, and the splits of a cut-off
 * invocation only a lease after the new leader first sees their owner's
 * record. With a shorter window no later invocation can ever see both go
 * silent, and the job stops for good.
 *
 * @example
 * ```ts
 * import { checkSliceOptions } from "./slice_options.ts";
 * import { MemoryStore, type SplitSource } from "@splitlease/splitlease";
 * declare const source: SplitSource;
 * const t = checkSliceOptions({ store: new MemoryStore(), source, job: "j", budgetMs: 8000, opTimeoutMs: 1000, leaseMs: 2000, drainDeadlineMs: 2000 });
 * console.log(t.marginMs, t.minBudgetMs); // 3000 7000
 * ```
 */
export function checkSliceOptions<D>(
  options: SliceOptions<D>,
  budgetMs: number = options.budgetMs ?? SLICE_DEFAULT_BUDGET_MS,
  where = "slice",
): SliceTiming {
  parseOptions(SLICE_SCHEMA, options, where);
  const rules: string[] = [];
  const opTimeoutMs = options.opTimeoutMs ?? SLICE_TIMING_DEFAULTS.opTimeoutMs;
  const leaseMs = options.leaseMs ?? SLICE_TIMING_DEFAULTS.leaseMs;
  const drainDeadlineMs = options.drainDeadlineMs ?? SLICE_TIMING_DEFAULTS.drainDeadlineMs;
  const marginMs = options.marginMs ?? drainDeadlineMs + 1000;
  const minBudgetMs = marginMs + sliceWorkWindowMs(leaseMs);
  if (!Number.isInteger(budgetMs) || budgetMs <= 0) {
    rules.push(`budgetMs must be a positive integer (ms), got ${budgetMs}`);
  } else if (budgetMs < minBudgetMs) {
    rules.push(
      `budgetMs must be at least marginMs + 2 × leaseMs (${marginMs} + 2 × ${leaseMs} = ${minBudgetMs}), got ${budgetMs}: ` +
        "the end of the budget is kept for the drain, and the work window before it must hold two leases, or no " +
        "invocation can take over from one that was cut off; lower leaseMs (and opTimeoutMs, drainDeadlineMs) or raise the budget",
    );
  }
  if (!Number.isInteger(marginMs) || marginMs <= drainDeadlineMs) {
    rules.push(
      `marginMs must exceed drainDeadlineMs (${drainDeadlineMs}) to leave time to release and leave after the drain, got ${marginMs}`,
    );
  }
  const prefix = options.instancePrefix ?? "fn";
  if (!PREFIX.test(prefix)) {
    rules.push(`instancePrefix must be 1-100 characters of [A-Za-z0-9_-], got ${JSON.stringify(prefix)}`);
  }
  const tokenIssue = options.token === undefined ? undefined : bearerTokenIssue("token", options.token);
  if (tokenIssue) rules.push(tokenIssue);
  if (!options.store && !options.storeFactory && !options.stores) {
    rules.push(typeof options.shards === "number" && options.shards > 1 ? "a slice of a sharded job needs a storeFactory or stores" : "a slice needs a store or a storeFactory");
  }
  try {
    parseCoordinatorConfig({
      ...pickTunables(options),
      opTimeoutMs,
      leaseMs,
      drainDeadlineMs,
      job: options.job,
      instance: `${PREFIX.test(prefix) ? prefix : "fn"}-0000000000`,
      fingerprint: "checked-at-join",
    });
  } catch (e) {
    if (!(e instanceof SplitleaseError)) throw e;
    rules.push(e.message.replace(/^Invalid coordinator config: /, ""));
  }
  if (rules.length) throw new SplitleaseError("INVALID_CONFIG", `Invalid slice config: ${rules.join("; ")}`);
  return { budgetMs, marginMs, drainDeadlineMs, opTimeoutMs, leaseMs, minBudgetMs };
}
