/**
 * AWS Lambda adapter: a handler `(event, context) => ...` that runs one
 * bounded slice per invocation (join, work, drain, release, leave) within
 * the time the invocation has left (`context.getRemainingTimeInMillis()`),
 * minus a reserve for returning. Its parameter types are structural, so it
 * is assignable to `Handler` of `@types/aws-lambda` without depending on it.
 *
 * - Scheduled events (EventBridge Scheduler, an EventBridge rule) and direct
 *   invocations resolve to the {@linkcode SliceResult}; an `error` outcome
 *   throws, so Lambda counts the invocation as failed (and retries an
 *   asynchronous one).
 * - HTTP events (a function URL, API Gateway HTTP or REST API) get an HTTP
 *   response: the same JSON and status codes as `createSliceHandler`.
 *
 * @example
 * ```ts
 * import { createLambdaHandler } from "@splitlease/splitlease/lambda";
 * import { NatsStore } from "@splitlease/splitlease/nats";
 * import type { SplitSource } from "@splitlease/splitlease";
 * declare const source: SplitSource;
 * export const handler = createLambdaHandler({
 *   storeFactory: () => NatsStore.connect({ servers: ["wss://nats.example:443"], job: "backfill", opTimeoutMs: 2000 }),
 *   source,
 *   job: "backfill",
 *   opTimeoutMs: 2000,
 *   drainDeadlineMs: 5000,
 * });
 * ```
 *
 * @module
 */
import { SplitleaseError } from "../src/errors.ts";
import { checkBearer } from "../src/util/bearer.ts";
import { checkSliceOptions, type SliceOptions } from "../src/slice/slice_options.ts";
import { runSlice, type SliceResult } from "../src/slice/slice_run.ts";

export type { SliceOptions } from "../src/slice/slice_options.ts";
export type { SliceResult } from "../src/slice/slice_run.ts";

/**
 * The part of Lambda's context object the handler uses (a structural subset
 * of `Context` from `@types/aws-lambda`).
 *
 * @example
 * ```ts
 * import type { LambdaContext } from "@splitlease/splitlease/lambda";
 * const deadline = Date.now() + 30_000;
 * const context: LambdaContext = { awsRequestId: "local", getRemainingTimeInMillis: () => deadline - Date.now() };
 * ```
 */
export interface LambdaContext {
  /** Milliseconds left before Lambda stops the invocation. */
  getRemainingTimeInMillis(): number;
  /** The invocation's request id (logged with the slice). */
  awsRequestId?: string;
  /** The function's name (the default instance prefix). */
  functionName?: string;
}

/**
 * The response to an HTTP event (function URL or API Gateway).
 *
 * @example
 * ```ts
 * import type { LambdaHttpResponse } from "@splitlease/splitlease/lambda";
 * const r: LambdaHttpResponse = { statusCode: 200, headers: { "content-type": "application/json" }, body: "{}" };
 * ```
 */
export interface LambdaHttpResponse {
  /** HTTP status: 200, 409 (stalled), 500 (error), 400/401 (bad request). */
  statusCode: number;
  /** Response headers. */
  headers: Record<string, string>;
  /** The JSON body. */
  body: string;
}

/**
 * Options of {@linkcode createLambdaHandler}: slice options, where
 * `budgetMs` is an upper bound (default: none) on the time each invocation
 * has left.
 *
 * @example
 * ```ts
 * import type { LambdaSliceOptions } from "@splitlease/splitlease/lambda";
 * import { MemoryStore, type SplitSource } from "@splitlease/splitlease";
 * declare const source: SplitSource;
 * const options: LambdaSliceOptions<unknown> = { store: new MemoryStore(), source, job: "j", reserveMs: 1000 };
 * ```
 */
export interface LambdaSliceOptions<D = unknown> extends SliceOptions<D> {
  /** Time kept back from the remaining time for returning the result (default 500 ms). */
  reserveMs?: number;
}

/** An HTTP event's method and headers, if `event` is one (function URL, API Gateway v1 or v2). */
function httpRequestOf(event: unknown): { method: string; headers: Record<string, string> } | undefined {
  if (!event || typeof event !== "object") return undefined;
  const e = event as {
    httpMethod?: unknown;
    headers?: Record<string, unknown> | null;
    requestContext?: { http?: { method?: unknown } };
  };
  const method = typeof e.requestContext?.http?.method === "string"
    ? e.requestContext.http.method
    : typeof e.httpMethod === "string" && e.requestContext
    ? e.httpMethod
    : undefined;
  if (method === undefined) return undefined;
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(e.headers ?? {})) if (typeof v === "string") headers[k.toLowerCase()] = v;
  return { method: method.toUpperCase(), headers };
}

function http(statusCode: number, body: unknown): LambdaHttpResponse {
  return { statusCode, headers: { "content-type": "application/json; charset=utf-8" }, body: JSON.stringify(body) };
}

/**
 * Creates a Lambda handler that runs one slice per invocation. The options
 * are validated here (every rule but the budget, which each invocation
 * takes from its remaining time): invalid options throw `INVALID_CONFIG`
 * naming the rule when the module loads, not on every invocation. An
 * invocation whose remaining time is below what the options need
 * (`marginMs + 2 × leaseMs` plus `reserveMs`) throws `INVALID_CONFIG`
 * saying so: raise the function's timeout or lower `leaseMs`,
 * `drainDeadlineMs` and `opTimeoutMs`.
 *
 * @example
 * ```ts
 * import { createLambdaHandler } from "@splitlease/splitlease/lambda";
 * import { MemoryStore, type SplitSource } from "@splitlease/splitlease";
 * declare const source: SplitSource;
 * const handler = createLambdaHandler({ store: new MemoryStore(), source, job: "demo", opTimeoutMs: 500, drainDeadlineMs: 1000, leaseMs: 1000 });
 * const deadline = Date.now() + 5000;
 * const result = await handler({ source: "aws.events" }, { getRemainingTimeInMillis: () => deadline - Date.now() });
 * ```
 */
export function createLambdaHandler<D>(
  options: LambdaSliceOptions<D>,
): (event: unknown, context: LambdaContext) => Promise<SliceResult | LambdaHttpResponse> {
  const reserveMs = options.reserveMs ?? 500;
  if (!Number.isInteger(reserveMs) || reserveMs < 0) {
    throw new SplitleaseError("INVALID_CONFIG", `Invalid slice config: reserveMs must be a non-negative integer, got ${reserveMs}`);
  }
  const cap = options.budgetMs ?? Number.MAX_SAFE_INTEGER;
  const { minBudgetMs } = checkSliceOptions(options, cap);
  return async (event: unknown, context: LambdaContext): Promise<SliceResult | LambdaHttpResponse> => {
    const request = httpRequestOf(event);
    if (request && options.token !== undefined) {
      const auth = checkBearer(request.headers["authorization"], options.token);
      if (!auth.ok) {
        const r = http(auth.status, { error: auth.error });
        r.headers["www-authenticate"] = auth.challenge;
        return r;
      }
    }
    // As the fetch handler: an HTTP event of another method runs no slice (after the bearer check).
    if (request && request.method !== "GET" && request.method !== "POST") {
      const r = http(405, { error: `method ${request.method} not allowed` });
      r.headers["allow"] = "GET, POST";
      return r;
    }
    const remaining = Math.floor(context.getRemainingTimeInMillis());
    const budgetMs = Math.min(cap, remaining - reserveMs);
    if (budgetMs < minBudgetMs) {
      throw new SplitleaseError(
        "INVALID_CONFIG",
        `Invalid slice config: the invocation has ${remaining} ms left, but a slice with these options needs at least ` +
          `marginMs + 2 × leaseMs + reserveMs (${minBudgetMs} + ${reserveMs} = ${minBudgetMs + reserveMs} ms): ` +
          "raise the function's timeout or lower leaseMs, drainDeadlineMs and opTimeoutMs",
      );
    }
    const result = await runSlice(
      { ...options, instancePrefix: options.instancePrefix ?? "lambda", runtime: options.runtime ?? "aws-lambda" },
      budgetMs,
    );
    if (request) {
      return http(result.outcome === "error" ? 500 : result.outcome === "stalled" ? 409 : 200, result);
    }
    // Fail the invocation so Lambda counts (and, when asynchronous, retries) it.
    if (result.outcome === "error") throw new Error(`Slice ${result.instance} failed: ${result.error}`, { cause: result });
    return result;
  };
}
