/**
 * Key layout of a job's bucket, and validation of keys and ids.
 *
 * @module
 */
import { InvalidKeyError } from "../errors.ts";

const TOKEN = /^[A-Za-z0-9_=-]+$/;
const ID = /^[A-Za-z0-9_-]{1,128}$/;
/**
 * Longest key a store accepts (NATS subjects stay well below limits).
 *
 * @example
 * ```ts
 * import { MAX_KEY_LENGTH } from "@splitlease/splitlease/store";
 * console.log(MAX_KEY_LENGTH); // 512
 * ```
 */
export const MAX_KEY_LENGTH = 512;

/**
 * Throws `InvalidKeyError` unless `key` is dot-separated tokens of
 * `[A-Za-z0-9_=-]`, at most {@linkcode MAX_KEY_LENGTH} characters.
 *
 * @example
 * ```ts
 * import { assertValidKey } from "@splitlease/splitlease/store";
 * assertValidKey("split.abc"); // ok
 * ```
 */
export function assertValidKey(key: string): void {
  if (typeof key !== "string" || key.length === 0) {
    throw new InvalidKeyError(String(key), "a key must be a non-empty string");
  }
  if (key.length > MAX_KEY_LENGTH) {
    throw new InvalidKeyError(key, `longer than ${MAX_KEY_LENGTH} characters`);
  }
  for (const token of key.split(".")) {
    if (!TOKEN.test(token)) {
      throw new InvalidKeyError(
        key,
        "a key is dot-separated non-empty tokens of letters, digits, '_', '=' and '-'",
      );
    }
  }
}

/**
 * Throws `InvalidKeyError` unless `filter` is `""`, a valid key, or a valid
 * key followed by `"."` (a prefix).
 *
 * @example
 * ```ts
 * import { assertValidFilter } from "@splitlease/splitlease/store";
 * assertValidFilter("split."); // ok
 * ```
 */
export function assertValidFilter(filter: string): void {
  if (filter === "") return;
  assertValidKey(filter.endsWith(".") ? filter.slice(0, -1) : filter);
}

/**
 * Whether `key` is selected by `filter` (see `KeyFilter`).
 *
 * @example
 * ```ts
 * import { matchesFilter } from "@splitlease/splitlease/store";
 * matchesFilter("split.", "split.a"); // true
 * ```
 */
export function matchesFilter(filter: string, key: string): boolean {
  if (filter === "") return true;
  if (filter.endsWith(".")) return key.startsWith(filter);
  return key === filter;
}

/**
 * Whether `id` is a valid split or instance id: 1–128 characters of
 * `[A-Za-z0-9_-]`.
 *
 * @example
 * ```ts
 * import { isValidId } from "@splitlease/splitlease/store";
 * isValidId("part-0001"); // true
 * ```
 */
export function isValidId(id: unknown): id is string {
  return typeof id === "string" && ID.test(id);
}

/**
 * Throws `InvalidKeyError` unless `id` is a valid split or instance id.
 *
 * @example
 * ```ts
 * import { assertValidId } from "@splitlease/splitlease/store";
 * assertValidId("part-0001", "split id");
 * ```
 */
export function assertValidId(id: unknown, what = "id"): asserts id is string {
  if (!isValidId(id)) {
    throw new InvalidKeyError(
      String(id),
      `a ${what} must be 1-128 characters of letters, digits, '_' and '-'`,
    );
  }
}

/**
 * The key layout of a job's bucket.
 *
 * @example
 * ```ts
 * import { keys, type KeyLayout } from "@splitlease/splitlease/admin";
 * const layout: KeyLayout = keys;
 * console.log(layout.member("w1")); // member.w1
 * ```
 */
export interface KeyLayout {
  /** The job record (fingerprint). */
  readonly job: "job";
  /** The plan record (term, finality, planned count, cursor). */
  readonly plan: "plan";
  /** The leader lease. */
  readonly leader: "leader";
  /** Prefix of member records. */
  readonly memberPrefix: "member.";
  /** Prefix of spec records. */
  readonly specPrefix: "spec.";
  /** Prefix of split records. */
  readonly splitPrefix: "split.";
  /** Prefix of assignment records (one per member, written by the leader). */
  readonly assignPrefix: "assign.";
  /** Prefix of progress records (one per split that committed progress; no leader watches them). */
  readonly progPrefix: "prog.";
  /** Prefix of the plan's pages (its splits before they are dealt). */
  readonly pagePrefix: "page.";
  /** Key of the member record of `instance`. */
  member(instance: string): string;
  /** Key of the progress record of `splitId`. */
  prog(splitId: string): string;
  /** Key of page `n` of the plan (0-based). */
  page(n: number): string;
  /** Key of the immutable spec of `splitId`. */
  spec(splitId: string): string;
  /** Key of the mutable state record of `splitId`. */
  split(splitId: string): string;
  /** Key of the assignment record of `instance` (written by the leader, watched by that member only). */
  assign(instance: string): string;
}

/**
 * Builders for every key of a job's bucket (docs/DESIGN.md, "Keys").
 *
 * @example
 * ```ts
 * import { keys } from "@splitlease/splitlease/admin";
 * keys.split("a"); // "split.a"
 * ```
 */
export const keys: KeyLayout = {
  /** The job record (fingerprint). */
  job: "job",
  /** The plan record (term, finality, planned count, cursor). */
  plan: "plan",
  /** The leader lease. */
  leader: "leader",
  /** Prefix of member records. */
  memberPrefix: "member.",
  /** Prefix of spec records. */
  specPrefix: "spec.",
  /** Prefix of split records. */
  splitPrefix: "split.",
  /** Prefix of assignment records (one per member, written by the leader). */
  assignPrefix: "assign.",
  /** Prefix of progress records (one per split that committed progress; no leader watches them). */
  progPrefix: "prog.",
  /** Prefix of the plan's pages (its splits before they are dealt). */
  pagePrefix: "page.",
  /** Key of the member record of `instance`. */
  member(instance: string): string {
    return "member." + instance;
  },
  /** Key of the progress record of `splitId` (its tenancies' commits; fenced by its own epoch). */
  prog(splitId: string): string {
    return "prog." + splitId;
  },
  /** Key of page `n` of the plan (zero-padded: a listing gives the pages in order). */
  page(n: number): string {
    return "page." + String(n).padStart(8, "0");
  },
  /** Key of the immutable spec of `splitId`. */
  spec(splitId: string): string {
    return "spec." + splitId;
  },
  /** Key of the mutable state record of `splitId`. */
  split(splitId: string): string {
    return "split." + splitId;
  },
  /** Key of the assignment record of `instance` (written by the leader, watched by that member only). */
  assign(instance: string): string {
    return "assign." + instance;
  },
};

/**
 * Derives a deterministic split id from parts (object keys, ETags, ranges):
 * SHA-256 over the length-prefixed parts, base64url, cut to `length`
 * characters (default 32). Equal parts give equal ids on every runtime, so a
 * replan or a new leader re-creates the same ids.
 *
 * @example
 * ```ts
 * import { splitIdFrom } from "@splitlease/splitlease";
 * const id = await splitIdFrom(["bucket/prefix/a.ndjson", "etag-1"]);
 * console.log(id.length); // 32
 * ```
 */
export async function splitIdFrom(
  parts: readonly (string | number)[],
  length = 32,
): Promise<string> {
  if (!Number.isInteger(length) || length < 8 || length > 43) {
    throw new RangeError(`Split id length must be an integer in 8..43, got ${length}`);
  }
  const text = parts.map((p) => {
    const s = String(p);
    return `${s.length}:${s}`;
  }).join("|");
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)),
  );
  let bin = "";
  for (const b of digest) bin += String.fromCharCode(b);
  return btoa(bin).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "").slice(0, length);
}
