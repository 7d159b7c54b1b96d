/**
 * Server URLs in messages: credentials hidden, the host and port alone.
 *
 * @module
 */

/**
 * `url` with any credentials (up to the last "@" of the authority) replaced by `***`, for messages.
 *
 * @example
 * ```ts
 * import { redactUrl } from "./urls.ts";
 * redactUrl("ws://worker:secret@nats:8080"); // "ws://***@nats:8080"
 * ```
 */
export function redactUrl(url: string): string {
  return url.replace(/^([a-z]+:\/\/)[^/\s]*@/i, "$1***@");
}

/**
 * `host:port` of a server URL (scheme, credentials and path dropped).
 *
 * @example
 * ```ts
 * import { hostOf } from "./urls.ts";
 * hostOf("nats://worker:secret@127.0.0.1:4222/"); // "127.0.0.1:4222"
 * ```
 */
export function hostOf(url: string): string {
  return url.replace(/^[a-z][a-z0-9+.-]*:\/\//i, "").replace(/^[^/\s]*@/, "").replace(/\/.*$/, "");
}
