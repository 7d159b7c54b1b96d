/**
 * The 405 answer of a route asked with another method.
 *
 * @module
 */
import type { Hono } from "hono";

/**
 * Answers 405 (JSON, with `Allow`) on `path` for every method but `method`.
 * Register it after the route's own handler: it is reached only when the
 * method did not match.
 *
 * @example
 * ```ts ignore
 * app.get("/healthz", handler);
 * allowOnly(app, "/healthz", "GET"); // POST /healthz answers 405, Allow: GET, HEAD
 * ```
 */
export function allowOnly(app: Hono, path: string, method: "GET" | "POST"): void {
  app.all(path, (c) => {
    const m = c.req.method;
    return new Response(JSON.stringify({ error: `method ${m} not allowed on ${path}`, allow: [method] }), {
      status: 405,
      headers: {
        "content-type": "application/json; charset=utf-8",
        allow: method === "GET" ? "GET, HEAD" : method,
      },
    });
  });
}
