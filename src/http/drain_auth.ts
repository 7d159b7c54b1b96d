/**
 * Who may `POST /drain` (and the operator actions behind the same token):
 * the check of the options at start, and the middleware (the bearer check
 * itself is `bearer.ts`, shared with the slice handlers).
 *
 * @module
 */
import type { MiddlewareHandler } from "hono";
import { SplitleaseError } from "../errors.ts";
import { bearerTokenIssue, checkBearer } from "../util/bearer.ts";

/**
 * Who may call the routes that stop work (`POST /drain` and the operator
 * actions): a bearer token, or nobody's permission on a private address.
 *
 * @example
 * ```ts
 * import type { DrainAuthOptions } from "@splitlease/splitlease/host";
 * const auth: DrainAuthOptions = { drainToken: "s3cret" };
 * ```
 */
export interface DrainAuthOptions {
  /**
   * Bearer token required by `POST /drain` (RFC 6750 characters:
   * `[A-Za-z0-9._~+/-]`, optionally ending in `=`). Without one the route
   * answers 403 unless `drainOpen` is set.
   */
  drainToken?: string;
  /**
   * Accept `POST /drain` without a token (default `false`: without a
   * `drainToken` the route is refused with 403). Only for an app bound to a
   * private address; it cannot be combined with `drainToken`.
   */
  drainOpen?: boolean;
}

/**
 * Throws `INVALID_CONFIG` unless the drain options are usable: a token of
 * RFC 6750 characters (a Bearer header cannot carry others), and not both a
 * token and `drainOpen`. `serve` calls it before joining.
 */
export function checkDrainOptions(options: DrainAuthOptions): void {
  const token = options.drainToken;
  if (token !== undefined && options.drainOpen) {
    throw new SplitleaseError("INVALID_CONFIG", "drainOpen and drainToken exclude each other; give one");
  }
  const issue = token === undefined ? undefined : bearerTokenIssue("drainToken", token);
  if (issue) throw new SplitleaseError("INVALID_CONFIG", issue);
}

/**
 * Who may `POST /drain`: the bearer token when one is configured (compared
 * in constant time), everybody with `drainOpen`, nobody otherwise. A drain
 * stops the worker, so an unconfigured route is closed rather than open.
 */
export function drainGuardOf(options: DrainAuthOptions): MiddlewareHandler {
  checkDrainOptions(options);
  const token = options.drainToken;
  if (token !== undefined) {
    return async (c, next) => {
      const auth = checkBearer(c.req.header("authorization"), token);
      if (!auth.ok) return c.json({ error: auth.error }, auth.status, { "WWW-Authenticate": auth.challenge });
      await next();
    };
  }
  if (options.drainOpen === true) return (_c, next) => next();
  return (c) =>
    Promise.resolve(c.json({
      error: `${c.req.method} ${new URL(c.req.url).pathname} is disabled: no drainToken is configured (set drainToken, ` +
        "or drainOpen: true to accept drains and operator actions without a token on a private network)",
    }, 403));
}
