/**
 * Option checking shared by every entry point that takes an options object
 * (serve, startWorker, slices, NatsStore, the coordinator config): unknown
 * keys are refused with the nearest valid name, so a typo such as `leaseMS`
 * fails at start instead of being dropped silently.
 *
 * @module
 */
import { SplitleaseError } from "../errors.ts";

/**
 * Levenshtein distance between `a` and `b` (insertions, deletions and
 * substitutions each cost 1).
 *
 * @example
 * ```ts
 * import { editDistance } from "./options.ts";
 * editDistance("leaseMS", "leaseMs"); // 1
 * ```
 */
export function editDistance(a: string, b: string): number {
  if (a === b) return 0;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length];
}

/**
 * The valid name closest to `name`, or `undefined` when none is close enough
 * to be a plausible typo. A name that differs only in case always matches;
 * otherwise the distance may be at most a third of the name's length (and at
 * least 2 edits are always allowed).
 *
 * @example
 * ```ts
 * import { nearestName } from "./options.ts";
 * nearestName("leaseMS", ["leaseMs", "opTimeoutMs"]); // "leaseMs"
 * nearestName("colour", ["leaseMs"]); // undefined
 * ```
 */
export function nearestName(name: string, known: readonly string[]): string | undefined {
  const lower = name.toLowerCase();
  const sameCase = known.find((k) => k.toLowerCase() === lower);
  if (sameCase) return sameCase;
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const k of known) {
    const d = editDistance(lower, k.toLowerCase());
    if (d < bestDistance) {
      best = k;
      bestDistance = d;
    }
  }
  return bestDistance <= Math.max(2, Math.floor(name.length / 3)) ? best : undefined;
}

/**
 * "unknown option leaseMS; did you mean leaseMs?" for every key in
 * `unknown`, joined with "; ".
 *
 * @example
 * ```ts
 * import { unknownKeysMessage } from "./options.ts";
 * unknownKeysMessage(["leaseMS"], ["leaseMs"]); // "unknown option leaseMS; did you mean leaseMs?"
 * ```
 */
export function unknownKeysMessage(unknown: readonly string[], known: readonly string[]): string {
  return unknown.map((k) => {
    const near = nearestName(k, known);
    return `unknown option ${k}` + (near ? `; did you mean ${near}?` : "");
  }).join("; ");
}

/**
 * Throws `INVALID_CONFIG` when `input` has a key that is not in `known`,
 * naming each unknown key and the nearest valid name. `where` names the
 * entry point (e.g. `serve`).
 *
 * @example
 * ```ts
 * import { rejectUnknownKeys } from "./options.ts";
 * rejectUnknownKeys({ leaseMs: 1 }, ["leaseMs"], "serve"); // fine
 * rejectUnknownKeys({ leaseMS: 1 }, ["leaseMs"], "serve");
 * // throws: serve: unknown option leaseMS; did you mean leaseMs?
 * ```
 */
export function rejectUnknownKeys(input: object, known: readonly string[], where: string): void {
  const set = new Set(known);
  const unknown = Object.keys(input).filter((k) => !set.has(k));
  if (unknown.length > 0) {
    throw new SplitleaseError("INVALID_CONFIG", `${where}: ${unknownKeysMessage(unknown, known)}`);
  }
}

/**
 * The keys of an options interface as a checked list: the compiler refuses
 * a missing or an extra key, so the list cannot drift from the interface.
 *
 * @example
 * ```ts
 * import { keysOf } from "./options.ts";
 * interface O { a?: number; b: string }
 * const known = keysOf<O>({ a: true, b: true }); // ["a", "b"]
 * ```
 */
export function keysOf<T>(all: { [K in keyof Required<T>]: true }): readonly string[] {
  return Object.freeze(Object.keys(all));
}
