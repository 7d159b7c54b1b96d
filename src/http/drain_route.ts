/**
 * `POST /drain`: stop taking work and hand every split over within a
 * deadline (the body may give `deadlineMs`), behind the drain token.
 *
 * @module
 */
import type { Hono, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { Coordinator } from "../coordinator/types.ts";
import type { Worker } from "../runtime/worker_types.ts";
import { MAX_TIMER_MS } from "../util/timers.ts";

/** Largest `POST /drain` body read (bytes); a larger one is refused with 413 before it is read whole. */
const DRAIN_BODY_LIMIT = 4096;

/**
 * The body limit of the routes that stop work: 413 JSON past
 * {@linkcode DRAIN_BODY_LIMIT} bytes, before the body is read whole.
 *
 * @example
 * ```ts ignore
 * app.post("/drain", guard, drainBodyLimit(), handler);
 * ```
 */
export function drainBodyLimit(): MiddlewareHandler {
  return bodyLimit({
    maxSize: DRAIN_BODY_LIMIT,
    onError: (c) => c.json({ error: `body is larger than ${DRAIN_BODY_LIMIT} bytes` }, 413),
  });
}

function problem(status: number, error: string): Response {
  return new Response(JSON.stringify({ error }), {
    status,
    headers: { "content-type": "application/json; charset=utf-8" },
  });
}

/**
 * The deadline a `POST /drain` body asks for: `undefined` for an empty body
 * or one without `deadlineMs`, else the integer it gives; a 400 response
 * naming the problem for anything else (not JSON, not an object, another
 * field, a deadline that is not an integer from 0 to the longest timer).
 *
 * @example
 * ```ts ignore
 * parseDrainBody('{"deadlineMs": 5000}'); // { deadlineMs: 5000 }
 * ```
 */
export function parseDrainBody(text: string): { deadlineMs?: number } | Response {
  if (text.trim() === "") return {};
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return problem(400, "body must be JSON (or empty)");
  }
  if (!body || typeof body !== "object" || Array.isArray(body)) return problem(400, "body must be a JSON object");
  const extra = Object.keys(body).filter((k) => k !== "deadlineMs");
  if (extra.length) return problem(400, `unknown field(s): ${extra.join(", ")}`);
  const d = (body as { deadlineMs?: unknown }).deadlineMs;
  if (d === undefined) return {};
  if (typeof d !== "number" || !Number.isInteger(d) || d < 0 || d > MAX_TIMER_MS) {
    // Above 2^31 - 1 ms a timer overflows and fires at once: refuse, never clamp silently.
    return problem(400, `deadlineMs must be an integer from 0 to ${MAX_TIMER_MS} (ms), got ${JSON.stringify(d) ?? String(d)}`);
  }
  return { deadlineMs: d };
}

/** What the drain route stops and how. */
export interface DrainRouteOptions {
  coordinator: Coordinator;
  worker: Worker | undefined;
  /** Who may call it (the drain token). */
  guard: MiddlewareHandler;
  bodyLimit: MiddlewareHandler;
  /** The deadline when the body gives none. */
  deadlineMs: number | undefined;
  /** Runs the drain (serve's shutdown); else the worker's shutdown, else the coordinator's drain. */
  onDrain?: (deadlineMs: number | undefined) => void;
  /** Answers 405 on a path for other methods. */
  allow: (path: string, method: "GET" | "POST") => void;
}

/**
 * Adds `POST /drain` to `app`: 202 with the deadline (and whether a drain
 * was already under way), the drain started once.
 *
 * @example
 * ```ts ignore
 * mountDrainRoute(app, { coordinator, worker, guard, bodyLimit: drainBodyLimit(), deadlineMs: 10_000, allow });
 * ```
 */
export function mountDrainRoute(app: Hono, o: DrainRouteOptions): void {
  const { coordinator, worker } = o;
  app.post("/drain", o.guard, o.bodyLimit, async (c) => {
    const body = parseDrainBody(await c.req.text());
    if (body instanceof Response) return body;
    const deadlineMs = body.deadlineMs ?? o.deadlineMs;
    const already = worker ? worker.draining || worker.finished : coordinator.status().state !== "running";
    if (!already) {
      if (o.onDrain) o.onDrain(deadlineMs);
      else if (worker) void worker.shutdown({ deadlineMs, reason: "POST /drain" });
      else void coordinator.drain().catch(() => {});
    }
    return c.json({ draining: true, alreadyDraining: already, deadlineMs: deadlineMs ?? null }, 202);
  });
  o.allow("/drain", "POST");
}
