/**
 * Request-driven mode: one invocation = one bounded slice of work. Each
 * slice joins with a fresh session, works until its time budget minus a
 * margin, drains cooperatively (tails committed, everything released),
 * leaves, and reports what it did. Nothing keeps running after it returns.
 *
 * @module
 */
import { SplitleaseError } from "../errors.ts";
import { checkBearer } from "../util/bearer.ts";
import { checkSliceOptions, type SliceOptions } from "../slice/slice_options.ts";
import { runSlice } from "../slice/slice_run.ts";

/**
 * A fetch handler for request-driven platforms (functions, edge workers,
 * cron-triggered containers): every `GET` or `POST` runs one
 * {@linkcode runSlice} and answers its {@linkcode SliceResult} as JSON (200;
 * 500 on `error`; 409 on `stalled`). The budget may be lowered per request
 * with the `x-splitlease-budget-ms` header or `?budgetMs=` (400 below the
 * smallest budget the options allow); any other method is answered 405.
 * With a `token`, every request (whatever its method) without it or with
 * another is refused 401, one whose `Authorization` header is not
 * `Bearer <token>` 400, as `POST /drain` does.
 *
 * @throws {SplitleaseError} `INVALID_CONFIG` at creation, naming every broken
 * rule, when the options cannot work (a budget too small for
 * `marginMs + 2 × leaseMs`, `drainDeadlineMs` below `opTimeoutMs`, ...).
 *
 * @example
 * ```ts
 * import { createSliceHandler } from "@splitlease/splitlease/serverless";
 * import { MemoryStore, type SplitSource } from "@splitlease/splitlease";
 * declare const source: SplitSource;
 * const handler = createSliceHandler({ store: new MemoryStore(), source, job: "demo", budgetMs: 25_000 });
 * // serve it with the platform's HTTP server, or: export default { fetch: handler }
 * ```
 */
export function createSliceHandler<D>(options: SliceOptions<D>): (request: Request) => Promise<Response> {
  const { budgetMs: maxBudget, minBudgetMs } = checkSliceOptions(options, undefined, "createSliceHandler");
  const json = (status: number, body: unknown) =>
    new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json; charset=utf-8" } });
  return async (request: Request): Promise<Response> => {
    // The bearer first, whatever the method: without the token nothing is answered but 401
    // (not even which methods a slice takes).
    if (options.token !== undefined) {
      const auth = checkBearer(request.headers.get("authorization"), options.token);
      if (!auth.ok) {
        const r = json(auth.status, { error: auth.error });
        r.headers.set("www-authenticate", auth.challenge);
        return r;
      }
    }
    if (request.method !== "GET" && request.method !== "POST") {
      const r = json(405, { error: `method ${request.method} not allowed` });
      r.headers.set("allow", "GET, POST");
      return r;
    }
    const raw = request.headers.get("x-splitlease-budget-ms") ?? new URL(request.url).searchParams.get("budgetMs");
    let budget = maxBudget;
    if (raw !== null) {
      const n = Number(raw);
      if (!Number.isInteger(n) || n <= 0) {
        return json(400, { error: `budget must be a positive integer (ms), got ${JSON.stringify(raw)}` });
      }
      if (n < minBudgetMs) {
        return json(400, {
          error: `budget must be at least marginMs + 2 × leaseMs (${minBudgetMs} ms) for these options, got ${n}`,
        });
      }
      budget = Math.min(n, maxBudget);
    }
    try {
      const result = await runSlice(options, budget);
      return json(result.outcome === "error" ? 500 : result.outcome === "stalled" ? 409 : 200, result);
    } catch (e) {
      if (e instanceof SplitleaseError && (e.code === "INVALID_ARGUMENT" || e.code === "INVALID_CONFIG")) {
        return json(400, { error: e.message });
      }
      return json(500, { outcome: "error", error: e instanceof Error ? e.message : String(e) });
    }
  };
}
