/**
 * The first frames of an error's stack, bounded: what logs, split records,
 * the fleet page and the CLI keep of a failure beside its message.
 *
 * @module
 */

/**
 * Most stack lines kept (frames after the `Name: message` header).
 *
 * @example
 * ```ts
 * import { STACK_LINES } from "./stack.ts";
 * console.log(STACK_LINES); // 10
 * ```
 */
export const STACK_LINES = 10;

/**
 * Most stack characters kept (the frames joined by newlines).
 *
 * @example
 * ```ts
 * import { STACK_CHARS } from "./stack.ts";
 * console.log(STACK_CHARS); // 1000
 * ```
 */
export const STACK_CHARS = 1000;

/**
 * The frames of `error`'s stack (its `Name: message` header left out: the
 * message is kept beside it), one per line and trimmed, at most `lines`
 * of them and `chars` characters (a cut line ends with `…`); `undefined`
 * for a value that is not an error or an error without frames.
 *
 * @example
 * ```ts
 * import { stackOf } from "./stack.ts";
 * const frames = stackOf(new Error("boom"));
 * console.log(frames?.split("\n")[0]); // at <where the error was made>
 * ```
 */
export function stackOf(error: unknown, lines: number = STACK_LINES, chars: number = STACK_CHARS): string | undefined {
  if (!(error instanceof Error) || typeof error.stack !== "string") return undefined;
  const text = error.stack;
  // V8 (Deno, Node) and JavaScriptCore (Bun) start with the header, which may span lines.
  const header = error.message ? `${error.name}: ${error.message}` : error.name;
  return boundStack(text.startsWith(header) ? text.slice(header.length) : text.slice(text.indexOf("\n") + 1 || text.length), lines, chars);
}

/**
 * `stack`'s non-blank lines, trimmed, at most `lines` of them and `chars`
 * characters (a cut line ends with `…`); `undefined` when none is left.
 *
 * @example
 * ```ts
 * import { boundStack } from "./stack.ts";
 * boundStack("at a (x.ts:1:1)\n  at b (x.ts:2:1)\nat c (x.ts:3:1)", 2); // "at a (x.ts:1:1)\nat b (x.ts:2:1)"
 * ```
 */
export function boundStack(stack: string, lines: number = STACK_LINES, chars: number = STACK_CHARS): string | undefined {
  const frames: string[] = [];
  let size = 0;
  for (const raw of stack.split("\n")) {
    const line = raw.trim();
    if (!line) continue;
    if (frames.length === lines) break;
    const sep = frames.length ? 1 : 0;
    const room = chars - size - sep;
    if (room <= 0) break;
    frames.push(line.length > room ? line.slice(0, room - 1) + "…" : line);
    size += sep + Math.min(line.length, room);
  }
  return frames.length ? frames.join("\n") : undefined;
}
