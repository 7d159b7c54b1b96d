/**
 * The bearer-token check of every route that stops or starts work
 * (`POST /drain` and the operator actions, the slice fetch handler, the
 * Lambda handler's HTTP events): an `Authorization: Bearer <token>` header
 * (RFC 6750) compared in constant time, and the check of a configured token.
 *
 * @module
 */
import { timingSafeEqual } from "./timing_safe_equal.ts";

/**
 * What {@linkcode checkBearer} found: a match, or the answer to give
 * (401 missing or wrong, 400 malformed) with its message and
 * `WWW-Authenticate` challenge.
 */
export type BearerCheck =
  | { ok: true }
  | { ok: false; status: 400 | 401; error: string; challenge: string };

/** RFC 6750 token68: the only tokens a Bearer header can carry. */
const TOKEN68 = /^[A-Za-z0-9._~+/-]+=*$/;
const CHALLENGE = 'Bearer realm="splitlease"';

/**
 * Checks an `Authorization` header against `token`: missing (401), not
 * `Bearer <token68>` (400, `invalid_request`), another token (401,
 * `invalid_token`, found without revealing where it differs), or a match.
 *
 * @example
 * ```ts
 * import { checkBearer } from "./bearer.ts";
 * checkBearer("Bearer s3cret", "s3cret"); // { ok: true }
 * checkBearer(null, "s3cret").ok; // false (401, "missing bearer token")
 * ```
 */
export function checkBearer(authorization: string | null | undefined, token: string): BearerCheck {
  // Fetch headers arrive trimmed; a Lambda event's are as sent.
  const header = authorization?.trim() ?? "";
  if (header === "") return { ok: false, status: 401, error: "missing bearer token", challenge: CHALLENGE };
  const given = /^bearer /i.test(header) ? header.slice(7).trimStart() : "";
  if (!TOKEN68.test(given)) {
    return {
      ok: false,
      status: 400,
      error: "malformed Authorization header: expected Bearer <token>",
      challenge: `${CHALLENGE}, error="invalid_request"`,
    };
  }
  if (!timingSafeEqual(given, token)) {
    return { ok: false, status: 401, error: "invalid bearer token", challenge: `${CHALLENGE}, error="invalid_token"` };
  }
  return { ok: true };
}

/**
 * What is wrong with a configured bearer token (`name` is its option), or
 * `undefined`: a Bearer header carries only RFC 6750 characters, so any
 * other token could never match.
 *
 * @example
 * ```ts
 * import { bearerTokenIssue } from "./bearer.ts";
 * bearerTokenIssue("drainToken", "not a token!"); // "drainToken must be a bearer token of …"
 * ```
 */
export function bearerTokenIssue(name: string, token: unknown): string | undefined {
  if (typeof token === "string" && TOKEN68.test(token)) return undefined;
  return `${name} must be a bearer token of [A-Za-z0-9._~+/-] characters, optionally ending in "=" ` +
    `(RFC 6750), got ${typeof token === "string" ? `a string of ${token.length} characters` : typeof token}`;
}
