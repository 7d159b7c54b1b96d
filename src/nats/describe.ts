/**
 * How a NATS client error reads in our messages.
 *
 * @module
 */

/**
 * A short description of a client error for error messages: its name and
 * message, and its cause's message when it has one.
 *
 * @example
 * ```ts
 * import { describe } from "./describe.ts";
 * describe(new Error("timeout", { cause: new Error("no responders") })); // "Error: timeout: no responders"
 * ```
 */
export function describe(e: unknown): string {
  if (e instanceof Error) {
    const cause = e.cause instanceof Error ? `: ${e.cause.message}` : "";
    return `${e.name}: ${e.message}${cause}`;
  }
  return String(e);
}
