/**
 * Reading and writing records as the store's JSON text: every read is
 * validated, and a value that is not JSON or does not match is an
 * `InvalidRecordError` naming the key.
 *
 * @module
 */
import type { z } from "zod";
import { InvalidRecordError } from "../errors.ts";
import { keys } from "../store/keys.ts";
import { RECORD_LAYOUT } from "./layout.ts";
import { JobRecordSchema, LeaderRecordSchema, PlanRecordSchema } from "./job.ts";
import { MemberRecordSchema } from "./member.ts";
import { SpecRecordSchema } from "./spec.ts";
import { SplitRecordSchema } from "./split.ts";
import { AssignRecordSchema } from "./assign.ts";
import { ProgRecordSchema } from "./prog.ts";
import { PageRecordSchema } from "./page.ts";
import { FAST_CHECKS, isObj } from "./fast_checks.ts";

/**
 * Parses and validates the value stored at `key` with `schema`.
 *
 * @throws {InvalidRecordError} naming the key when the value is not JSON or
 * does not match.
 *
 * @example
 * ```ts
 * import { decodeRecord, PlanRecordSchema } from "../records.ts";
 * const plan = decodeRecord("plan", '{"v":2,"term":1,"finality":"open","generation":0,"planned":0}', PlanRecordSchema);
 * console.log(plan.term); // 1
 * ```
 */
export function decodeRecord<T>(key: string, value: string, schema: z.ZodType<T>): T {
  let json: unknown;
  try {
    json = JSON.parse(value);
  } catch (e) {
    throw new InvalidRecordError(key, `value is not JSON (${(e as Error).message})`, [], { cause: e });
  }
  const fast = FAST_CHECKS.get(schema);
  if (fast?.(json)) return json as T;
  const tag = schema === (JobRecordSchema as z.ZodType) ? RECORD_LAYOUT : 2;
  if (isObj(json) && json.v !== tag && typeof json.v === "number") {
    throw new InvalidRecordError(
      key,
      `record layout ${json.v} is not layout ${tag} (written by another splitlease version)`,
      [],
    );
  }
  const r = schema.safeParse(json);
  if (!r.success) {
    throw new InvalidRecordError(
      key,
      "value does not match its schema",
      r.error.issues.map((i) => ({ path: i.path, message: i.message })),
    );
  }
  return r.data;
}

/**
 * Result-value variant of {@linkcode decodeRecord}.
 *
 * @example
 * ```ts
 * import { safeDecodeRecord, JobRecordSchema } from "../records.ts";
 * const r = safeDecodeRecord("job", "nope", JobRecordSchema);
 * console.log(r.ok); // false
 * ```
 */
export function safeDecodeRecord<T>(
  key: string,
  value: string,
  schema: z.ZodType<T>,
): { ok: true; value: T } | { ok: false; error: InvalidRecordError } {
  try {
    return { ok: true, value: decodeRecord(key, value, schema) };
  } catch (e) {
    if (e instanceof InvalidRecordError) return { ok: false, error: e };
    throw e;
  }
}

/**
 * Serializes a record as JSON text for the store.
 *
 * @example
 * ```ts
 * import { encodeRecord } from "../records.ts";
 * encodeRecord({ v: 3, fingerprint: "f", createdAt: 0 }); // '{"v":3,...}'
 * ```
 */
export function encodeRecord(record: object): string {
  return JSON.stringify(record);
}

/**
 * The schema that governs `key`, or `undefined` for a key outside the layout.
 *
 * @example
 * ```ts
 * import { schemaForKey, SplitRecordSchema } from "../records.ts";
 * schemaForKey("split.a") === SplitRecordSchema; // true
 * ```
 */
export function schemaForKey(key: string): z.ZodType | undefined {
  if (key === keys.job) return JobRecordSchema;
  if (key === keys.plan) return PlanRecordSchema;
  if (key === keys.leader) return LeaderRecordSchema;
  if (key.startsWith(keys.memberPrefix)) return MemberRecordSchema;
  if (key.startsWith(keys.specPrefix)) return SpecRecordSchema;
  if (key.startsWith(keys.splitPrefix)) return SplitRecordSchema;
  if (key.startsWith(keys.assignPrefix)) return AssignRecordSchema;
  if (key.startsWith(keys.progPrefix)) return ProgRecordSchema;
  if (key.startsWith(keys.pagePrefix)) return PageRecordSchema;
  return undefined;
}
