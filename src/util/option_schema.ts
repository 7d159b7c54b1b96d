/**
 * Building blocks of the options schemas of `serve`, `startWorker` and the
 * slices: each options object is one strict zod object, composed with
 * `extend`, that declares every key once with its check and its default;
 * {@linkcode parseOptions} validates it at the entry point and reports the
 * first broken rule the way every entry point does (`serve: unknown option
 * leaseMS; did you mean leaseMs?`).
 *
 * @module
 */
import * as z from "zod";
import { SplitleaseError } from "../errors.ts";
import { unknownKeysMessage } from "./options.ts";
import { durationIssue } from "./timers.ts";

/** Stands for the option's name in an issue's message ({@linkcode parseOptions} fills it in). */
const KEY = "{key}";

/**
 * A duration in ms, from `min` to the longest timer delay.
 *
 * @example
 * ```ts
 * import { durationOption } from "./option_schema.ts";
 * const abortGraceMs = durationOption().default(5000);
 * ```
 */
export function durationOption(min = 0): z.ZodType<number> {
  return z.custom<number>((v) => durationIssue(KEY, v, min) === undefined, { error: (iss) => durationIssue(KEY, iss.input, min) });
}

/**
 * One of a few strings (`"exit" | "idle"`).
 *
 * @example
 * ```ts
 * import { choiceOption } from "./option_schema.ts";
 * const afterCompletion = choiceOption(["exit", "idle"]).optional();
 * ```
 */
export function choiceOption<const T extends readonly [string, ...string[]]>(values: T): z.ZodType<T[number]> {
  return z.custom<T[number]>((v) => values.includes(v as string), {
    error: (iss) => `${KEY} must be ${values.map((v) => JSON.stringify(v)).join(" or ")}, got ${JSON.stringify(iss.input)}`,
  });
}

/**
 * A value the schema takes as given (a store, a source, a function): its
 * type is the interface's, and nothing checks it here.
 *
 * @example
 * ```ts
 * import { givenOption } from "./option_schema.ts";
 * const logger = givenOption<(msg: string) => void>().optional();
 * ```
 */
export function givenOption<T>(): z.ZodType<T> {
  return z.custom<T>();
}

/**
 * Validates `input` against an options schema once, at the entry point
 * named `where`, and returns it with the defaults filled in.
 *
 * @throws {SplitleaseError} `INVALID_CONFIG`: every unknown key with the
 * nearest valid name, else the first broken rule in the schema's key order.
 *
 * @example
 * ```ts
 * import * as z from "zod";
 * import { durationOption, parseOptions } from "./option_schema.ts";
 * const schema = z.strictObject({ abortGraceMs: durationOption().default(5000) });
 * parseOptions(schema, {}, "startWorker").abortGraceMs; // 5000
 * ```
 */
export function parseOptions<T extends z.ZodObject>(schema: T, input: unknown, where: string): z.output<T> {
  if (!input || typeof input !== "object") throw new SplitleaseError("INVALID_CONFIG", `${where} needs an options object`);
  const r = schema.safeParse(input);
  if (r.success) return r.data;
  const unknown = r.error.issues.find((i) => i.code === "unrecognized_keys");
  if (unknown) throw new SplitleaseError("INVALID_CONFIG", `${where}: ${unknownKeysMessage(unknown.keys, Object.keys(schema.shape))}`);
  const first = r.error.issues[0];
  throw new SplitleaseError("INVALID_CONFIG", `${where}: ${first.message.replaceAll(KEY, String(first.path[0]))}`);
}

/** `A` and `B` are the same type (for compile-time checks that an interface is its schema's). */
export type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
