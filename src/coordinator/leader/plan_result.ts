/**
 * What a planner run returned, checked before anything of it is seeded or
 * published: a plan record whose `finality` the job's own schema refuses
 * would be "repaired" by the leader that just published it, and planned
 * again, for ever (measured: about 250 plan writes a second in an idle job
 * whose planner answered `{ splits, final: true }`).
 *
 * @module
 */
import { SplitleaseError } from "../../errors.ts";
import type { PlanResult } from "../types.ts";

/** A value for a message: short, and `undefined` named as such. */
function shown(v: unknown): string {
  if (v === undefined) return "undefined";
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

/**
 * The planner's result if it is one (`{ splits, finality, cursor?, more? }`),
 * else an `INVALID_ARGUMENT` error naming the field, the value and the fix;
 * a failed planner run like a throw (retried with backoff, then
 * `planFailed` after `planAttempts`).
 *
 * @example
 * ```ts
 * import { checkPlanResult } from "./plan_result.ts";
 * const r = checkPlanResult({ splits: [], finality: "final" });
 * console.log(r.finality); // "final"
 * ```
 */
export function checkPlanResult(result: unknown): PlanResult {
  if (typeof result !== "object" || result === null) {
    throw new SplitleaseError("INVALID_ARGUMENT", `The planner returned ${shown(result)}, not a plan: return { splits, finality: "final" | "open" }`);
  }
  const r = result as Record<string, unknown>;
  if (r.finality !== "final" && r.finality !== "open") {
    const hint = "final" in r ? ` (it has \`final\`: write finality: "${r.final ? "final" : "open"}")` : "";
    throw new SplitleaseError(
      "INVALID_ARGUMENT",
      `The planner returned finality ${shown(r.finality)}${hint}: it must be "final" (the enumeration is complete) or "open" (plan again later); the plan was not published`,
    );
  }
  const splits = r.splits as { [Symbol.iterator]?: unknown; [Symbol.asyncIterator]?: unknown } | null | undefined;
  if (typeof splits !== "object" || splits === null || (typeof splits[Symbol.iterator] !== "function" && typeof splits[Symbol.asyncIterator] !== "function")) {
    throw new SplitleaseError(
      "INVALID_ARGUMENT",
      `The planner returned splits ${shown(r.splits)}: it must be an array or an (async) iterable of { id, descriptor, weight? }; the plan was not published`,
    );
  }
  if (r.more !== undefined && typeof r.more !== "boolean") {
    throw new SplitleaseError(
      "INVALID_ARGUMENT",
      `The planner returned more ${shown(r.more)}: it must be true (call again at once with this run's cursor) or absent; the plan was not published`,
    );
  }
  if (r.more === true && r.finality !== "open") {
    throw new SplitleaseError(
      "INVALID_ARGUMENT",
      'The planner returned more: true with finality "final": a listing that goes on is "open" until its last part, which says "final" (without more); the plan was not published',
    );
  }
  return result as PlanResult;
}
